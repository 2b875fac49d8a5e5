package fm

import (
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// A node sees the TIDs of the FM's requests to it. From them it must not
// be able to answer the FM's requests to other nodes: the FM takes a poll
// answer from a new endpoint as the node having moved there, so a forged
// one would point the directory's entry for another node's LID at the
// forger. TIDs are matched exactly (the answer's class and attribute too),
// so they must not be guessable from one another.
func TestTIDsNotGuessable(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	victim := &node{portGUID: 0xA, name: "host-a", cfgName: "host-a", lid: 0x10, ep: epA, state: NodeActive, answeredAt: time.Now()}
	forger := &node{portGUID: 0xB, name: "host-b", cfgName: "host-b", lid: 0xC000, ep: epB, state: NodeActive, answeredAt: time.Now()}
	f.putNode(victim)
	f.putNode(forger)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.poll() // a PortInfo Get to each
	var seen uint64
	var req []byte
	for tid, r := range f.pending {
		if r.ep == epB {
			mp, err := encap.ParseMgmt(r.pkt)
			if err != nil {
				t.Fatal(err)
			}
			seen, req = tid, mp.MAD
		}
	}
	if req == nil {
		t.Fatal("no poll to the forger")
	}
	// The forger answers every TID near its own with the victim's PortInfo.
	pi := vema.PortInfo{LID: encap.LID(victim.lid), SMLID: encap.LID(cfg.FM.LID), SubnetPrefix: cfg.FM.SubnetPrefix}
	pi.SetPortState(4)
	data, _ := pi.MarshalBinary()
	for d := uint64(1); d <= 1024; d++ {
		for _, tid := range []uint64{seen + d, seen - d} {
			var s vema.SMP
			if err := s.UnmarshalBinary(req); err != nil {
				t.Fatal(err)
			}
			s.Method, s.Status, s.TID = vema.MethodGetResp, vema.StatusDirection, tid
			s.Data = append(data, make([]byte, -len(data)&7)...)
			mad, _ := s.MarshalBinary()
			f.handle(&inbound{mad: mad, slid: forger.lid, src: epB})
		}
	}
	if victim.ep != epA {
		t.Errorf("forged poll answers moved the victim to %v (TID %#x seen by the forger)", victim.ep, seen)
	}
}
