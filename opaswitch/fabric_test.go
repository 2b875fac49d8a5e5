package opaswitch_test

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/opaswitch"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// ep is switch sw's port p's cable end on the in-memory network.
func ep(sw, p int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 8, byte(sw), 1}), uint16(4000+p))
}

// runSwitch makes a switch from cables (port -> peer endpoint) on n, all
// ports Active, with routes (DLID -> port) and groups (MLID -> ports), and
// runs it until the test ends.
func runSwitch(t *testing.T, n *hfitest.Network, id int, cables map[int]netip.AddrPort, routes map[uint32]uint8, groups map[uint32][]int) *opaswitch.Switch {
	t.Helper()
	var cs []opaswitch.Cable
	for p, peer := range cables {
		cs = append(cs, opaswitch.Cable{Port: p, Transport: n.Listen(ep(id, p)), Peer: peer})
	}
	sw, err := opaswitch.New(opaswitch.Config{Name: "sw", NumPorts: 8, Cables: cs})
	if err != nil {
		t.Fatal(err)
	}
	for p := range cables {
		sw.Port(p).SetState(opaswitch.StateActive)
	}
	var top uint32
	for dlid, port := range routes {
		blocks, err := sw.Tables.LFTBlocks(int(dlid/opaswitch.LFTBlock), 1)
		if err != nil {
			t.Fatal(err)
		}
		blocks[0][dlid%opaswitch.LFTBlock] = port
		if err := sw.Tables.SetLFTBlocks(int(dlid/opaswitch.LFTBlock), blocks); err != nil {
			t.Fatal(err)
		}
		top = max(top, dlid)
	}
	if err := sw.Tables.SetLinearFDBTop(top); err != nil {
		t.Fatal(err)
	}
	for mlid, ports := range groups {
		i := mlid - opaswitch.MulticastBase
		blk, _ := sw.Tables.MFTBlock(int(i / opaswitch.MFTBlock))
		for _, p := range ports {
			blk[i%opaswitch.MFTBlock].Set(p)
		}
		var words [opaswitch.MFTBlock]uint64
		for j := range words {
			words[j] = blk[j][0]
		}
		if err := sw.Tables.SetMFTBlock(int(i/opaswitch.MFTBlock), 0, words); err != nil {
			t.Fatal(err)
		}
	}
	runUntilCleanup(t, sw)
	return sw
}

// runUntilCleanup runs sw's data plane until the test ends; it must then
// stop at once and cleanly, and the SMA finish what it has.
func runUntilCleanup(t *testing.T, sw *opaswitch.Switch) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5 s of its context's end")
		}
		sw.WaitSMA()
	})
}

// TestVNICAcrossThreeSwitches: two engines' HFIs, each cabled to a leaf,
// the leaves joined through a spine; VNIC frames cross the three switches
// hop by hop both ways, unicast and broadcast, and each HFI takes packets
// only from its own cable.
func TestVNICAcrossThreeSwitches(t *testing.T) {
	n := hfitest.NewNetwork()
	a := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	b := enginetest.NewNode(t, n, enginetest.LIDB, enginetest.EPB)
	const leaf1, spine, leaf2 = 1, 2, 3
	a.HFI.SetUplink(ep(leaf1, 1))
	b.HFI.SetUplink(ep(leaf2, 1))
	la, lb := uint32(enginetest.LIDA), uint32(enginetest.LIDB)
	group := map[uint32][]int{enginetest.Mcast: {1, 2}}
	sws := []*opaswitch.Switch{
		runSwitch(t, n, leaf1, map[int]netip.AddrPort{1: enginetest.EPA, 2: ep(spine, 1)}, map[uint32]uint8{la: 1, lb: 2}, group),
		runSwitch(t, n, spine, map[int]netip.AddrPort{1: ep(leaf1, 2), 2: ep(leaf2, 2)}, map[uint32]uint8{la: 1, lb: 2}, group),
		runSwitch(t, n, leaf2, map[int]netip.AddrPort{1: enginetest.EPB, 2: ep(spine, 2)}, map[uint32]uint8{la: 2, lb: 1}, group),
	}
	for _, nd := range []*enginetest.Node{a, b} {
		if err := nd.Engine.SetPort(0, enginetest.PortConfig(nd.HFI.LID(), 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	macA, macB := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
	for i := range 10 {
		f := enginetest.EthFrame(macB, macA, 100+i)
		if _, err := a.Host[0].Write([][]byte{f}, 0); err != nil {
			t.Fatal(err)
		}
		if got := enginetest.ReadFrame(t, b.Host[0]); !bytes.Equal(got, f) {
			t.Fatalf("a -> b frame %d: got %d bytes", i, len(got))
		}
		back := enginetest.EthFrame(macA, macB, 200+i)
		if _, err := b.Host[0].Write([][]byte{back}, 0); err != nil {
			t.Fatal(err)
		}
		if got := enginetest.ReadFrame(t, a.Host[0]); !bytes.Equal(got, back) {
			t.Fatalf("b -> a frame %d: got %d bytes", i, len(got))
		}
	}
	bcast := enginetest.EthFrame([6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, macA, 80)
	if _, err := a.Host[0].Write([][]byte{bcast}, 0); err != nil {
		t.Fatal(err)
	}
	if got := enginetest.ReadFrame(t, b.Host[0]); !bytes.Equal(got, bcast) {
		t.Fatalf("broadcast: b got %d bytes", len(got))
	}
	for i, sw := range sws {
		if x := sw.Port(2).Counters.XmitPkts.Load() + sw.Port(1).Counters.XmitPkts.Load(); x < 20 {
			t.Errorf("switch %d sent %d packets, want every one of the 21", i+1, x)
		}
	}
	// A packet to b from anywhere but its cable is not taken.
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: la, DLID: lb, PKey: 0xFFFF}, make([]byte, 256))
	if err != nil {
		t.Fatal(err)
	}
	before := b.HFI.Counters.RcvBadSource.Load()
	if !b.Tr.Inject(enginetest.EPA, pkt) {
		t.Fatal("inject refused")
	}
	for deadline := time.Now().Add(2 * time.Second); b.HFI.Counters.RcvBadSource.Load() == before; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("a packet from a's endpoint, not b's cable, was not counted rcv_bad_source")
		}
	}
}
