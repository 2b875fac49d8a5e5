package nlutil

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// netnsFDs counts the process's open fds that are namespace handles.
func netnsFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "net:[") {
			n++
		}
	}
	return n
}

// TestDoClosesBeforeReturn: when Do returns, the handle of the namespace
// its thread came from is closed. It was closed by a defer that ran after
// the result was sent, so a caller that counted its fds at once (vnicd's
// TestTAPWatch, after Close) could find it still open. Do enters the
// caller's own namespace here, which needs no privilege.
func TestDoClosesBeforeReturn(t *testing.T) {
	runtime.LockOSThread()
	self, err := netns.Get()
	runtime.UnlockOSThread()
	if err != nil {
		t.Skipf("no handle of this namespace: %v", err)
	}
	defer self.Close()
	if err := Do(self, func() error { return nil }); err != nil {
		t.Skipf("cannot enter this namespace: %v", err)
	}
	before := netnsFDs(t)
	for i := range 500 {
		if err := Do(self, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		if n := netnsFDs(t); n != before {
			t.Fatalf("after Do %d: %d namespace fds open, %d before", i, n, before)
		}
	}
}
