package ctl_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestListenControlAbstract opens a control socket on an abstract name
// ("@name", documented for control.socket): it serves a request, a second
// listener on the same name gets ErrSocketInUse, no file of that name
// appears or is removed in the working directory, and the name is free
// again once the first listener is closed.
func TestListenControlAbstract(t *testing.T) {
	name := fmt.Sprintf("@opavnic-test-%d-%s", os.Getpid(), t.Name())
	// A file named like the abstract socket in the working directory must
	// be left alone (it is not the socket).
	t.Chdir(t.TempDir())
	if err := os.WriteFile(name, []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ctl.Listen(name, nil)
	if err != nil {
		t.Fatalf("ListenControl(%q): %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	var cmds []string
	if err := ctl.Call(name, ctl.CmdCommands, nil, &cmds); err != nil || len(cmds) == 0 {
		t.Fatalf("commands over %s: %v %v", name, cmds, err)
	}
	if _, err := ctl.Listen(name, nil); !errors.Is(err, ctl.ErrSocketInUse) {
		t.Fatalf("second ListenControl(%q): %v, want ErrSocketInUse", name, err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "not a socket" {
		t.Fatalf("the file %q in the working directory was touched: %q %v", name, b, err)
	}
	s.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	s2, err := ctl.Listen(name, nil)
	if err != nil {
		t.Fatalf("ListenControl(%q) after Close: %v", name, err)
	}
	s2.Close()
}
