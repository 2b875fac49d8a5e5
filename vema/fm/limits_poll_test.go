package fm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// One steady-state poll round at MaxNodes: every node answers its poll, and
// the EM (checkMembers) finds each member as pushed and reads it back. The
// config has two vesws of 2048 members (the MAC table's bound) whose
// default ports name nodes.

// veswDefPorts is vesw (limits_test.go) with default ports 0, 1, ... naming
// the nodes n<i> of defNodes.
func veswDefPorts(id int, members [][2]int, defNodes ...int) string {
	var d strings.Builder
	d.WriteString("    default_ports:\n")
	for i, n := range defNodes {
		fmt.Fprintf(&d, "      - {index: %d, node: n%d}\n", i, n)
	}
	return strings.Replace(vesw(id, 0, members), "    members:\n", d.String()+"    members:\n", 1)
}

// pollRoundMembers is the members of pollRoundFM's vesws: vport 0 of n0 to
// n2047 in vesw 1, vport 1 of n2047 to n4094 in vesw 2.
const pollRoundMembers = 2 * 2048

// pollRoundFM is a settled FM with MaxNodes active nodes and two vesws of
// 2048 members, each with two default ports named by node, every member
// configured (its VESWPortInfo acknowledged as the EM would set it now).
func pollRoundFM(tb testing.TB) *FM {
	tb.Helper()
	second := make([][2]int, 2048)
	for i := range second {
		second[i] = [2]int{2047 + i, 1}
	}
	f := fullFM(tb, MaxNodes, true,
		veswDefPorts(1, onePerNode(2048, 0), 4000, 4094),
		veswDefPorts(2, second, 3, 1000))
	f.settled = true
	for _, n := range f.nodes {
		n.cpiDone = true // its VEMA's trap_lid is set
		for _, k := range f.memberKeys(n) {
			v, m, _ := f.member(k)
			pi := f.portInfo(v, m, n)
			f.members[k].info, _ = pi.MarshalBinary()
		}
	}
	return f
}

// pollRound is the work of a poll round's answers under f.mu (poll's
// onResp once the node's PortInfo is as set): the directory resend check
// and checkMembers for every active node.
func pollRound(f *FM) {
	for _, n := range f.nodes {
		if n.state == NodeActive {
			f.resendDirectory(n)
			f.checkMembers(n)
		}
	}
}

// resetPollRound forgets the reads pollRound sent, so that the next round
// sends them again.
func resetPollRound(f *FM) {
	for tid := range f.pending {
		f.cancel(tid)
	}
	for _, st := range f.members {
		st.reading = false
	}
}

// TestLimitPollRound: at MaxNodes, a poll round reads back every member
// once, at its node's endpoint, and pushes nothing.
func TestLimitPollRound(t *testing.T) {
	f := pollRoundFM(t)
	pollRound(f)
	if len(f.pending) != pollRoundMembers || f.RequestsDropped.Load() != 0 {
		t.Fatalf("%d requests pending, %d dropped; want one read per member (%d)", len(f.pending), f.RequestsDropped.Load(), pollRoundMembers)
	}
	for k, st := range f.members {
		if !st.reading || st.infoOut || st.tableOut != 0 {
			t.Fatalf("member %v: reading %v, Set out %v, table chunks out %d; want a read only", k, st.reading, st.infoOut, st.tableOut)
		}
	}
	reads := map[string]int{}
	for _, r := range f.pending {
		reads[r.ep.String()]++
	}
	for _, n := range f.nodes {
		want := len(f.memberKeys(n))
		if reads[n.ep.String()] != want {
			t.Fatalf("node %s: %d reads, want %d", n.cfgName, reads[n.ep.String()], want)
		}
	}
}

func BenchmarkPollRound(b *testing.B) {
	f := pollRoundFM(b)
	b.ReportAllocs()
	for b.Loop() {
		pollRound(f)
		resetPollRound(f)
	}
}

// owedRounds is how many DeleteVESWs pollRoundOwedFM owes nodes that are
// not back: a reload removed a vesw of 2048 members, twice, while their
// nodes were down.
const owedRounds = 2 * 2048

// pollRoundOwedFM is pollRoundFM where the EM also owes DeleteVESWs to
// owedRounds members of config nodes not seen since the FM started (by
// name, until they are back).
func pollRoundOwedFM(tb testing.TB) *FM {
	f := pollRoundFM(tb)
	for i := range owedRounds {
		f.oweDelete(memberKey{encap.VESWID(3 + i/2048), fmt.Sprintf("gone%d", i%2048), 0})
	}
	return f
}

// TestLimitPollRoundOwed: the owed DeleteVESWs stay owed through a poll
// round (no node of theirs is active), and the round reads every member.
func TestLimitPollRoundOwed(t *testing.T) {
	f := pollRoundOwedFM(t)
	pollRound(f)
	if len(f.pending) != pollRoundMembers || len(f.deletes) != 0 {
		t.Fatalf("%d requests pending, %d nodes owed deletes; want %d reads, none", len(f.pending), len(f.deletes), pollRoundMembers)
	}
	n := &node{portGUID: 0xD0D0, name: "gone7", cfgName: "", lid: 0x7777, ep: silentEP(7777), state: NodeActive}
	f.putNode(n)
	f.sendDeletes(n)
	// Its two (vesws 3 and 4, vport 0) are one DeleteVESW of vport 0.
	if d := f.deletes[n.portGUID][0]; len(f.deletes[n.portGUID]) != 1 || d == nil || !d.out || len(f.pending) != pollRoundMembers+1 {
		t.Fatalf("gone7 back: deletes %v, %d new requests; want its DeleteVESW of vport 0 sent", f.deletes[n.portGUID], len(f.pending)-pollRoundMembers)
	}
	if ks := f.owed["gone7"]; len(ks) != 0 {
		t.Fatalf("%v still owed by name", ks)
	}
}

func BenchmarkPollRoundOwed(b *testing.B) {
	f := pollRoundOwedFM(b)
	b.ReportAllocs()
	for b.Loop() {
		pollRound(f)
		resetPollRound(f)
	}
}
