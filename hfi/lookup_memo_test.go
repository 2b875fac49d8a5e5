package hfi_test

import (
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// TestReceiveSourceRuns checks the source check where receiveBatch reuses
// its last directory lookup: runs of one SLID broken by other SLIDs, by an
// unknown one and by the right SLID from the wrong endpoint, and a
// directory swapped between two batches, which the second must use.
func TestReceiveSourceRuns(t *testing.T) {
	h := hfi.New(hfitest.NewNetwork().Listen(epB), hfi.Config{LID: lidB, VerifyICRC: true})
	h.SetDirectory(directory(t))
	rec := &recorder{}
	h.Register(encap.L4Ethernet, rec)
	fromA := vnicPacket(t, lidA, lidB, 0x8001, 1)
	fromC := vnicPacket(t, lidC, lidB, 0x8001, 1)
	unknown := vnicPacket(t, 0x77, lidB, 0x8001, 1)
	m := func(pkt []byte, ep netip.AddrPort) hfi.Message { return hfi.Message{Buf: pkt, N: len(pkt), Addr: ep} }
	check := func(step string, pkts, bad uint64) {
		t.Helper()
		if got := h.Counters.RcvPkts.Load(); got != pkts {
			t.Errorf("%s: RcvPkts = %d, want %d", step, got, pkts)
		}
		if got := h.Counters.RcvBadSource.Load(); got != bad {
			t.Errorf("%s: RcvBadSource = %d, want %d", step, got, bad)
		}
	}
	h.ReceiveBatch([]hfi.Message{
		m(fromA, epA), m(fromA, epA), m(fromA, epC), m(fromA, epA), m(unknown, epA), m(unknown, epA),
		m(fromC, epC), m(fromC, epA), m(fromA, epA),
	})
	check("first batch", 5, 4)
	d, err := hfi.NewDirectory(map[uint32]netip.AddrPort{lidA: epC, lidB: epB, lidC: epA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.SetDirectory(d)
	h.ReceiveBatch([]hfi.Message{m(fromA, epA), m(fromA, epC), m(fromC, epA), m(fromC, epC)})
	check("after the swap", 7, 6)
}

// TestSendRouteRuns checks Send where it reuses its last directory lookup:
// runs of one DLID broken by an unknown DLID, the port's own LID and another
// peer, and a directory swapped between two calls, which the second must
// use.
func TestSendRouteRuns(t *testing.T) {
	hs, recs := threeHFIs(t)
	s := hs[lidA].NewSender()
	toB, toC := vnicPacket(t, lidA, lidB, 0x8001, 1), vnicPacket(t, lidA, lidC, 0x8001, 1)
	toNone, toSelf := vnicPacket(t, lidA, 0x99, 0x8001, 1), vnicPacket(t, lidA, lidA, 0x8001, 1)
	s.Send([][]byte{toB, toB, toNone, toNone, toB, toC, toSelf, toC, toB})
	waitFor(t, "B and C to receive", func() bool { return recs[lidB].count() == 4 && recs[lidC].count() == 2 })
	c := &hs[lidA].Counters
	if c.XmitPkts.Load() != 6 || c.XmitNoRoute.Load() != 3 {
		t.Fatalf("XmitPkts %d XmitNoRoute %d, want 6 and 3", c.XmitPkts.Load(), c.XmitNoRoute.Load())
	}
	d, err := hfi.NewDirectory(map[uint32]netip.AddrPort{lidA: epA, lidC: epC}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs[lidA].SetDirectory(d)
	s.Send([][]byte{toB, toC})
	waitFor(t, "C to receive", func() bool { return recs[lidC].count() == 3 })
	if c.XmitPkts.Load() != 7 || c.XmitNoRoute.Load() != 4 {
		t.Fatalf("after the swap: XmitPkts %d XmitNoRoute %d, want 7 and 4", c.XmitPkts.Load(), c.XmitNoRoute.Load())
	}
	if got := recs[lidB].count(); got != 4 {
		t.Fatalf("B received %d packets, want 4 (none after it left the directory)", got)
	}
}

type nopReceiver struct{}

func (nopReceiver) Receive([]byte, encap.Header16B, netip.AddrPort) {}
func (nopReceiver) Flush()                                          {}

// BenchmarkReceiveBatch runs the receive checks on a batch of 64 packets
// from one peer, with the ICRC check off so that the rest shows: parse,
// source (directory lookup), DLID, counters and the hand-off. The
// directory has 64 peers, past the maps' small-map scan.
func BenchmarkReceiveBatch(b *testing.B) {
	h := hfi.New(hfitest.NewNetwork().Listen(epB), hfi.Config{LID: lidB})
	eps := map[uint32]netip.AddrPort{lidA: epA, lidB: epB, lidC: epC}
	for i := range 61 {
		eps[uint32(0x100+i)] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 4793)
	}
	d, err := hfi.NewDirectory(eps, nil)
	if err != nil {
		b.Fatal(err)
	}
	h.SetDirectory(d)
	h.Register(encap.L4Ethernet, nopReceiver{})
	buf := make([]byte, 200)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, 64, &encap.VNICParams{SLID: lidA, DLID: lidB, PKey: 0x8001, VESWID: 1})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]hfi.Message, 64)
	for i := range msgs {
		msgs[i] = hfi.Message{Buf: pkt, N: len(pkt), Addr: epA}
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ReceiveBatch(msgs)
	}
}
