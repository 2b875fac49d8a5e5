//go:build linux

package vnicd_test

import (
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// netdevMTU reads the MTU of the netdev name in ns.
func netdevMTU(t *testing.T, ns *nstest.NS, name string) int {
	t.Helper()
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().MTU
}

// TestNetdevMTUNotAboveEthMTU: the netdev's MTU never stays above the vesw's
// eth_mtu. The kernel's opa_vnic sets max_mtu = max(eth_mtu, min_mtu) on
// every config apply (kernel-reference.md §6), so `ip link set mtu` above
// eth_mtu is refused; a TAP's max_mtu is 65535, so vnicd brings a larger
// MTU back down, or the port would drop every frame longer than eth_mtu +
// 18 as a transmit error.
func TestNetdevMTUNotAboveEthMTU(t *testing.T) {
	ns := lab(t, "maxmtu")
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(tEPA), hfi.Config{LID: tLIDA})
	e := vnicd.NewEngine(h, vnicd.TAPFactory(nil), nil)
	t.Cleanup(func() { e.Close() })
	name := nstest.LinkName("m")
	pc := portConfig(tLIDA, 1, 0x8001)
	if err := e.SetPort(0, pc, vnicd.NetdevConfig{IfName: name, NetNS: ns.Name()}, nil); err != nil {
		t.Fatal(err)
	}
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the link watcher has the first state
	if err := ns.Netlink().LinkSetMTU(l, 9000); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for netdevMTU(t, ns, name) > int(pc.VESW.EthMTU) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := netdevMTU(t, ns, name); got > int(pc.VESW.EthMTU) {
		t.Errorf("netdev MTU %d stays above eth_mtu %d", got, pc.VESW.EthMTU)
	}

	// A lower MTU is the user's to keep: a later Set does not raise it.
	if err := ns.Netlink().LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := e.SetPort(0, pc, vnicd.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := netdevMTU(t, ns, name); got != 1400 {
		t.Errorf("netdev MTU %d after a Set, want the user's 1400", got)
	}
}
