package vnicd

import (
	"net/netip"
	"testing"
)

// TestAddrWatchLookups: the kernel's answers addrWatch relies on, on
// loopback (no root, no traffic).
func TestAddrWatchLookups(t *testing.T) {
	src, err := routeSource(netip.MustParseAddrPort("127.0.0.1:4793"))
	if err != nil || src != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("source toward 127.0.0.1: %v, %v", src, err)
	}
	if !hostHasAddr(src) {
		t.Error("127.0.0.1 is not the host's")
	}
	if !hostHasAddr(netip.MustParseAddr("::ffff:127.0.0.1")) {
		t.Error("::ffff:127.0.0.1 (127.0.0.1 as a dual-stack socket names it) is not the host's")
	}
	if a := netip.MustParseAddr("192.0.2.77"); hostHasAddr(a) { // TEST-NET-1
		t.Errorf("%v is the host's", a)
	}
}
