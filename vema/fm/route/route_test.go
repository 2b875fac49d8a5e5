package route

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// switchDist computes hop counts between switches by its own BFS over the
// graph, independent of Routing.
func switchDist(g *Graph) map[NodeID]map[NodeID]int {
	out := map[NodeID]map[NodeID]int{}
	for id := range g.Len() {
		src := NodeID(id)
		if n, _ := g.Node(src); n.Kind != Switch {
			continue
		}
		d := map[NodeID]int{src: 0}
		queue := []NodeID{src}
		for q := 0; q < len(queue); q++ {
			n, _ := g.Node(queue[q])
			for _, pe := range n.Ports[1:] {
				if pe.Node == None {
					continue
				}
				if m, _ := g.Node(pe.Node); m.Kind != Switch {
					continue
				}
				if _, ok := d[pe.Node]; !ok {
					d[pe.Node] = d[queue[q]] + 1
					queue = append(queue, pe.Node)
				}
			}
		}
		out[src] = d
	}
	return out
}

// home returns the switch a node's LID is routed to: the switch itself, or
// the switch an HFI is cabled to.
func home(g *Graph, id NodeID) NodeID {
	n, _ := g.Node(id)
	if n.Kind == Switch {
		return id
	}
	return n.Ports[1].Node
}

func lftMap(lfts []LFT) map[NodeID][]uint8 {
	m := map[NodeID][]uint8{}
	for _, t := range lfts {
		m[t.Switch] = t.Ports
	}
	return m
}

// walk follows the LFTs from the switch that src hangs on toward dst and
// returns the number of switches the packet crosses. The walk is bounded by
// the number of nodes, so a routing loop is an error, not a hang.
func walk(g *Graph, lft map[NodeID][]uint8, src NodeID, dst encap.LID) (int, error) {
	cur := home(g, src)
	for step := 1; step <= g.Len(); step++ {
		n, _ := g.Node(cur)
		t := lft[cur]
		if int(dst) >= len(t) {
			return 0, fmt.Errorf("switch %#x: LID %v beyond the LFT top", n.GUID, dst)
		}
		p := int(t[dst])
		switch {
		case p == 0:
			if n.LID != dst {
				return 0, fmt.Errorf("switch %#x delivers %v to itself but is %v", n.GUID, dst, n.LID)
			}
			return step, nil
		case p > n.NumPorts || n.Ports[p].Node == None:
			return 0, fmt.Errorf("switch %#x: LID %v goes to unusable port %d", n.GUID, dst, p)
		}
		pe := n.Ports[p]
		m, _ := g.Node(pe.Node)
		if m.Kind == HFI {
			if m.LID != dst {
				return 0, fmt.Errorf("switch %#x: LID %v delivered to HFI %v", n.GUID, dst, m.LID)
			}
			return step, nil
		}
		cur = pe.Node
	}
	return 0, fmt.Errorf("LID %v from %v: loop", dst, src)
}

// checkUnicast checks that every HFI reaches every other HFI and every
// switch LID along a shortest path.
func checkUnicast(t *testing.T, g *Graph, lfts []LFT) {
	t.Helper()
	dist := switchDist(g)
	lft := lftMap(lfts)
	var hfis []NodeID
	for id := range g.Len() {
		if n, _ := g.Node(NodeID(id)); n.Kind == HFI {
			hfis = append(hfis, NodeID(id))
		}
	}
	for _, src := range hfis {
		for id := range g.Len() {
			dst := NodeID(id)
			if dst == src {
				continue
			}
			n, _ := g.Node(dst)
			got, err := walk(g, lft, src, n.LID)
			if err != nil {
				t.Fatal(err)
			}
			if want := dist[home(g, src)][home(g, dst)] + 1; got != want {
				t.Fatalf("%v -> %v crosses %d switches, shortest is %d", src, n.LID, got, want)
			}
		}
	}
}

// checkBalance recomputes, for every switch and every remote HFI, the set of
// equal-cost ports toward it, and checks that the LFT picked one of them
// and that per switch and per set the ports' counts differ by at most one.
// It returns the largest spread seen.
func checkBalance(t *testing.T, g *Graph, lfts []LFT) int {
	t.Helper()
	dist := switchDist(g)
	spread := 0
	for _, lt := range lfts {
		sw, _ := g.Node(lt.Switch)
		counts := map[string]map[int]int{}
		for id := range g.Len() {
			dst := NodeID(id)
			d, _ := g.Node(dst)
			h := home(g, dst)
			if d.Kind != HFI || h == lt.Switch {
				continue
			}
			var set []int
			for p := 1; p <= sw.NumPorts; p++ {
				pe := sw.Ports[p]
				if m, ok := g.Node(pe.Node); ok && m.Kind == Switch && dist[pe.Node][h] == dist[lt.Switch][h]-1 {
					set = append(set, p)
				}
			}
			key := fmt.Sprint(set)
			if counts[key] == nil {
				counts[key] = map[int]int{}
				for _, p := range set {
					counts[key][p] = 0
				}
			}
			p := int(lt.Ports[d.LID])
			if !slices.Contains(set, p) {
				t.Fatalf("switch %#x routes %v to port %d, not one of the shortest %v", sw.GUID, d.LID, p, set)
			}
			counts[key][p]++
		}
		for key, c := range counts {
			lo, hi := -1, 0
			for _, v := range c {
				if lo < 0 || v < lo {
					lo = v
				}
				hi = max(hi, v)
			}
			if hi-lo > 1 {
				t.Errorf("switch %#x, ports %s: counts %v differ by %d", sw.GUID, key, c, hi-lo)
			}
			spread = max(spread, hi-lo)
		}
	}
	return spread
}

// checkMulticast floods a packet from every member of every group through
// the MFTs, each switch sending to its mask minus the in-port, and checks
// that each other member gets exactly one copy and no one else any.
func checkMulticast(t *testing.T, g *Graph, mfts []MFT, groups []Group) {
	t.Helper()
	mft := map[NodeID][]PortMask{}
	links := 0
	for _, m := range mfts {
		mft[m.Switch] = m.Masks
		n, _ := g.Node(m.Switch)
		links += n.NumPorts
	}
	for _, gr := range groups {
		off := int(gr.MLID - encap.LIDMulticastBase)
		for _, src := range gr.Members {
			got := map[NodeID]int{}
			type hop struct {
				sw NodeID
				in int
			}
			sn, _ := g.Node(src)
			queue := []hop{{sn.Ports[1].Node, sn.Ports[1].Port}}
			for q := 0; q < len(queue); q++ {
				if q > links {
					t.Fatalf("MLID %v from %v: more than %d hops, a loop", gr.MLID, src, links)
				}
				h := queue[q]
				n, _ := g.Node(h.sw)
				mask := mft[h.sw][off]
				for p := 1; p <= n.NumPorts; p++ {
					if p == h.in || !mask.Has(p) {
						continue
					}
					pe := n.Ports[p]
					m, ok := g.Node(pe.Node)
					switch {
					case !ok:
						t.Fatalf("MLID %v: switch %#x floods to unlinked port %d", gr.MLID, n.GUID, p)
					case m.Kind == HFI:
						got[pe.Node]++
					default:
						queue = append(queue, hop{pe.Node, pe.Port})
					}
				}
			}
			for _, m := range gr.Members {
				want := 1
				if m == src {
					want = 0
				}
				if got[m] != want {
					t.Errorf("MLID %v from %v: member %v got %d copies, want %d", gr.MLID, src, m, got[m], want)
				}
				delete(got, m)
			}
			for n, c := range got {
				t.Errorf("MLID %v from %v: non-member %v got %d copies", gr.MLID, src, n, c)
			}
		}
	}
}

// testGroups returns groups over hfis: all, every third, a pair on one
// switch, one member, and none.
func testGroups(hfis []NodeID) []Group {
	var third []NodeID
	for k := 0; k < len(hfis); k += 3 {
		third = append(third, hfis[k])
	}
	return []Group{
		{MLID: encap.LIDMulticastBase, Members: hfis},
		{MLID: encap.LIDMulticastBase + 1, Members: third},
		{MLID: encap.LIDMulticastBase + 2, Members: hfis[:min(2, len(hfis))]},
		{MLID: encap.LIDMulticastBase + 7, Members: hfis[len(hfis)-1:]},
		{MLID: encap.LIDMulticastBase + 9},
	}
}

func routeAll(t *testing.T, f *Fabric) *Routing {
	t.Helper()
	r, err := New(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	lfts := r.LFTs()
	checkUnicast(t, f.Graph, lfts)
	checkBalance(t, f.Graph, lfts)
	groups := testGroups(f.HFIs)
	mfts, err := r.MFTs(groups)
	if err != nil {
		t.Fatal(err)
	}
	checkMulticast(t, f.Graph, mfts, groups)
	return r
}

func TestFatTreeRoutes(t *testing.T) {
	for _, c := range []struct{ leaves, hosts int }{{2, 2}, {4, 8}, {8, 16}} {
		for _, spines := range []int{2, 4} {
			t.Run(fmt.Sprintf("%dx%d/%dspines", c.leaves, c.hosts, spines), func(t *testing.T) {
				f, err := FatTree(FatTreeSpec{Leaves: c.leaves, Spines: spines, HostsPerLeaf: c.hosts})
				if err != nil {
					t.Fatal(err)
				}
				routeAll(t, f)
			})
		}
	}
}

// TestFatTreeUplinkBalance checks the balance a fat tree should get: each
// leaf spreads the remote HFIs evenly over its uplinks, and each spine
// carries as many HFI LIDs as any other.
func TestFatTreeUplinkBalance(t *testing.T) {
	f, err := FatTree(FatTreeSpec{Leaves: 8, Spines: 4, HostsPerLeaf: 16})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := New(f.Graph)
	perSpine := map[NodeID]int{}
	for _, lt := range r.LFTs()[:8] {
		n, _ := f.Node(lt.Switch)
		perPort := map[int]int{}
		for _, h := range f.HFIs {
			hn, _ := f.Node(h)
			if hn.Ports[1].Node == lt.Switch {
				continue
			}
			p := int(lt.Ports[hn.LID])
			perPort[p]++
			perSpine[n.Ports[p].Node]++
		}
		for p, c := range perPort {
			if c != 7*16/4 {
				t.Errorf("leaf %v uplink %d carries %d HFI LIDs, want %d", lt.Switch, p, c, 7*16/4)
			}
		}
	}
	for s, c := range perSpine {
		if c != 8*7*16/4 {
			t.Errorf("spine %v carries %d HFI LIDs from the leaves, want %d", s, c, 8*7*16/4)
		}
	}
}

func TestExtendedLIDs(t *testing.T) {
	f, err := FatTree(FatTreeSpec{Leaves: 4, Spines: 2, HostsPerLeaf: 8, HFILIDBase: 0xC0000, SwitchLIDBase: 0xC000})
	if err != nil {
		t.Fatal(err)
	}
	r := routeAll(t, f)
	if got, want := r.TopLID(), encap.LID(0xC0000+31); got != want {
		t.Errorf("TopLID %v, want %v", got, want)
	}
	lfts := r.LFTs()
	blocks := Blocks(lfts[0].Ports)
	if want := (0xC0000+31)/BlockSize + 1; len(blocks) != want {
		t.Fatalf("%d blocks, want %d", len(blocks), want)
	}
	b := blocks[0xC0000/BlockSize]
	if b[0] != 1 || b[7] != 8 || b[31] == Drop || b[32] != Drop || b[63] != Drop {
		t.Errorf("leaf 0 block %#x: %v", 0xC0000/BlockSize, b)
	}
	if blocks[0xC000/BlockSize][0] != 0 {
		t.Errorf("leaf 0 does not route its own LID 0xC000 to port 0")
	}
}

func TestRing(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f, err := Ring(n, 3, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := routeAll(t, f)
			if n == 3 {
				// Every LID of a 3-ring is one ISL hop away or local: check
				// that each entry is complete and no LID goes out port 0.
				for _, lt := range r.LFTs() {
					for lid := 1; lid <= int(r.TopLID()); lid++ {
						if lt.Ports[lid] == Drop {
							t.Errorf("switch %v drops LID %d", lt.Switch, lid)
						}
					}
				}
			}
		})
	}
}

func TestBlocks(t *testing.T) {
	lft := make([]uint8, 130)
	for k := range lft {
		lft[k] = uint8(k % 7)
	}
	b := Blocks(lft)
	if len(b) != 3 || b[1][0] != 64%7 || b[2][1] != 129%7 || b[2][2] != Drop || b[2][63] != Drop {
		t.Errorf("Blocks: %d blocks, %v", len(b), b[2])
	}
	if len(Blocks(nil)) != 0 {
		t.Error("Blocks(nil) is not empty")
	}
	m := MFTBlocks(make([]PortMask, 9))
	if len(m) != 2 {
		t.Errorf("MFTBlocks: %d blocks", len(m))
	}
}

func TestPortMask(t *testing.T) {
	var m PortMask
	for _, p := range []int{0, 1, 63, 64, 200, 255} {
		m.Set(p)
	}
	if !m.Has(0) || !m.Has(63) || !m.Has(64) || !m.Has(255) || m.Has(2) || m.Has(65) {
		t.Errorf("mask %x", m)
	}
	if m[0] != 1|2|1<<63 || m[1] != 1 || m[3] != 1<<(200-192)|1<<63 {
		t.Errorf("mask words %x", m)
	}
}

// TestSweepOrder builds a ring of three switches the way a BFS sweep meets
// it: each switch is met again through the loop and recognised by GUID, and
// every link is reported from both ends.
func TestSweepOrder(t *testing.T) {
	g := NewGraph()
	mustSw := func(guid uint64) NodeID {
		id, err := g.AddSwitch(guid, 4)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sm, err := g.AddHFI(0x100)
	must(err)
	must(g.SetLID(sm, 1))
	a := mustSw(0xa)
	must(g.Link(sm, 1, a, 3))
	b, c := mustSw(0xb), mustSw(0xc)
	must(g.Link(a, 1, b, 2))
	must(g.Link(a, 2, c, 1))
	// Level 2: b and c each see the other; the sweep meets c again from b
	// and b again from c.
	if c2 := mustSw(0xc); c2 != c {
		t.Fatalf("switch 0xc met again as %v, was %v", c2, c)
	}
	must(g.Link(b, 1, c, 2))
	must(g.Link(c, 2, b, 1))
	must(g.Link(b, 2, a, 1))
	h, err := g.AddHFI(0x200)
	must(err)
	must(g.Link(c, 3, h, 1))
	for k, id := range []NodeID{a, b, c, h} {
		must(g.SetLID(id, encap.LID(0x10+k)))
	}
	if g.Len() != 5 {
		t.Fatalf("%d nodes, want 5", g.Len())
	}
	r, err := New(g)
	must(err)
	lfts := r.LFTs()
	checkUnicast(t, g, lfts)
	checkBalance(t, g, lfts)
	groups := []Group{{MLID: encap.LIDMulticastBase + 3, Members: []NodeID{sm, h}}}
	mfts, err := r.MFTs(groups)
	must(err)
	checkMulticast(t, g, mfts, groups)
	if r.Hops(a, b) != 1 || r.Hops(a, h) != -1 || r.TreeRoot() != a {
		t.Errorf("Hops(a,b) %d, Hops(a,h) %d, root %v", r.Hops(a, b), r.Hops(a, h), r.TreeRoot())
	}
}

func TestGraphErrors(t *testing.T) {
	g := NewGraph()
	s, _ := g.AddSwitch(1, 4)
	h, _ := g.AddHFI(2)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"GUID 0", second(g.AddHFI(0)), ErrBadNode},
		{"too many ports", second(g.AddSwitch(9, MaxPorts+1)), ErrBadPort},
		{"switch met as HFI", second(g.AddHFI(1)), ErrDuplicate},
		{"switch met with other ports", second(g.AddSwitch(1, 5)), ErrDuplicate},
		{"dangling link", g.Link(s, 1, 7, 1), ErrBadNode},
		{"port 0", g.Link(s, 0, h, 1), ErrBadPort},
		{"HFI port 2", g.Link(s, 1, h, 2), ErrBadPort},
		{"self", g.Link(s, 1, s, 1), ErrBadPort},
		{"LID 0", g.SetLID(s, 0), ErrBadLID},
		{"multicast LID", g.SetLID(s, encap.LIDMulticastBase), ErrBadLID},
		{"LID past 16B", g.SetLID(s, 0xF00000), ErrBadLID},
		{"no such node LID", g.SetLID(5, 1), ErrBadNode},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if err := g.Link(s, 1, h, 1); err != nil {
		t.Fatal(err)
	}
	if err := g.Link(h, 1, s, 1); err != nil {
		t.Errorf("same link from the other end: %v", err)
	}
	if err := g.Link(s, 2, h, 1); !errors.Is(err, ErrPortInUse) {
		t.Errorf("HFI cabled twice: %v", err)
	}
	if _, err := New(g); !errors.Is(err, ErrTopology) {
		t.Errorf("no LIDs: %v", err)
	}
	if err := g.SetLID(s, 5); err != nil {
		t.Fatal(err)
	}
	if err := g.SetLID(h, 5); !errors.Is(err, ErrLIDConflict) {
		t.Errorf("LID conflict: %v", err)
	}
	if err := g.SetLID(h, 6); err != nil {
		t.Fatal(err)
	}
	if err := g.SetLID(s, 7); err != nil { // a new LID frees the old one
		t.Fatal(err)
	}
	if id, ok := g.ByLID(5); ok {
		t.Errorf("LID 5 still held by %v", id)
	}
	r, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range [][]Group{
		{{MLID: 0xF00000}},
		{{MLID: encap.LIDMulticastBase + MaxGroups}},
		{{MLID: encap.LIDPermissive}},
		{{MLID: encap.LIDMulticastBase}, {MLID: encap.LIDMulticastBase}},
		{{MLID: encap.LIDMulticastBase, Members: []NodeID{s}}},
		{{MLID: encap.LIDMulticastBase, Members: []NodeID{42}}},
	} {
		if _, err := r.MFTs(gr); !errors.Is(err, ErrBadGroup) {
			t.Errorf("groups %v: %v", gr, err)
		}
	}

	// An HFI on no switch, or two switches that cannot reach each other.
	lone, _ := g.AddHFI(3)
	_ = g.SetLID(lone, 8)
	if _, err := New(g); !errors.Is(err, ErrTopology) {
		t.Errorf("uncabled HFI: %v", err)
	}
	s2, _ := g.AddSwitch(4, 2)
	_ = g.SetLID(s2, 9)
	_ = g.Link(s2, 1, lone, 1)
	if _, err := New(g); !errors.Is(err, ErrTopology) {
		t.Errorf("disconnected switches: %v", err)
	}
	_ = g.Link(s2, 2, s, 4)
	if _, err := New(g); err != nil {
		t.Errorf("connected again: %v", err)
	}

	b2b := NewGraph()
	x, _ := b2b.AddHFI(1)
	y, _ := b2b.AddHFI(2)
	_ = b2b.SetLID(x, 1)
	_ = b2b.SetLID(y, 2)
	_ = b2b.Link(x, 1, y, 1)
	if _, err := New(b2b); !errors.Is(err, ErrTopology) {
		t.Errorf("HFIs back to back: %v", err)
	}
	if r, err := New(NewGraph()); err != nil || len(r.LFTs()) != 0 || r.TreeRoot() != None {
		t.Errorf("empty graph: %v", err)
	}
}

func TestGeneratorErrors(t *testing.T) {
	for _, s := range []FatTreeSpec{
		{Leaves: 0, Spines: 1, HostsPerLeaf: 1},
		{Leaves: 2, Spines: 0, HostsPerLeaf: 1},
		{Leaves: MaxPorts + 1, Spines: 1, HostsPerLeaf: 1},
		{Leaves: 2, Spines: 4, HostsPerLeaf: MaxPorts - 3},
		{Leaves: 2, Spines: 1, HostsPerLeaf: 1, HFILIDBase: 1, SwitchLIDBase: 2},
	} {
		if _, err := FatTree(s); err == nil {
			t.Errorf("FatTree(%+v) succeeded", s)
		}
	}
	if _, err := Ring(1, 1, 0, 0); err == nil {
		t.Error("Ring(1) succeeded")
	}
}

func second[T any](_ T, err error) error { return err }

func benchFatTree(b *testing.B, spec FatTreeSpec) {
	f, err := FatTree(spec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(f.Graph)
		if err != nil {
			b.Fatal(err)
		}
		_ = r.LFTs()
	}
}

func BenchmarkLFTs8x16(b *testing.B) {
	benchFatTree(b, FatTreeSpec{Leaves: 8, Spines: 4, HostsPerLeaf: 16})
}

// BenchmarkLFTsLargest is the largest two-level fat tree ports 1..254 allow
// with 8 spines: 250 leaves of 246 HFIs, 61,500 HFIs.
func BenchmarkLFTsLargest(b *testing.B) {
	benchFatTree(b, FatTreeSpec{Leaves: 250, Spines: 8, HostsPerLeaf: 246})
}

// threeLevel builds a three-level fat tree for benchmarks: pods of leaves,
// each leaf cabled to every spine of its pod, every pod spine cabled to
// every core switch.
func threeLevel(tb testing.TB, pods, leaves, hosts, spines, cores int) *Graph {
	g := NewGraph()
	guid, lid := uint64(1), encap.LID(1)
	add := func(ports int) NodeID {
		id, err := g.AddSwitch(guid, ports)
		guid++
		if err == nil {
			err = g.SetLID(id, lid)
			lid++
		}
		if err != nil {
			tb.Fatal(err)
		}
		return id
	}
	link := func(a NodeID, ap int, b NodeID, bp int) {
		if err := g.Link(a, ap, b, bp); err != nil {
			tb.Fatal(err)
		}
	}
	var core []NodeID
	for range cores {
		core = append(core, add(pods*spines))
	}
	for p := range pods {
		var sp []NodeID
		for s := range spines {
			id := add(leaves + cores)
			sp = append(sp, id)
			for c, cid := range core {
				link(id, leaves+1+c, cid, p*spines+s+1)
			}
		}
		for l := range leaves {
			leaf := add(hosts + spines)
			for s, sid := range sp {
				link(leaf, hosts+1+s, sid, l+1)
			}
			for h := range hosts {
				id, err := g.AddHFI(guid)
				guid++
				if err == nil {
					err = g.SetLID(id, lid)
					lid++
				}
				if err != nil {
					tb.Fatal(err)
				}
				link(leaf, h+1, id, 1)
			}
		}
	}
	return g
}

func TestThreeLevel(t *testing.T) {
	g := threeLevel(t, 3, 4, 5, 2, 2)
	r, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	lfts := r.LFTs()
	checkUnicast(t, g, lfts)
	checkBalance(t, g, lfts)
	var hfis []NodeID
	for id := range g.Len() {
		if n, _ := g.Node(NodeID(id)); n.Kind == HFI {
			hfis = append(hfis, NodeID(id))
		}
	}
	groups := testGroups(hfis)
	mfts, err := r.MFTs(groups)
	if err != nil {
		t.Fatal(err)
	}
	checkMulticast(t, g, mfts, groups)
}

// BenchmarkLFTs100k routes 100,000 HFIs: 8 pods of 50 leaves with 250 HFIs
// each, 4 spines per pod, 4 core switches (436 switches).
func BenchmarkLFTs100k(b *testing.B) {
	g := threeLevel(b, 8, 50, 250, 4, 4)
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(g)
		if err != nil {
			b.Fatal(err)
		}
		_ = r.LFTs()
	}
}

// TestSnapshot checks that a Routing keeps routing the graph as it was when
// it was made, whatever the graph becomes.
func TestSnapshot(t *testing.T) {
	f, err := Ring(3, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetLID(f.Switches[0], 0x9000); err != nil {
		t.Fatal(err)
	}
	extra, _ := f.AddHFI(0x99)
	lfts := r.LFTs()
	if len(lfts[0].Ports) != int(r.TopLID())+1 || r.TopLID() != 6 {
		t.Errorf("top %v, LFT of %d entries", r.TopLID(), len(lfts[0].Ports))
	}
	if _, err := r.MFTs([]Group{{MLID: encap.LIDMulticastBase, Members: []NodeID{extra}}}); !errors.Is(err, ErrBadGroup) {
		t.Errorf("member added after New: %v", err)
	}
	if r.Hops(extra, f.Switches[0]) != -1 || r.Hops(f.Switches[0], f.Switches[1]) != 1 {
		t.Error("Hops after the graph changed")
	}
}

// TestRandomGraphs routes random fabrics, with trunks, loops and overlapping
// sets of equal-cost ports: New either refuses the graph or every check
// holds.
func TestRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	routed := 0
	for iter := range 300 {
		g := NewGraph()
		nsw := 1 + rng.IntN(8)
		var sws, hfis []NodeID
		for k := range nsw {
			id, err := g.AddSwitch(uint64(0x100+k), 2+rng.IntN(8))
			if err != nil {
				t.Fatal(err)
			}
			sws = append(sws, id)
		}
		for range 3 * nsw {
			a, b := sws[rng.IntN(nsw)], sws[rng.IntN(nsw)]
			an, _ := g.Node(a)
			bn, _ := g.Node(b)
			_ = g.Link(a, 1+rng.IntN(an.NumPorts), b, 1+rng.IntN(bn.NumPorts)) // refused when a port is taken
		}
		for k := range 2 * nsw {
			s := sws[rng.IntN(nsw)]
			sn, _ := g.Node(s)
			p := 1 + rng.IntN(sn.NumPorts)
			if sn.Ports[p].Node != None {
				continue
			}
			h, _ := g.AddHFI(uint64(0x1000 + k))
			if err := g.Link(s, p, h, 1); err != nil {
				t.Fatal(err)
			}
			hfis = append(hfis, h)
		}
		base := encap.LID(1)
		if iter%2 == 1 {
			base = 0xC0000
		}
		for id, k := range rng.Perm(2 * g.Len())[:g.Len()] {
			if err := g.SetLID(NodeID(id), base+encap.LID(k)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := New(g)
		if err != nil {
			if !errors.Is(err, ErrTopology) {
				t.Fatalf("graph %d: %v", iter, err)
			}
			continue
		}
		routed++
		lfts := r.LFTs()
		checkUnicast(t, g, lfts)
		checkBalance(t, g, lfts)
		if len(hfis) > 0 {
			groups := testGroups(hfis)
			mfts, err := r.MFTs(groups)
			if err != nil {
				t.Fatal(err)
			}
			checkMulticast(t, g, mfts, groups)
		}
	}
	if routed < 30 {
		t.Errorf("only %d of 300 random graphs could be routed", routed)
	}
	t.Logf("%d of 300 random graphs routed", routed)
}
