// Package leakcheck fails a test binary that leaves goroutines of this
// module running after its tests: an engine, HFI, agent or fabric manager
// that a test stopped must have stopped all of its goroutines.
//
// Use it from a package's TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// module is the import path prefix whose goroutines must not outlive the tests.
const module = "github.com/opavnic/opavnic/"

// Grace is how long Main waits for goroutines to finish after the tests.
var Grace = 5 * time.Second

// Main runs the tests and then fails the binary (exit 1) if goroutines running
// this module's code are still there after Grace.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := Wait(Grace); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) of %s still running after the tests:\n\n%s\n",
				len(leaked), strings.TrimSuffix(module, "/"), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Wait polls until no goroutine other than the caller's runs this module's
// code, or until d has passed; it returns the stacks of those left.
func Wait(d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		leaked := Leaked()
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Leaked returns the stacks of the goroutines, other than the caller's, that
// have a frame of this module's non-test code.
func Leaked() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 { // the caller
			continue
		}
		if ours(string(g)) {
			out = append(out, string(g))
		}
	}
	return out
}

// ours reports whether a goroutine's stack has a frame of this module's code
// that is not in a _test.go file (a test's own helper goroutine is the test's
// business). "created by" lines are not frames.
func ours(stack string) bool {
	lines := strings.Split(stack, "\n")
	for i := 1; i+1 < len(lines); i++ {
		fn, file := lines[i], strings.TrimSpace(lines[i+1])
		if strings.HasPrefix(fn, "\t") || strings.HasPrefix(fn, "created by ") {
			continue
		}
		if !strings.HasPrefix(fn, module) {
			continue
		}
		if path, _, _ := strings.Cut(file, ":"); !strings.HasSuffix(path, "_test.go") {
			return true
		}
	}
	return false
}
