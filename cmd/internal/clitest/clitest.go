// Package clitest runs the daemons' binaries in their tests: write a
// file, run the binary, and check its exit code and what it printed.
package clitest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes text to name in dir and returns its path.
func WriteFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Expect runs bin with args and fails t unless it exits with code and its
// output (stdout and stderr) holds every string of want.
func Expect(t testing.TB, bin string, args []string, code int, want ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if got != code {
		t.Errorf("%s: exit code %d, want %d; output:\n%s", filepath.Base(bin), got, code, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("%s: output does not hold %q:\n%s", filepath.Base(bin), w, out)
		}
	}
}
