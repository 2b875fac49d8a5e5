package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/cmd/internal/clitest"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startPlainVnicd starts vnicd with a config of no VNICs (no root needed) whose
// control socket is sock; the process is killed at the end of the test if
// it still runs.
func startPlainVnicd(t *testing.T, sock string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	bin := vnicdBinary(t)
	cfg := clitest.WriteFile(t, filepath.Dir(sock), "c.yaml",
		fmt.Sprintf("node: {name: sig, lid: 0x10, listen: \"127.0.0.1:%d\"}\ncontrol: {socket: %s}\n", freeUDPPort(t), sock))
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill() //nolint:errcheck
			cmd.Wait()         //nolint:errcheck
		}
	})
	return cmd, out
}

// waitExit waits for vnicd to exit and checks that it stopped cleanly:
// exit code 0, "vnicd stopped", its control socket removed.
func waitExit(t *testing.T, cmd *exec.Cmd, out *lockedBuffer, sock string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill() //nolint:errcheck
		<-done
		t.Fatalf("vnicd did not exit; output:\n%s", out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("vnicd exited with %v, want 0 (clean stop); output:\n%s", ee.ProcessState, out)
	} else if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "vnicd stopped") {
		t.Errorf("no \"vnicd stopped\" in the output:\n%s", out)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("the control socket was left behind")
	}
}

// SIGHUP does not stop a vnicd without --fabric-manager (it has no config
// reload): it is logged and vnicd goes on serving; SIGTERM then stops it
// cleanly.
func TestSIGHUPIgnored(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	cmd, out := startPlainVnicd(t, sock)
	up := false
	for end := time.Now().Add(20 * time.Second); !up && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		up = ctl.Call(sock, ctl.CmdCommands, nil, nil) == nil
	}
	if !up {
		t.Fatalf("vnicd did not start; output:\n%s", out)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	logged := false
	for end := time.Now().Add(5 * time.Second); !logged && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		logged = strings.Contains(out.String(), "vnicd has no config reload")
	}
	if !logged {
		t.Fatalf("SIGHUP was not logged; output:\n%s", out)
	}
	if err := ctl.Call(sock, ctl.CmdCommands, nil, nil); err != nil {
		t.Fatalf("vnicd does not answer after SIGHUP: %v; output:\n%s", err, out)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, out, sock)
}

// A SIGTERM while NewDaemon runs stops vnicd cleanly once it has started.
// The runtime-VNIC state file is made a FIFO, so that NewDaemon waits in
// its read until the test, having sent SIGTERM, closes the FIFO's writing
// end (an empty file is logged and starting goes on with no runtime VNICs).
func TestSIGTERMWhileStarting(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	fifo := vnicd.RuntimePath(sock)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, out := startPlainVnicd(t, sock)
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until vnicd opens it to read
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	var w *os.File
	select {
	case w = <-opened:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill() //nolint:errcheck
		<-opened
		t.Fatalf("vnicd did not read its runtime state file; output:\n%s", out)
	}
	if w == nil {
		t.FailNow()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // for the signal to be taken
	w.Close()
	waitExit(t, cmd, out, sock)
	if !strings.Contains(out.String(), "a signal came while vnicd was starting") {
		t.Errorf("the stop did not come from the signal during start-up; output:\n%s", out)
	}
}
