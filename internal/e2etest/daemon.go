package e2etest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// UpWithin bounds how long Start waits for a daemon to answer.
const UpWithin = 10 * time.Second

// StopWithin bounds how long Stop waits for a signalled daemon to exit.
const StopWithin = 20 * time.Second

// Daemon is a vnicd a test runs: its config, its control socket and its
// current process.
type Daemon struct {
	Host   Host   // the config it runs with (Socket filled in)
	Config string // the config file's path
	Socket string // the control socket
	Cmd    *exec.Cmd

	ns   *nstest.NS
	args []string
	log  string // where a daemon outside a namespace writes its output
}

// Launch writes h's config into a directory of its own and starts vnicd
// with it and args, in ns; with ns nil, in the test's own namespace (for a
// daemon with no VNICs, which needs no root). It does not wait for the
// daemon to answer.
func Launch(t testing.TB, ns *nstest.NS, h Host, args ...string) *Daemon {
	t.Helper()
	dir := t.TempDir()
	if h.Socket == "" {
		h.Socket = filepath.Join(dir, "vnicd.sock")
	}
	d := &Daemon{Host: h, Config: filepath.Join(dir, h.Name+".yaml"), Socket: h.Socket, ns: ns,
		log: filepath.Join(dir, h.Name+".log")}
	if err := os.WriteFile(d.Config, []byte(h.YAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	d.args = append([]string{"--config", d.Config}, args...)
	d.Restart(t)
	return d
}

// Start is Launch, then WaitUp for h's VNICs; it fails t when the daemon
// does not answer with them within UpWithin.
func Start(t testing.TB, ns *nstest.NS, h Host, args ...string) *Daemon {
	t.Helper()
	d := Launch(t, ns, h, args...)
	if err := d.WaitUp(len(h.VNICs), UpWithin); err != nil {
		t.Fatalf("vnicd %s did not come up: %v\nconfig:\n%s\noutput:\n%s", h.Name, err, h.YAML(), d.Output())
	}
	return d
}

// Restart starts the daemon's process again, with the same config and
// arguments; the last one must have exited (Stop). It does not wait for the
// daemon to answer.
func (d *Daemon) Restart(t testing.TB) {
	t.Helper()
	bin := Bin(t, "vnicd")
	if d.ns != nil {
		cmd, err := d.ns.Start(context.Background(), bin, d.args...)
		if err != nil {
			t.Fatal(err)
		}
		d.Cmd = cmd
		return
	}
	out, err := os.OpenFile(d.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, d.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.Cmd = cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// Stop sends sig to the daemon and returns Wait's error.
func (d *Daemon) Stop(t testing.TB, sig os.Signal) error {
	t.Helper()
	if err := d.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return d.Wait(t)
}

// Wait waits for the daemon's process to exit, at most StopWithin (else it
// kills it and fails t), and returns its exit error (nil: exit code 0).
func (d *Daemon) Wait(t testing.TB) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.Cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(StopWithin):
		_ = d.Cmd.Process.Kill()
		<-done
		t.Fatalf("vnicd %s still running %v on; output:\n%s", d.Host.Name, StopWithin, d.Output())
		return nil
	}
}

// Output is what the daemon's processes wrote to stdout and stderr: the
// current one's for a daemon in a namespace, every one's otherwise.
func (d *Daemon) Output() string {
	if d.ns == nil {
		b, _ := os.ReadFile(d.log)
		return string(b)
	}
	if s, ok := d.Cmd.Stdout.(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

// WaitUp waits, at most within, until the daemon's control socket answers
// with vnics ports; it gives up early if the process exits.
func (d *Daemon) WaitUp(vnics int, within time.Duration) error {
	return waitfor.Check(within, func() error {
		var v []ctl.VNICStatus
		err := ctl.Call(d.Socket, ctl.CmdVNICs, nil, &v)
		if err == nil && len(v) == vnics {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d VNICs, want %d", len(v), vnics)
		}
		if d.Exited() {
			return waitfor.Abort(fmt.Errorf("vnicd exited (last answer: %v)", err))
		}
		return err
	})
}

// Exited reports whether the daemon's process has exited (a zombie, not yet
// waited for, or waited for), without reaping it.
func (d *Daemon) Exited() bool {
	if d.Cmd.ProcessState != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.Cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// Alive fails t when the daemon's process is gone.
func (d *Daemon) Alive(t testing.TB) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.Signal(0)); err != nil || d.Exited() {
		t.Fatalf("vnicd %s is gone (%v); output:\n%s", d.Host.Name, err, d.Output())
	}
}

// Call sends a control command to the daemon and decodes its answer into
// reply; it fails t on an error.
func (d *Daemon) Call(t testing.TB, command string, args, reply any) {
	t.Helper()
	if err := ctl.Call(d.Socket, command, args, reply); err != nil {
		t.Fatalf("%s: %s: %v", d.Host.Name, command, err)
	}
}

// VNICs is the daemon's `vnics` answer.
func (d *Daemon) VNICs(t testing.TB) []ctl.VNICStatus {
	t.Helper()
	var v []ctl.VNICStatus
	d.Call(t, ctl.CmdVNICs, nil, &v)
	return v
}

// WaitVNICs waits, at most within, until the daemon has want ports, each
// in oper state, and returns them.
func (d *Daemon) WaitVNICs(t testing.TB, want int, oper string, within time.Duration) []ctl.VNICStatus {
	t.Helper()
	var v []ctl.VNICStatus
	err := waitfor.Check(within, func() error {
		v = nil
		if err := ctl.Call(d.Socket, ctl.CmdVNICs, nil, &v); err != nil {
			return err
		}
		if len(v) != want {
			return waitfor.ErrNotYet
		}
		for _, s := range v {
			if s.OperState != oper {
				return waitfor.ErrNotYet
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: want %d VNICs %s: %v; have %+v", d.Host.Name, want, oper, err, v)
	}
	return v
}

// Counters returns the named counters of one vport.
func (d *Daemon) Counters(t testing.TB, vport int) map[string]uint64 {
	t.Helper()
	var sets []ctl.PortCounterSet
	d.Call(t, ctl.CmdCounters, map[string]int{"vport": vport}, &sets)
	if len(sets) == 0 {
		t.Fatalf("%s: no counters of vport %d", d.Host.Name, vport)
	}
	m := map[string]uint64{}
	for _, c := range sets[0].Counters {
		m[c.Name] = c.Value
	}
	return m
}

// HFIStatus is the daemon's `hfi` answer.
func (d *Daemon) HFIStatus(t testing.TB) ctl.HFIStatus {
	t.Helper()
	var st ctl.HFIStatus
	d.Call(t, ctl.CmdHFI, nil, &st)
	return st
}

// HFICounters returns the HFI's counters by name.
func (d *Daemon) HFICounters(t testing.TB) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, c := range d.HFIStatus(t).Counters {
		m[c.Name] = c.Value
	}
	return m
}

// Claims is the daemon's `claims` answer.
func (d *Daemon) Claims(t testing.TB) []ctl.Claim {
	t.Helper()
	var cs []ctl.Claim
	d.Call(t, ctl.CmdClaims, nil, &cs)
	return cs
}

// StartFM starts opafm with the fabric config file fabric and args in ns.
func StartFM(t testing.TB, ns *nstest.NS, fabric string, args ...string) *exec.Cmd {
	t.Helper()
	cmd, err := ns.Start(context.Background(), Bin(t, "opafm"), append([]string{"--config", fabric}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}
