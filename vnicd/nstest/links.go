//go:build linux

package nstest

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/opavnic/opavnic/vnicd/internal/nlutil"
)

// Veth joins a and b with a veth pair and returns the names of its ends in
// a and in b. Each end gets its address (a zero Prefix: none; IPv6 without
// DAD) and mtu (0: the kernel's 1500) and is set up. The pair is made inside
// a with its peer inside b, so it never appears in the test's own namespace;
// it is deleted on cleanup, and would go with the namespaces anyway.
func Veth(t testing.TB, a, b *NS, addrA, addrB netip.Prefix, mtu int) (nameA, nameB string) {
	t.Helper()
	nameA, nameB = LinkName("v"), LinkName("v")
	if err := addVeth(a, nameA, b, nameB, mtu); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { delLink(t, a, nameA) })
	if err := upWithAddr(a, nameA, addrA); err != nil {
		t.Fatal(err)
	}
	if err := upWithAddr(b, nameB, addrB); err != nil {
		t.Fatal(err)
	}
	return nameA, nameB
}

// Member is one namespace on a Bridge segment and its address there (a zero
// Prefix: none).
type Member struct {
	NS   *NS
	Addr netip.Prefix
}

// Segment is an L2 segment made by Bridge.
type Segment struct {
	// NS is the bridge's own namespace; Bridge the bridge's name in it.
	NS     *NS
	Bridge string
	// Ifaces are the members' interfaces on the segment, in their order.
	Ifaces []string
}

// Bridge puts members on one L2 segment: a bridge (no STP, no multicast
// snooping, so it forwards at once and floods IPv6 ND) in a namespace of
// its own, with a veth to each member. Every link has mtu (0: 1500); the
// members' ends get their addresses and are up. All of it goes on cleanup.
func Bridge(t testing.TB, mtu int, members ...Member) *Segment {
	t.Helper()
	seg := &Segment{NS: NewNS(t, fmt.Sprintf("lan%d", linkSeq.Add(1))), Bridge: LinkName("b")}
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = seg.Bridge, mtu
	snooping := false
	br := &netlink.Bridge{LinkAttrs: attrs, MulticastSnooping: &snooping}
	h := seg.NS.Netlink()
	if err := h.LinkAdd(br); err != nil {
		t.Fatalf("nstest: bridge %s in %s: %v", seg.Bridge, seg.NS.name, err)
	}
	if err := h.LinkSetUp(br); err != nil {
		t.Fatalf("nstest: bridge %s up: %v", seg.Bridge, err)
	}
	for _, m := range members {
		port, iface := LinkName("p"), LinkName("l")
		if err := addVeth(seg.NS, port, m.NS, iface, mtu); err != nil {
			t.Fatal(err)
		}
		l, err := h.LinkByName(port)
		if err == nil {
			err = h.LinkSetMaster(l, br)
		}
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if err != nil {
			t.Fatalf("nstest: bridge port %s: %v", port, err)
		}
		if err := upWithAddr(m.NS, iface, m.Addr); err != nil {
			t.Fatal(err)
		}
		seg.Ifaces = append(seg.Ifaces, iface)
	}
	return seg
}

// addVeth makes the veth pair nameA in a, nameB in b, through a's netlink
// socket, so the pair is born in the namespaces it belongs to.
func addVeth(a *NS, nameA string, b *NS, nameB string, mtu int) error {
	bfd, err := netns.GetFromPath(b.Path())
	if err != nil {
		return fmt.Errorf("nstest: veth: %w", err)
	}
	defer bfd.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = nameA, mtu
	v := &netlink.Veth{
		LinkAttrs:     attrs,
		PeerName:      nameB,
		PeerNamespace: netlink.NsFd(bfd),
		PeerTxQLen:    -1,
		PeerMTU:       uint32(max(mtu, 0)),
	}
	if err := a.Netlink().LinkAdd(v); err != nil {
		return fmt.Errorf("nstest: veth %s (%s) - %s (%s): %w", nameA, a.name, nameB, b.name, err)
	}
	return nil
}

// upWithAddr sets the named link in ns up and gives it addr unless addr is
// the zero Prefix.
func upWithAddr(ns *NS, name string, addr netip.Prefix) error {
	h := ns.Netlink()
	l, err := h.LinkByName(name)
	if err == nil && addr.IsValid() {
		err = h.AddrAdd(l, nlutil.Addr(addr))
	}
	if err == nil {
		err = h.LinkSetUp(l)
	}
	if err != nil {
		return fmt.Errorf("nstest: %s in %s: up with %v: %w", name, ns.name, addr, err)
	}
	return nil
}

// delLink deletes the named link in ns if it is still there.
func delLink(t testing.TB, ns *NS, name string) {
	h := ns.Netlink()
	l, err := h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return
	}
	if err == nil {
		err = h.LinkDel(l)
	}
	if err != nil {
		t.Errorf("nstest: cleanup: delete %s in %s: %v", name, ns.name, err)
	}
}

// WaitLinkGone waits, up to within, until ns has no link named name, and
// fails t if it has one then, saying why it should be gone.
func WaitLinkGone(t testing.TB, ns *NS, name string, within time.Duration, why string) {
	t.Helper()
	h := ns.Netlink()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		_, err := h.LinkByName(name)
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("link %s still there %v on: %s", name, within, why)
		}
	}
}

// NewTAPNS is NewNS for tests that open TAPs: it skips without root or
// /dev/net/tun.
func NewTAPNS(t testing.TB, suffix string) *NS {
	t.Helper()
	RequireRoot(t)
	RequirePaths(t, "/dev/net/tun")
	return NewNS(t, suffix)
}

// LinkMTU is the MTU of the link name in ns; the test fails if there is none.
func LinkMTU(t testing.TB, ns *NS, name string) int {
	t.Helper()
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().MTU
}
