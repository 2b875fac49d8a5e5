package hfi_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// TestPeerTraffic checks the per-LID counts of both ends: what A sends
// (unicast and a multicast copy to each member) is counted under each
// receiver's LID at A and under A's LID at the receivers, with the receive
// time; a packet that fails the source check counts for nobody; counts stay
// across directory and LID changes and go with a LID that leaves the
// directory.
func TestPeerTraffic(t *testing.T) {
	hs, recs := threeHFIs(t)
	traffic := func(at, lid uint32) *hfi.PeerTraffic {
		t.Helper()
		pt, ok := hs[at].PeerTraffic(lid)
		if !ok {
			t.Fatalf("no traffic entry for %#x at %#x", lid, at)
		}
		return pt
	}
	before := time.Now()
	toMcast := vnicPacket(t, lidA, mcast, 0x8001, 1)
	toC := vnicPacket(t, lidA, lidC, 0x8001, 1)
	toB := vnicPacket(t, lidA, lidB, 0x8001, 1)
	hs[lidA].NewSender().Send([][]byte{toMcast, toC, toC, toB})
	waitFor(t, "B and C to receive", func() bool { return recs[lidB].count() == 2 && recs[lidC].count() == 3 })

	check := func(what string, got, want uint64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", what, got, want)
		}
	}
	l := uint64(len(toC)) // all four are the same length
	check("A's TxPkts to B", traffic(lidA, lidB).TxPkts.Load(), 2)
	check("A's TxBytes to B", traffic(lidA, lidB).TxBytes.Load(), 2*l)
	check("A's TxPkts to C", traffic(lidA, lidC).TxPkts.Load(), 3)
	check("A's TxBytes to C", traffic(lidA, lidC).TxBytes.Load(), 3*l)
	check("A's TxPkts to A", traffic(lidA, lidA).TxPkts.Load(), 0)
	check("B's RxPkts from A", traffic(lidB, lidA).RxPkts.Load(), 2)
	check("C's RxPkts from A", traffic(lidC, lidA).RxPkts.Load(), 3)
	check("C's RxBytes from A", traffic(lidC, lidA).RxBytes.Load(), 3*l)
	check("C's RxPkts from B", traffic(lidC, lidB).RxPkts.Load(), 0)
	if at, ok := traffic(lidC, lidA).LastRx(); !ok || at.Before(before) || at.After(time.Now()) {
		t.Errorf("C's LastRx from A = %v, %v; want between %v and now", at, ok, before)
	}
	if _, ok := traffic(lidA, lidC).LastRx(); ok {
		t.Error("A has a LastRx from C, which sent nothing")
	}

	// A's SLID from B's endpoint: dropped (rcv_bad_source), counted for
	// neither.
	if !hs[lidC].Transport().(*hfitest.Transport).Inject(epB, toC) {
		t.Fatal("inject failed")
	}
	waitFor(t, "the bad-source drop", func() bool { return hs[lidC].Counters.RcvBadSource.Load() == 1 })
	check("C's RxPkts from A after a forged one", traffic(lidC, lidA).RxPkts.Load(), 3)
	check("C's RxPkts from B after a forged one", traffic(lidC, lidB).RxPkts.Load(), 0)

	// SendTo counts for the LID whose endpoint it sends to, not for one
	// whose packet goes elsewhere.
	s := hs[lidA].NewSender()
	s.SendTo(toC, epC)
	s.SendTo(toB, epC)
	waitFor(t, "C to receive both", func() bool {
		return recs[lidC].count() == 4 && hs[lidC].Counters.RcvBadDLID.Load() == 1 // B's packet: not C's DLID
	})
	check("A's TxPkts to C after SendTo", traffic(lidA, lidC).TxPkts.Load(), 4)
	check("A's TxPkts to B after SendTo", traffic(lidA, lidB).TxPkts.Load(), 2)

	// A new directory with the same LIDs, and a LID change of the port
	// itself, keep the counts.
	hs[lidC].SetDirectory(directory(t))
	hs[lidC].SetLID(lidC)
	check("C's RxPkts from A after SetDirectory", traffic(lidC, lidA).RxPkts.Load(), 4)
	// A LID that leaves the directory loses its counts; back, it starts
	// from zero.
	d, err := hfi.NewDirectory(map[uint32]netip.AddrPort{lidB: epB, lidC: epC}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs[lidC].SetDirectory(d)
	if _, ok := hs[lidC].PeerTraffic(lidA); ok {
		t.Error("C keeps traffic for A, which left its directory")
	}
	hs[lidC].SetDirectory(directory(t))
	check("C's RxPkts from A, back in the directory", traffic(lidC, lidA).RxPkts.Load(), 0)
	if _, ok := hs[lidC].PeerTraffic(0x99); ok {
		t.Error("traffic for a LID that was never in the directory")
	}
}
