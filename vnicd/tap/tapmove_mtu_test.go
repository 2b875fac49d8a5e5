//go:build linux

package tap_test

import (
	"testing"

	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// TestAttachTAPKeepsLowerMTU: taking a persistent TAP over (a vnicd restart)
// lowers its MTU to the port's eth_mtu if it is above, but never raises it:
// the kernel never raises a VNIC's MTU (docs/linux-compat.md §6), and a
// container's lower MTU belongs to whoever uses the netdev there, as its
// addresses and administrative state do.
func TestAttachTAPKeepsLowerMTU(t *testing.T) {
	ns := nstest.NewTAPNS(t, "attachmtu")
	name := nstest.LinkName("a")
	const tag = "opavnic:test:attachmtu"
	tp, err := tap.Open(tap.Config{Name: name, MAC: tapMAC, MTU: 1500, NetNS: ns.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tp.Close()
		if err := tap.RemovePersistent(ns.Name(), name, func(a string) bool { return a == tag }); err != nil {
			t.Error(err)
		}
	})
	if err := tp.SetPersist(true, tag); err != nil {
		t.Fatal(err)
	}
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink().LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mtu, want int
	}{{1500, 1400}, {1300, 1300}} {
		at, err := tap.Attach(tap.Config{Name: name, MAC: tapMAC, MTU: c.mtu, NetNS: ns.Name()}, tag)
		if err != nil {
			t.Fatal(err)
		}
		got := nstest.LinkMTU(t, ns, name)
		if err := at.Close(); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("AttachTAP with eth_mtu %d: netdev MTU %d, want %d", c.mtu, got, c.want)
		}
	}
}
