package hfi

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
)

// TestUDPWriteBatchMarksRefused: WriteBatch marks exactly the datagrams the
// kernel did not take Refused, whichever way it refused them (a run of
// datagrams to port 0, EINVAL, sent with GSO and then, refused, one by
// one; an IPv6 destination on an IPv4 socket), clears the mark on the
// others, and its count is theirs; those reach the receiver.
func TestUDPWriteBatchMarksRefused(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	tx, err := ListenUDP(lo, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx, err := ListenUDP(lo, 16)
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
	msgs := make([]Message, len(dsts))
	for round := range 2 { // the second with every mark set before: WriteBatch clears them
		for i := range msgs {
			msgs[i] = Message{Buf: bufs[i], N: len(bufs[i]), Addr: dsts[i], Refused: round == 1}
		}
		n, err := tx.WriteBatch(msgs)
		if n != 3 {
			t.Errorf("round %d: WriteBatch = %d, %v; want 3 taken", round, n, err)
		}
		if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, ErrAddrFamily) {
			t.Errorf("round %d: WriteBatch error %v, want EINVAL or ErrAddrFamily", round, err)
		}
		for i := range msgs {
			if msgs[i].Refused != wantRefused[i] {
				t.Errorf("round %d: datagram %d (to %v): Refused = %v, want %v", round, i, dsts[i], msgs[i].Refused, wantRefused[i])
			}
		}
		receiveAll(t, rx, []Message{msgs[0], msgs[1], msgs[6]}, tx.LocalAddr())
	}
	// A closed transport takes nothing.
	tx.Close()
	for i := range msgs {
		msgs[i] = Message{Buf: bufs[i], N: len(bufs[i]), Addr: rx.LocalAddr()}
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
