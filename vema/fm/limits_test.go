package fm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// announceFrom is the inbound announce (trap 144, no LID held) of a node
// with port GUID guid at ep, as the FM's loop gets it.
func announceFrom(guid uint64, ep netip.AddrPort) inbound {
	ntc := vema.SMPNotice{GenericType: vema.NoticeGenericInfo, ProdTypeLSB: vema.NoticeProdCA,
		TrapNum: vema.TrapChangeCapability, IssuerGID: gidOf(encap.DefaultSubnetPrefix, guid)}
	data, _ := ntc.MarshalBinary()
	s := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: 0x80, MgmtClass: vema.ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: vema.MethodTrap, TID: guid, AttrID: vema.SMPAttrNotice}, Data: data}
	mad, _ := s.MarshalBinary()
	return inbound{mad: mad, slid: encap.LID16BPermissive, src: ep}
}

func silentEP(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 8, byte(i >> 8), byte(i)}), 4793)
}

// TestLimitNodes fills the SM's node table to MaxNodes (one active node and
// MaxNodes-1 that announce and never answer), shows the next new GUID is
// refused and counted while the active node keeps its LID, and that the
// silent nodes, whose joins fail, give their slots back.
func TestLimitNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	net := hfitest.NewNetwork()
	f, stop := startFM(t, ctx, net, mustConfig(t, testFabric))
	t.Cleanup(stop)
	newFakeNode(t, ctx, net, "host-a", epA, fmEP, 0)
	waitFor(t, "host-a to join", 5*time.Second, func() bool { n, ok := f.Node("host-a"); return ok && n.State == NodeActive })

	// Fill and overflow under one hold of the lock, before any join can
	// time out: the table is exactly full.
	f.mu.Lock()
	for i := range MaxNodes - 1 {
		p := announceFrom(0xABC0000000+uint64(i), silentEP(i))
		f.handle(&p)
	}
	full := len(f.nodes)
	over := announceFrom(0xDEF, silentEP(MaxNodes))
	f.handle(&over)
	_, overKept := f.nodes[0xDEF]
	after := len(f.nodes)
	f.mu.Unlock()
	if full != MaxNodes || after != MaxNodes || overKept {
		t.Fatalf("nodes: %d when full, %d after one more (kept %v); want %d", full, after, overKept, MaxNodes)
	}
	if got := f.NodesRefused.Load(); got != 1 {
		t.Fatalf("NodesRefused = %d, want 1", got)
	}
	if n, ok := f.Node("host-a"); !ok || n.State != NodeActive || n.LID != 0x10 {
		t.Fatalf("host-a after the overflow: %+v", n)
	}

	// The silent nodes never finish joining: each is forgotten when its
	// join fails, so the refused GUID gets in when it announces again.
	waitFor(t, "failed joins to free their slots", 30*time.Second, func() bool { return len(f.Nodes()) == 1 })
	f.mu.Lock()
	f.handle(&over)
	_, overKept = f.nodes[0xDEF]
	f.mu.Unlock()
	if !overKept || f.NodesRefused.Load() != 1 {
		t.Fatalf("the refused GUID announcing again: kept %v, refused %d", overKept, f.NodesRefused.Load())
	}
}

// TestLimitNodesForgetsLost: with the table full of lost nodes, a new GUID
// takes the slot of the one lost longest ago; with it full of active and
// joining nodes, the new GUID is refused and nobody is forgotten.
func TestLimitNodesForgetsLost(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	t0 := time.Now().Add(-time.Hour)
	for i := range MaxNodes {
		n := &node{portGUID: uint64(0x1000 + i), lid: uint32(0x10 + i), ep: silentEP(i), state: NodeLost,
			lostAt: t0.Add(time.Duration(MaxNodes-i) * time.Second)} // the last one was lost first
		f.putNode(n)
	}
	f.mu.Lock()
	p := announceFrom(0xFEED, silentEP(9999))
	f.handle(&p)
	_, gone := f.nodes[0x1000+MaxNodes-1]
	_, in := f.nodes[0xFEED]
	k := len(f.nodes)
	f.mu.Unlock()
	if gone || !in || k != MaxNodes || f.NodesRefused.Load() != 0 {
		t.Fatalf("oldest lost kept %v, new in %v, %d nodes, %d refused", gone, in, k, f.NodesRefused.Load())
	}

	for _, n := range f.nodes {
		if n.state == NodeLost {
			n.state = NodeActive
		}
	}
	f.mu.Lock()
	p = announceFrom(0xBEEF, silentEP(9998))
	f.handle(&p)
	_, in = f.nodes[0xBEEF]
	k = len(f.nodes)
	f.mu.Unlock()
	if in || k != MaxNodes || f.NodesRefused.Load() != 1 {
		t.Fatalf("full of active nodes: new in %v, %d nodes, %d refused", in, k, f.NodesRefused.Load())
	}
}

// fabricText writes a fabric config: nodes n0..n<nodes-1>, then the vesws.
func fabricText(nodes int, vesws ...string) string {
	var b strings.Builder
	b.WriteString("fm: {name: fm0}\nnodes:\n")
	for i := range nodes {
		fmt.Fprintf(&b, "  - {name: n%d}\n", i)
	}
	b.WriteString("vesws:\n")
	for _, v := range vesws {
		b.WriteString(v)
	}
	if len(vesws) == 0 {
		b.WriteString("  []\n")
	}
	return b.String()
}

// vesw writes one vesw with members (node index, vport) from the list.
func vesw(id int, mcast uint32, members [][2]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - id: %d\n    pkey: 0x8001\n", id)
	if mcast != 0 {
		fmt.Fprintf(&b, "    mcast_dlid: 0x%X\n", mcast)
	}
	b.WriteString("    members:\n")
	for _, m := range members {
		fmt.Fprintf(&b, "      - {node: n%d, vport: %d}\n", m[0], m[1])
	}
	if len(members) == 0 {
		b.WriteString("      []\n")
	}
	return b.String()
}

// spread is n members over nine nodes (from, from+1, ...), vports 0, 1, ... on each.
func spread(n, from int) [][2]int {
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{from + i%9, i / 9}
	}
	return out
}

// onePerNode is n members, vport 0 of nodes from, from+1, ...
func onePerNode(n, from int) [][2]int {
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{from + i, 0}
	}
	return out
}

// TestLimitFabricConfig fills each bound a fabric config has to exactly its
// value and shows one more is a *ConfigError naming the field.
func TestLimitFabricConfig(t *testing.T) {
	manyVESWs := func(n int) []string {
		vs := make([]string, n)
		for i := range vs {
			// A vport is one vesw's port: 255 per node.
			vs[i] = vesw(i+1, uint32(0xF00001+i), [][2]int{{i / (MaxVPort + 1), i % (MaxVPort + 1)}})
		}
		return vs
	}
	for _, tc := range []struct {
		name       string
		ok, over   string
		field, why string
	}{
		{"nodes", fabricText(MaxNodes), fabricText(MaxNodes + 1),
			fmt.Sprintf("nodes[%d]", MaxNodes), "more than 4095 nodes"},
		{"vesw members (MAC table)",
			fabricText(9, vesw(1, 0, spread(vema.MACTableMaxEntries, 0))),
			fabricText(9, vesw(1, 0, spread(vema.MACTableMaxEntries+1, 0))),
			"vesws[0].members[2048]", "more than 2048 members"},
		{"multicast group members",
			fabricText(vema.MaxDirGroupMembers+1, vesw(1, 0xF00001, onePerNode(vema.MaxDirGroupMembers, 0))),
			fabricText(vema.MaxDirGroupMembers+1, vesw(1, 0xF00001, onePerNode(vema.MaxDirGroupMembers+1, 0))),
			"vesws[0].members[496].node", "member 497 of multicast group 0xF00001"},
		{"multicast group shared by two vesws",
			fabricText(vema.MaxDirGroupMembers+1, vesw(1, 0xF00001, onePerNode(300, 0)), vesw(2, 0xF00001, onePerNode(196, 300))),
			fabricText(vema.MaxDirGroupMembers+1, vesw(1, 0xF00001, onePerNode(300, 0)), vesw(2, 0xF00001, onePerNode(197, 300))),
			"vesws[1].members[196].node", "member 497 of multicast group 0xF00001"},
		{"multicast groups",
			fabricText(2, manyVESWs(vema.MaxDirGroups)...),
			fabricText(2, manyVESWs(vema.MaxDirGroups+1)...),
			"vesws[256].mcast_dlid", "would be multicast group 257"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseConfig([]byte(tc.ok)); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			_, err := ParseConfig([]byte(tc.over))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, tc.why) {
				t.Fatalf("one past the bound: %v; want field %s, %q", err, tc.field, tc.why)
			}
		})
	}
}

// TestLimitDirectoryPush pushes a directory to MaxNodes active nodes: the
// generation is at the directory's bound (the FM and 4095 nodes, 50
// DirectoryBlocks and a MulticastBlock), every node gets it, and the push
// holds one request per node (block after block), none dropped.
func TestLimitDirectoryPush(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for i := range MaxNodes {
		n := &node{portGUID: uint64(0x1000 + i), lid: uint32(0x10 + i), ep: silentEP(i), state: NodeActive}
		f.putNode(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushDirectory()
	if len(f.lastDir) != 51 || len(f.lastDir[0].Entries) != vema.MaxDirEntriesPerMAD {
		t.Fatalf("%d blocks, want 50 DirectoryBlocks and a MulticastBlock", len(f.lastDir))
	}
	if len(f.pending) != MaxNodes || f.RequestsDropped.Load() != 0 {
		t.Fatalf("%d requests outstanding, %d dropped; want one per node (%d), none", len(f.pending), f.RequestsDropped.Load(), MaxNodes)
	}
	// One node answering takes it through every block, one at a time.
	ep := silentEP(7)
	blocks := 0
	for {
		var tid uint64
		for k, r := range f.pending {
			if r.ep == ep {
				tid = k
			}
		}
		if tid == 0 {
			break
		}
		r := f.pending[tid]
		delete(f.pending, tid)
		blocks++
		r.onResp(&inbound{src: ep}, vema.StatusSuccess)
		if len(f.pending) > MaxNodes {
			t.Fatalf("block %d: %d outstanding", blocks, len(f.pending))
		}
	}
	if blocks != len(f.lastDir) || len(f.pending) != MaxNodes-1 {
		t.Fatalf("node 7 got %d blocks (want %d); %d outstanding", blocks, len(f.lastDir), len(f.pending))
	}
}
