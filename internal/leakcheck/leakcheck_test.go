package leakcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/waitfor"
)

func TestOurs(t *testing.T) {
	for _, tc := range []struct {
		stack string
		want  bool
	}{
		{"goroutine 7 [chan receive]:\ngithub.com/opavnic/opavnic/vnicd.(*Engine).run(0xc0001)\n\t/src/vnicd/engine.go:120 +0x45\ncreated by github.com/opavnic/opavnic/vnicd.Start in goroutine 6\n\t/src/vnicd/engine.go:80 +0x99", true},
		{"goroutine 8 [sleep]:\ntime.Sleep(0x1)\n\t/go/src/runtime/time.go:1 +0x1\ngithub.com/opavnic/opavnic/vnicd.helper()\n\t/src/vnicd/engine_test.go:12 +0x1\ncreated by github.com/opavnic/opavnic/vnicd.(*Engine).Start in goroutine 6\n\t/src/vnicd/engine.go:80 +0x99", false},
		{"goroutine 9 [IO wait]:\ninternal/poll.runtime_pollWait()\n\t/go/src/runtime/netpoll.go:1 +0x1\ncreated by net/http.(*Server).Serve in goroutine 1\n\t/go/src/net/http/server.go:1 +0x1", false},
	} {
		if got := ours(tc.stack); got != tc.want {
			t.Errorf("ours(%q) = %v, want %v", tc.stack, got, tc.want)
		}
	}
}

// TestLeakedSeesAGoroutine: a goroutine blocked in this module's non-test
// code is reported until it returns.
func TestLeakedSeesAGoroutine(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { block(stop); close(done) }()
	var l []string
	waitfor.Poll(5*time.Second, func() bool { l = Leaked(); return len(l) != 0 })
	if len(l) != 1 || !strings.Contains(l[0], "leakcheck.block") {
		t.Fatalf("Leaked while a goroutine blocks in block(): %q, want that one", l)
	}
	close(stop)
	<-done
	if l := Wait(5 * time.Second); len(l) != 0 {
		t.Fatalf("after it returned: %q", l)
	}
}
