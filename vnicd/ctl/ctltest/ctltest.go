// Package ctltest serves a control socket for the tests of the control
// protocol's clients.
package ctltest

import (
	"path/filepath"
	"testing"

	"github.com/opavnic/opavnic/vnicd/ctl"
)

// Serve serves a control socket in a temporary directory with handlers,
// for the test's length, and returns its path.
func Serve(t testing.TB, handlers map[string]ctl.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "vnicd-test.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	for cmd, h := range handlers {
		s.Handle(cmd, h)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })
	return sock
}
