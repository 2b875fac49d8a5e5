package fm

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// Management packets the FM cannot decode are dropped and counted.
func TestBadMADsCounted(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	good := announceFrom(0x1234, epA)
	for _, tc := range []struct {
		name string
		mad  []byte
	}{
		{"short header", good.mad[:10]},
		{"announce cut short", good.mad[:vema.MADHeaderLen+4]},
		{"unknown class", func() []byte {
			b := append([]byte(nil), good.mad...)
			b[1] = 0x77
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.BadMADs.Load()
			f.mu.Lock()
			f.handle(&inbound{mad: tc.mad, slid: encap.LID16BPermissive, src: epA})
			f.mu.Unlock()
			if f.BadMADs.Load() != before+1 {
				t.Errorf("BadMADs %d -> %d, want one more", before, f.BadMADs.Load())
			}
		})
	}
	if len(f.nodes) != 0 {
		t.Errorf("a bad MAD made %d nodes", len(f.nodes))
	}
}

// An answer is matched to its request by TID, class and attribute, as the
// kernel's MAD layer matches TID and class: one of another class or
// attribute (a node's garbled or forged answer) is counted and does not
// end the request, whose real answer is still taken.
func TestResponseOfAnotherClassNotTaken(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	a := announceFrom(0xA, epA)
	f.handle(&a) // the join's NodeInfo Get is now pending
	if len(f.pending) != 1 {
		t.Fatalf("%d requests pending after the announce, want 1", len(f.pending))
	}
	var tid uint64
	var req []byte
	for k, r := range f.pending {
		mp, err := encap.ParseMgmt(r.pkt)
		if err != nil {
			t.Fatal(err)
		}
		tid, req = k, append([]byte(nil), mp.MAD...)
	}
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"class", func(b []byte) { b[1] = byte(vema.ClassSubnLIDRouted) }},
		{"attribute", func(b []byte) { b[16], b[17] = 0, byte(vema.SMPAttrNodeDescription) }},
	} {
		resp := append([]byte(nil), req...)
		resp[3] = byte(vema.MethodGetResp)
		tc.edit(resp)
		before := f.BadMADs.Load()
		f.handle(&inbound{mad: resp, slid: encap.LID16BPermissive, src: epA})
		if _, still := f.pending[tid]; !still || f.BadMADs.Load() != before+1 {
			t.Errorf("%s: pending %v, BadMADs %d -> %d; want the request still pending and one more bad MAD",
				tc.name, still, before, f.BadMADs.Load())
		}
	}
	resp := append([]byte(nil), req...)
	resp[3] = byte(vema.MethodGetResp)
	f.handle(&inbound{mad: resp, slid: encap.LID16BPermissive, src: epA})
	if _, still := f.pending[tid]; still {
		t.Error("the request's own answer was not taken")
	}
}

// A VEMA trap whose SLID is no active node's is dropped and counted, as
// any MAD the FM does not take, and makes no node or member state.
func TestVEMATrapFromUnknownLIDCounted(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	var tr vema.TrapMAD
	tr.VendorHeader = vema.VendorHeader{MADHeader: vema.MADHeader{BaseVersion: 0x80, MgmtClass: vema.ClassVEMA,
		ClassVersion: 0x80, Method: vema.MethodTrap, TID: 1, AttrID: vema.AttrNotice}, OUI: vema.IntelOUI}
	tr.Notice.GenType = vema.VEMANoticeGenType
	tr.Notice.OUI = vema.IntelOUI
	tr.Notice.IssuerLID = 0x10
	tr.Notice.Trap = vema.VESWPortTrap{VESWID: 1, Opcode: vema.TrapIfaceUcastMACChange}
	mad, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for range 3 {
		f.handle(&inbound{mad: mad, slid: 0x10, srcQPN: 1, src: epA})
	}
	if got := f.BadMADs.Load(); got != 3 {
		t.Errorf("BadMADs = %d after three traps from an unknown LID, want 3", got)
	}
	if len(f.nodes) != 0 || len(f.members) != 0 || len(f.pending) != 0 {
		t.Errorf("traps from an unknown LID made %d nodes, %d members, %d requests", len(f.nodes), len(f.members), len(f.pending))
	}
}
