package vnicd_test

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// An SA answer is taken only from the fabric manager (docs/management.md §6), as
// Gets and Sets are: a fabric member that guesses the TID of a query in
// flight (TIDs count up from 1) and answers it from its own LID and
// endpoint is dropped and counted, and the FM's answer still reaches the
// query.
func TestSAAnswerFromAPeerIsNotTaken(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	nd := newManagedNode(t, n)
	const nodeLID, peerLID = 0x10005, 0x20
	nd.hfi.SetLID(nodeLID)
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM, nodeLID: tEPNode, peerLID: tEPPeer}, nil)
	nd.hfi.SetDirectory(dir)
	peer := n.Listen(tEPPeer)
	t.Cleanup(func() { peer.Close() })

	type result struct {
		rec vema.PathRecord
		err error
	}
	done := make(chan result, 1)
	go func() {
		rec, err := nd.mgmt.Path(context.Background(), peerLID)
		done <- result{rec, err}
	}()
	var query []byte
	for query == nil {
		if mp := fm.recv(); mp.MAD[1] == byte(vema.ClassSubnAdm) {
			query = bytes.Clone(mp.MAD)
		}
	}
	answer := func(hop uint8) []byte {
		r := bytes.Clone(query)
		r[3] = byte(vema.MethodGetResp)
		rec := vema.PathRecord{SLID: nodeLID, DLID: peerLID, HopLimit: hop, PKey: 0xFFFF, MTU: 5, Rate: 16, NumbPath: 1}
		b, _ := rec.MarshalBinary()
		copy(r[vema.SAHeaderLen:], b)
		return r
	}
	before := nd.mgmt.Untrusted.Load()
	forged, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: peerLID, DLID: nodeLID, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, answer(7))
	if _, err := peer.WriteBatch([]hfi.Message{{Buf: forged, N: len(forged), Addr: tEPNode}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for nd.mgmt.Untrusted.Load() == before && time.Now().Before(deadline) {
		select {
		case r := <-done:
			t.Fatalf("the query took the peer's answer: %v hop_limit %d", r.err, r.rec.HopLimit)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if nd.mgmt.Untrusted.Load() != before+1 {
		t.Fatal("the peer's answer was not counted in mgmt_untrusted")
	}
	fm.send(tEPNode, nodeLID, 0, 1, answer(1))
	r := <-done
	if r.err != nil || r.rec.HopLimit != 1 {
		t.Fatalf("path: %v, hop_limit %d: want the FM's answer (1)", r.err, r.rec.HopLimit)
	}
}
