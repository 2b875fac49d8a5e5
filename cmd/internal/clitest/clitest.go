// Package clitest runs the daemons' binaries in their tests: write a
// file, run the binary, and check its exit code and what it printed.
package clitest

import (
	"encoding/json"
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
	holds(t, bin, run(t, bin, args, code), want)
}

// ExpectJSONLines is Expect for a run with --log-format json: every line the
// binary writes must also parse as a JSON object.
func ExpectJSONLines(t testing.TB, bin string, args []string, code int, want ...string) {
	t.Helper()
	out := run(t, bin, args, code)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("%s: a line that is not JSON (%v): %q", filepath.Base(bin), err, l)
		}
	}
	holds(t, bin, out, want)
}

// run runs bin with args, fails t unless it exits with code, and returns
// its output (stdout and stderr).
func run(t testing.TB, bin string, args []string, code int) []byte {
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
	return out
}

// holds fails t unless out holds every string of want.
func holds(t testing.TB, bin string, out []byte, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("%s: output does not hold %q:\n%s", filepath.Base(bin), w, out)
		}
	}
}
