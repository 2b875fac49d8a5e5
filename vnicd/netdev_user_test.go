//go:build linux

package vnicd_test

import (
	"context"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// What an engineer does to a VNIC's netdev by hand while traffic flows
// (ip link ...): the port must keep a true state and carry traffic again.

// ipIn runs `ip args...` in ns and fails t on error.
func ipIn(t *testing.T, ns *nstest.NS, args ...string) {
	t.Helper()
	if out, err := ns.Exec(context.Background(), "ip", args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// operWithin waits up to within for port p's oper state to be want.
func operWithin(t *testing.T, p *vnicd.Port, want uint8, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for p.OperState() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.OperState(); got != want {
		t.Fatalf("vport %d oper state %d (link up %v), want %d", p.VPort(), got, p.LinkUp(), want)
	}
}

// TestBridgePortReleased: a VNIC made a bridge port and released again
// (nomaster, or its bridge deleted) is the same netdev, up: the kernel's
// RTM_DELLINK of family AF_BRIDGE that says "no longer a bridge port" is not
// the netdev's deletion, and the port keeps forwarding.
func TestBridgePortReleased(t *testing.T) {
	a, b := newLinkedPair(t, "bra", "brb", "192.168.73")
	pa := a.engine.Port(0)
	for _, release := range []string{"nomaster", "delete the bridge"} {
		br := nstest.LinkName("br")
		ipIn(t, a.ns, "link", "add", br, "type", "bridge")
		ipIn(t, a.ns, "link", "set", "vnic0", "master", br)
		if release == "nomaster" {
			ipIn(t, a.ns, "link", "set", "vnic0", "nomaster")
			ipIn(t, a.ns, "link", "del", br)
		} else {
			ipIn(t, a.ns, "link", "del", br)
		}
		time.Sleep(200 * time.Millisecond) // the watcher's events
		operWithin(t, pa, vnicd.StateForwarding, time.Second)
		b.ns.PingWithin(t, "192.168.73.1", 5*time.Second)
	}
}
