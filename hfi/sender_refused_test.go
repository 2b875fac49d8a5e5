package hfi_test

import (
	"testing"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// TestSenderCountsOnlyTaken: a packet the transport refused counts in
// XmitDiscards and not as sent, neither in the port's counters nor in its
// peer's traffic; the others count for their peers exactly.
func TestSenderCountsOnlyTaken(t *testing.T) {
	n := hfitest.NewNetwork()
	ta := n.Listen(epA)
	n.Listen(epC) // B's endpoint has no node: the network refuses what goes there
	h := hfi.New(ta, hfi.Config{LID: lidA})
	h.SetDirectory(directory(t))
	toB := vnicPacket(t, lidA, lidB, 0x8001, 1)
	toC := vnicPacket(t, lidA, lidC, 0x8001, 1)
	h.NewSender().Send([][]byte{toC, toB, toB, toC, toB})

	c := &h.Counters
	l := uint64(len(toC))
	for _, f := range []struct {
		what      string
		got, want uint64
	}{
		{"XmitPkts", c.XmitPkts.Load(), 2},
		{"XmitDiscards", c.XmitDiscards.Load(), 3},
		{"XmitNoRoute", c.XmitNoRoute.Load(), 0},
		{"XmitData (flits)", c.XmitData.Load(), 2 * l / 8},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, want %d", f.what, f.got, f.want)
		}
	}
	for _, p := range []struct {
		lid        uint32
		pkts, byts uint64
	}{{lidB, 0, 0}, {lidC, 2, 2 * l}} {
		pt, ok := h.PeerTraffic(p.lid)
		if !ok {
			t.Fatalf("no traffic entry for %#x", p.lid)
		}
		if pt.TxPkts.Load() != p.pkts || pt.TxBytes.Load() != p.byts {
			t.Errorf("sent to %#x: %d packets, %d bytes; want %d, %d", p.lid, pt.TxPkts.Load(), pt.TxBytes.Load(), p.pkts, p.byts)
		}
	}
	if got := ta.Dropped.Load(); got != 3 {
		t.Errorf("the network dropped %d, want 3", got)
	}
}
