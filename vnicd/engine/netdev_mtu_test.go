//go:build linux

package engine_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// tapPort makes an engine whose HFI (LID tLIDA, on an in-memory network,
// with a directory of tLIDA and tLIDB) runs, and gives it vport 0 with pc
// on a TAP in ns; it returns the engine, the HFI's transport (to inject
// packets from tEPB) and the netdev.
func tapPort(t *testing.T, ns *nstest.NS, pc engine.PortConfig) (*engine.Engine, *hfitest.Transport, netlink.Link) {
	t.Helper()
	tr := hfitest.NewNetwork().Listen(enginetest.EPA)
	h := hfi.New(tr, hfi.Config{LID: enginetest.LIDA, VerifyICRC: true})
	dir, err := hfi.NewDirectory(map[uint32]netip.AddrPort{enginetest.LIDA: enginetest.EPA, enginetest.LIDB: enginetest.EPB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.SetDirectory(dir)
	e := enginetest.StartEngine(t, h, engine.TAPFactory(nil))
	name := nstest.LinkName("m")
	if err := e.SetPort(0, pc, engine.NetdevConfig{IfName: name, NetNS: ns.Name()}, nil); err != nil {
		t.Fatal(err)
	}
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return e, tr, l
}

// TestNetdevMTUNotAboveEthMTU: the netdev's MTU never stays above the vesw's
// eth_mtu. The kernel's opa_vnic sets max_mtu = max(eth_mtu, min_mtu) on
// every config apply (docs/linux-compat.md §6), so `ip link set mtu` above
// eth_mtu is refused; a TAP's max_mtu is 65535, so vnicd brings a larger
// MTU back down, or the port would drop every frame longer than eth_mtu +
// 18 as a transmit error.
func TestNetdevMTUNotAboveEthMTU(t *testing.T) {
	ns := nstest.NewTAPNS(t, "maxmtu")
	pc := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	e, _, l := tapPort(t, ns, pc)
	name := l.Attrs().Name
	// The watcher lowers the MTU whether it sees 9000 as a change or as
	// the first state it reads.
	if err := ns.Netlink().LinkSetMTU(l, 9000); err != nil {
		t.Fatal(err)
	}
	waitfor.Poll(2*time.Second, func() bool { return nstest.LinkMTU(t, ns, name) <= int(pc.VESW.EthMTU) })
	if got := nstest.LinkMTU(t, ns, name); got > int(pc.VESW.EthMTU) {
		t.Errorf("netdev MTU %d stays above eth_mtu %d", got, pc.VESW.EthMTU)
	}

	// A lower MTU is the user's to keep: a later Set (which makes its
	// netdev calls before it returns) does not raise it.
	if err := ns.Netlink().LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	if err := e.SetPort(0, pc, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := nstest.LinkMTU(t, ns, name); got != 1400 {
		t.Errorf("netdev MTU %d after a Set, want the user's 1400", got)
	}
}

// TestRxOversizeAgainstNetdevMTU: a received frame longer than the
// netdev's MTU + 18 is dropped as rx_oversize, as the kernel's opa_vnic
// checked it against netdev->mtu (docs/linux-compat.md §3), so a user who
// lowers a VNIC's MTU gets no longer frames; one that fits still passes.
func TestRxOversizeAgainstNetdevMTU(t *testing.T) {
	ns := nstest.NewTAPNS(t, "rxmtu")
	pc := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	e, tr, l := tapPort(t, ns, pc)
	if err := ns.Netlink().LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	c := &e.Port(0).Counters
	send := func(size int) {
		dst, src := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
		buf := make([]byte, encap.Headroom+size+encap.Tailroom)
		copy(buf[encap.Headroom:], enginetest.EthFrame(dst, src, size))
		pkt, err := encap.EncapVNIC(buf, encap.Headroom, size, &encap.VNICParams{SLID: enginetest.LIDB, DLID: enginetest.LIDA, PKey: 0x8001, VESWID: 1})
		if err != nil {
			t.Fatal(err)
		}
		tr.Inject(enginetest.EPB, pkt)
	}
	// The watcher sees the new MTU a moment later: send until a frame one
	// byte too long is counted (at most 2 s).
	deadline := time.Now().Add(2 * time.Second)
	for c.RxOversize.Load() == 0 && time.Now().Before(deadline) {
		send(1400 + 18 + 1)
		time.Sleep(20 * time.Millisecond)
	}
	if c.RxOversize.Load() == 0 {
		t.Fatalf("a %d-byte frame on a netdev of MTU 1400 (eth_mtu %d) is not counted as rx_oversize", 1400+18+1, pc.VESW.EthMTU)
	}
	before, pkts := c.RxOversize.Load(), c.RxPackets.Load()
	send(1400 + 18)
	for c.RxPackets.Load() == pkts && time.Now().Before(deadline.Add(time.Second)) {
		time.Sleep(5 * time.Millisecond)
	}
	if c.RxPackets.Load() == pkts {
		t.Fatal("the frame that fits the MTU was not received")
	}
	if got := c.RxOversize.Load(); got != before {
		t.Errorf("a %d-byte frame on a netdev of MTU 1400: rx_oversize rose to %d", 1400+18, got)
	}
}

// TestNetdevEthMTUBelowMinimum: an eth_mtu below 68 (an EM may set one)
// makes a netdev of MTU 68, as the kernel's max_mtu = max(eth_mtu, min_mtu)
// did, instead of failing: a TAP refuses an MTU below 68.
func TestNetdevEthMTUBelowMinimum(t *testing.T) {
	ns := nstest.NewTAPNS(t, "minmtu")
	pc := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	pc.VESW.EthMTU = 40
	_, _, l := tapPort(t, ns, pc)
	if got := nstest.LinkMTU(t, ns, l.Attrs().Name); got != engine.MinEthMTU {
		t.Errorf("netdev MTU %d, want %d", got, engine.MinEthMTU)
	}
}
