package hfi_test

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// TestUDPWriteBatchMarksRefused: WriteBatch marks exactly the datagrams the
// kernel did not take Refused, whichever way it refused them (a run of
// datagrams to port 0, EINVAL, which WriteBatch first sends with GSO and
// then one by one; an IPv6 destination on an IPv4 socket), clears the mark
// on the others, and its count is theirs; those reach the receiver.
func TestUDPWriteBatchMarksRefused(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	tx, err := hfi.ListenUDP(lo, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx, err := hfi.ListenUDP(lo, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	port0 := netip.MustParseAddrPort("127.0.0.1:0")
	v6 := netip.MustParseAddrPort("[::1]:9")
	p, short := make([]byte, 96), make([]byte, 56)
	dsts := []netip.AddrPort{rx.LocalAddr(), rx.LocalAddr(), port0, port0, port0, v6, rx.LocalAddr()}
	bufs := [][]byte{p, p, p, p, p, p, short}
	wantRefused := []bool{false, false, true, true, true, true, false}
	msgs := make([]hfi.Message, len(dsts))
	for round := range 2 { // the second with every mark set before: WriteBatch clears them
		for i := range msgs {
			msgs[i] = hfi.Message{Buf: bufs[i], N: len(bufs[i]), Addr: dsts[i], Refused: round == 1}
		}
		n, err := tx.WriteBatch(msgs)
		if n != 3 {
			t.Errorf("round %d: WriteBatch = %d, %v; want 3 taken", round, n, err)
		}
		if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, hfi.ErrAddrFamily) {
			t.Errorf("round %d: WriteBatch error %v, want EINVAL or ErrAddrFamily", round, err)
		}
		for i := range msgs {
			if msgs[i].Refused != wantRefused[i] {
				t.Errorf("round %d: datagram %d (to %v): Refused = %v, want %v", round, i, dsts[i], msgs[i].Refused, wantRefused[i])
			}
		}
		got := readN(t, rx, 3)
		if len(got) != 3 || got[0] != len(p) || got[1] != len(p) || got[2] != len(short) {
			t.Errorf("round %d: the receiver got datagrams of %v bytes, want [96 96 56]", round, got)
		}
	}
	// A closed transport takes nothing.
	tx.Close()
	for i := range msgs {
		msgs[i] = hfi.Message{Buf: bufs[i], N: len(bufs[i]), Addr: rx.LocalAddr()}
	}
	if n, err := tx.WriteBatch(msgs); n != 0 || err == nil {
		t.Errorf("WriteBatch after Close = %d, %v; want 0 and an error", n, err)
	}
	for i := range msgs {
		if !msgs[i].Refused {
			t.Errorf("after Close: datagram %d not marked Refused", i)
		}
	}
}

// readN reads up to n datagrams from u within 2 s and returns their lengths.
func readN(t *testing.T, u *hfi.UDP, n int) []int {
	t.Helper()
	var lens []int
	msgs := make([]hfi.Message, 16)
	for i := range msgs {
		msgs[i].Buf = make([]byte, 2048)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(lens) < n && time.Now().Before(deadline) {
		k, err := u.TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for _, m := range msgs[:k] {
			lens = append(lens, m.N)
		}
	}
	return lens
}

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
