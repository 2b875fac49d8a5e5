//go:build linux

package engine_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/engine"
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
func operWithin(t *testing.T, p *engine.Port, want uint8, within time.Duration) {
	t.Helper()
	waitfor.Poll(within, func() bool { return p.OperState() == want })
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
		// The window in which a wrong "deleted" event would take the port
		// down; then it must be forwarding.
		time.Sleep(200 * time.Millisecond)
		operWithin(t, pa, engine.StateForwarding, time.Second)
		b.ns.PingWithin(t, "192.168.73.1", 5*time.Second)
	}
}

// TestDeletedNetdevNotSpun: a TAP deleted by hand (ip link del) reports
// EPOLLERR, which no epoll event mask hides: the poll loop must still leave
// it alone between failed reads, not spin on it (a whole CPU, and
// tx_fifo_errors rising by the hundred thousand a second), and the other
// ports go on.
func TestDeletedNetdevNotSpun(t *testing.T) {
	a, b := newLinkedPair(t, "dla", "dlb", "192.168.75")
	a.addPort(t, 1, lidA, 2, "192.168.76.1/24")
	b.addPort(t, 1, lidB, 2, "192.168.76.2/24")
	ipIn(t, a.ns, "link", "del", "vnic0")
	const run = 300 * time.Millisecond
	time.Sleep(run)
	// At most one failed read per pause (10 ms), and a few more.
	if n := a.engine.Port(0).Counters.TxFifoErrors.Load(); n > uint64(run/(10*time.Millisecond))+10 {
		t.Errorf("tx_fifo_errors %d within %v of the netdev's deletion: the loop spins on it", n, run)
	}
	b.ns.PingWithin(t, "192.168.76.1", 5*time.Second)
}

// TestNetdevMovedByHand: a VNIC moved to another namespace by hand (ip
// link set vnic0 netns X) is alive there, and its fd carries its frames as
// before: the port follows it (its link state, its place in vnicctl), is
// not taken for deleted, and forwards again once it is up there; and so
// when it is moved back.
func TestNetdevMovedByHand(t *testing.T) {
	a, b := newLinkedPair(t, "mva", "mvb", "192.168.77")
	c := nstest.NewNS(t, "mvc")
	pa := a.engine.Port(0)
	for _, to := range []*nstest.NS{c, a.ns} {
		from := a.ns
		if to == a.ns {
			from = c
		}
		ipIn(t, from, "link", "set", "vnic0", "netns", to.Name())
		ipIn(t, to, "addr", "add", "192.168.77.1/24", "dev", "vnic0")
		ipIn(t, to, "link", "set", "vnic0", "up")
		operWithin(t, pa, engine.StateForwarding, 2*time.Second)
		b.ns.PingWithin(t, "192.168.77.1", 5*time.Second)
		if to == c && pa.NetNS() != c.Name() {
			t.Errorf("vport 0 is in netns %q, want %q", pa.NetNS(), c.Name())
		}
		ipIn(t, to, "link", "set", "vnic0", "down")
		operWithin(t, pa, engine.StateDropAll, 2*time.Second)
	}
	if pa.NetNS() != a.ns.Path() && pa.NetNS() != a.ns.Name() {
		t.Errorf("vport 0 is in netns %q after moving back, want %q", pa.NetNS(), a.ns.Name())
	}
}

// TestNetdevRenamedByHand: a VNIC renamed by hand (ip link set vnic0 name
// X) is known by its new name (vnicctl vnics, logs), and forwards on.
func TestNetdevRenamedByHand(t *testing.T) {
	a, b := newLinkedPair(t, "rna", "rnb", "192.168.78")
	pa := a.engine.Port(0)
	ipIn(t, a.ns, "link", "set", "vnic0", "down")
	ipIn(t, a.ns, "link", "set", "vnic0", "name", "lan0")
	ipIn(t, a.ns, "link", "set", "lan0", "up")
	operWithin(t, pa, engine.StateForwarding, 2*time.Second)
	waitfor.Poll(time.Second, func() bool { return pa.Netdev().Name() == "lan0" })
	if got := pa.Netdev().Name(); got != "lan0" {
		t.Errorf("vport 0's netdev is %q after its rename, want lan0", got)
	}
	b.ns.PingWithin(t, "192.168.78.1", 5*time.Second)
}

// TestDeletedNetdevNotCounted: once its netdev is deleted (ip link del),
// a port's TAP has no frames to give, and reading it again and again is no
// transmit error: tx_fifo_errors stays where it is, not +100 a second for
// as long as vnicd runs.
func TestDeletedNetdevNotCounted(t *testing.T) {
	a, _ := newLinkedPair(t, "dca", "dcb", "192.168.79")
	pa := a.engine.Port(0)
	ipIn(t, a.ns, "link", "del", "vnic0")
	operWithin(t, pa, engine.StateDropAll, 2*time.Second)
	time.Sleep(100 * time.Millisecond) // a read already under way ends
	before := pa.Counters.TxFifoErrors.Load()
	time.Sleep(300 * time.Millisecond) // the window in which no more may be counted
	if after := pa.Counters.TxFifoErrors.Load(); after != before {
		t.Errorf("tx_fifo_errors went from %d to %d in 300 ms after the netdev's deletion", before, after)
	}
}

// TestNetdevNamespaceDeleted: a VNIC whose netdev is in a container's
// namespace (moved there by hand, and followed) does not keep that
// namespace alive: deleted (`ip netns del`, no process in it), the
// namespace is destroyed with the netdev and a veth peer in it, and the
// port takes its netdev for deleted (link down, out of the poll loop)
// instead of forwarding on for ever.
func TestNetdevNamespaceDeleted(t *testing.T) {
	a, _ := newLinkedPair(t, "nda", "ndb", "192.168.74")
	c := nstest.NewNS(t, "ndc") // its Netlink handle is never made: it would hold c
	pa := a.engine.Port(0)
	end, peer := nstest.LinkName("v"), nstest.LinkName("v")
	ipIn(t, a.ns, "link", "add", end, "type", "veth", "peer", "name", peer, "netns", c.Name())
	ipIn(t, a.ns, "link", "set", "vnic0", "netns", c.Name())
	ipIn(t, c, "link", "set", "vnic0", "up")
	operWithin(t, pa, engine.StateForwarding, 2*time.Second)
	waitfor.Poll(2*time.Second, func() bool { return pa.NetNS() == c.Name() })
	if pa.NetNS() != c.Name() {
		t.Fatalf("vport 0 is in netns %q, want %q", pa.NetNS(), c.Name())
	}
	if out, err := exec.Command("ip", "netns", "del", c.Name()).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	// The kernel destroys the namespace in a worker: bounded waits.
	operWithin(t, pa, engine.StateDropAll, 10*time.Second)
	nstest.WaitLinkGone(t, a.ns, end, 10*time.Second, "its peer's namespace was deleted, and is kept alive")
	if pa.LinkUp() {
		t.Error("port's link still up after its netdev's namespace went")
	}
}
