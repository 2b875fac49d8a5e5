package fm

import (
	"testing"

	"github.com/opavnic/opavnic/vema"
)

// trapMADOf is the VEMA trap a node at lid sends for a multicast MAC
// change on vesw 1, vport 0 (opcode 2: the FM looks the sender up and
// logs it, and has nothing more to do).
func trapMADOf(tb testing.TB, lid uint32) []byte {
	tb.Helper()
	var tr vema.TrapMAD
	tr.VendorHeader = vema.VendorHeader{MADHeader: vema.MADHeader{BaseVersion: 0x80, MgmtClass: vema.ClassVEMA,
		ClassVersion: 0x80, Method: vema.MethodTrap, TID: 1, AttrID: vema.AttrNotice}, OUI: vema.IntelOUI}
	tr.Notice.GenType = vema.VEMANoticeGenType
	tr.Notice.OUI = vema.IntelOUI
	tr.Notice.Trap = vema.VESWPortTrap{VESWID: 1, Opcode: 2}
	mad, err := tr.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return mad
}

// TestLimitTrapLookup: with the node table full, a trap finds its sender
// by LID and endpoint, also after a node left (dropNode) and another came
// (putNode), and one from a LID no active node has is dropped.
func TestLimitTrapLookup(t *testing.T) {
	f := fullFM(t, MaxNodes, true)
	var last *node
	for _, n := range f.nodes {
		last = n
	}
	f.handle(&inbound{mad: trapMADOf(t, last.lid), slid: last.lid, srcQPN: 1, src: last.ep})
	if got := f.BadMADs.Load(); got != 0 {
		t.Fatalf("a trap from node %s (LID %#x) counted as bad (%d)", last.name, last.lid, got)
	}
	f.dropNode(last)
	f.handle(&inbound{mad: trapMADOf(t, last.lid), slid: last.lid, srcQPN: 1, src: last.ep})
	if got := f.BadMADs.Load(); got != 1 {
		t.Fatalf("a trap from the LID of a node no longer in the table: BadMADs %d, want 1", got)
	}
	back := &node{portGUID: 0xBACC, name: "back", cfgName: "back", lid: last.lid, ep: last.ep, state: NodeActive}
	f.putNode(back)
	f.handle(&inbound{mad: trapMADOf(t, last.lid), slid: last.lid, srcQPN: 1, src: last.ep})
	if got := f.BadMADs.Load(); got != 1 {
		t.Fatalf("a trap from a node put at that LID: BadMADs %d, want 1", got)
	}
}

// BenchmarkTrapAtMaxNodes is one VEMA trap's handling with the node table
// full: it looked the sender up by walking every node.
func BenchmarkTrapAtMaxNodes(b *testing.B) {
	f := fullFM(b, MaxNodes, true)
	var n *node
	for _, o := range f.nodes {
		n = o
	}
	mad := trapMADOf(b, n.lid)
	b.ReportAllocs()
	for b.Loop() {
		f.handle(&inbound{mad: mad, slid: n.lid, srcQPN: 1, src: n.ep})
	}
	if f.BadMADs.Load() != 0 {
		b.Fatal("traps counted as bad")
	}
}
