package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// startPlainVnicd starts vnicd, outside any namespace, with a config of no
// VNICs (no root needed) whose control socket is sock.
func startPlainVnicd(t *testing.T, sock string) *e2etest.Daemon {
	t.Helper()
	return e2etest.Launch(t, nil, e2etest.Host{Name: "sig", LID: 0x10, Listen: fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t)), Socket: sock})
}

// waitExit waits for d, which was sent a signal, to exit and checks that
// it stopped cleanly: exit code 0, "vnicd stopped", its control socket
// removed.
func waitExit(t *testing.T, d *e2etest.Daemon) {
	t.Helper()
	err := d.Wait(t)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("vnicd exited with %v, want 0 (clean stop); output:\n%s", ee.ProcessState, d.Output())
	} else if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Output(), "vnicd stopped") {
		t.Errorf("no \"vnicd stopped\" in the output:\n%s", d.Output())
	}
	if _, err := os.Stat(d.Socket); err == nil {
		t.Error("the control socket was left behind")
	}
}

// SIGHUP does not stop a vnicd without --fabric-manager (it has no config
// reload): it is logged and vnicd goes on serving; SIGTERM then stops it
// cleanly.
func TestSIGHUPIgnored(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	d := startPlainVnicd(t, sock)
	if !waitfor.Poll(20*time.Second, func() bool { return ctl.Call(sock, ctl.CmdCommands, nil, nil) == nil }) {
		t.Fatalf("vnicd did not start; output:\n%s", d.Output())
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Poll(5*time.Second, func() bool { return strings.Contains(d.Output(), "vnicd has no config reload") }) {
		t.Fatalf("SIGHUP was not logged; output:\n%s", d.Output())
	}
	if err := ctl.Call(sock, ctl.CmdCommands, nil, nil); err != nil {
		t.Fatalf("vnicd does not answer after SIGHUP: %v; output:\n%s", err, d.Output())
	}
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, d)
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
	d := startPlainVnicd(t, sock)
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
		d.Cmd.Process.Kill() //nolint:errcheck
		<-opened
		t.Fatalf("vnicd did not read its runtime state file; output:\n%s", d.Output())
	}
	if w == nil {
		t.FailNow()
	}
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The signal is taken (vnicd's handler has stopped its context, and
	// says so) before the FIFO lets NewDaemon go on.
	waitfor.Until(t, 5*time.Second, "vnicd to take the SIGTERM", func() bool {
		return strings.Contains(d.Output(), "signal received while starting")
	})
	w.Close()
	waitExit(t, d)
	if !strings.Contains(d.Output(), "a signal came while vnicd was starting") {
		t.Errorf("the stop did not come from the signal during start-up; output:\n%s", d.Output())
	}
}
