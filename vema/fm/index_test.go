package fm

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// The indexes (index.go) against the walks they replaced: on random
// configs, random node tables, and reloads that add and remove vesws,
// members and nodes, memberKeys, vesw, member, activeNode and portInfo
// answer as the walks of f.cfg and f.nodes do.

// walkMemberKeys is memberKeys as a walk of the config.
func walkMemberKeys(cfg *Config, name string) []memberKey {
	var ks []memberKey
	for _, v := range cfg.VESWs {
		for _, m := range v.Members {
			if m.Node == name && name != "" {
				ks = append(ks, memberKey{v.ID, m.Node, m.VPort})
			}
		}
	}
	return ks
}

// walkMember is member as a walk of the config.
func walkMember(cfg *Config, k memberKey) (*VESWConfig, *Member, bool) {
	for i := range cfg.VESWs {
		if v := &cfg.VESWs[i]; v.ID == k.vesw {
			for j := range v.Members {
				if v.Members[j].Node == k.node && v.Members[j].VPort == k.vport {
					return v, &v.Members[j], true
				}
			}
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// walkActiveNode is activeNode as a walk of the nodes: the active node of
// that config name (at most one: joins and reloads see to it).
func walkActiveNode(f *FM, name string) *node {
	for _, n := range f.nodes {
		if n.cfgName == name && n.state == NodeActive && n.lid != 0 {
			return n
		}
	}
	return nil
}

// walkMatch is matchConfig as a walk of cfg's nodes.
func walkMatch(cfg *Config, n *node) string {
	for _, c := range cfg.Nodes {
		if c.GUID != 0 && (c.GUID == n.nodeGUID || c.GUID == n.portGUID) {
			return c.Name
		}
	}
	for _, c := range cfg.Nodes {
		if c.GUID == 0 && c.Name == n.name {
			return c.Name
		}
	}
	return ""
}

// walkNodeIn is what nodesIn maps name to, as a walk of the nodes for the
// name: the node that was config node name under cfg, preferring an active
// one (of two, either: map order).
func walkNodeIn(f *FM, name string, cfg *Config) []*node {
	var active, other []*node
	for _, n := range f.nodes {
		if n.lid != 0 && walkMatch(cfg, n) == name {
			if n.state == NodeActive {
				active = append(active, n)
			} else {
				other = append(other, n)
			}
		}
	}
	if len(active) > 0 {
		return active
	}
	return other
}

// walkPortInfo is portInfo with its default ports resolved by walkActiveNode.
func walkPortInfo(f *FM, v *VESWConfig, m *Member, n *node) []byte {
	pi := f.portInfo(v, m, n)
	w := &pi.VESW
	w.DefPortMask, w.UUcastDLID = 0, [encap.MaxDefaultPort]encap.LID{}
	for _, d := range v.DefaultPorts {
		dlid := d.DLID
		if d.Node != "" {
			if o := walkActiveNode(f, d.Node); o != nil {
				dlid = o.lid
			}
		}
		if dlid != 0 {
			w.DefPortMask |= 1 << d.Index
			w.UUcastDLID[d.Index] = encap.LID(dlid)
		}
	}
	b, _ := pi.MarshalBinary()
	return b
}

// indexNames is the node names random configs and node tables draw from:
// more than a config lists, so that reloads add and remove nodes.
const indexNames = 24

// randomFabric is a valid config of some of the nodes n0..n23 and up to
// five vesws whose members are vports of those nodes (a vport in one vesw
// only) and whose default ports name listed nodes or give DLIDs.
func randomFabric(r *rand.Rand) string {
	listed := []int{}
	for i := range indexNames {
		if r.IntN(4) != 0 {
			listed = append(listed, i)
		}
	}
	if len(listed) == 0 {
		listed = append(listed, r.IntN(indexNames))
	}
	var b strings.Builder
	b.WriteString("fm: {name: fm0}\nnodes:\n")
	guids := r.Perm(indexNames) // a GUID names one entry
	for j, i := range listed {
		if r.IntN(4) == 0 { // matched by GUID, whatever its name
			fmt.Fprintf(&b, "  - {name: n%d, guid: 0x%X}\n", i, 0x100+guids[j])
			continue
		}
		fmt.Fprintf(&b, "  - {name: n%d}\n", i)
	}
	b.WriteString("vesws:\n")
	nv := r.IntN(6)
	if nv == 0 {
		b.WriteString("  []\n")
	}
	used := map[[2]int]bool{}
	for _, id := range r.Perm(12)[:nv] {
		fmt.Fprintf(&b, "  - id: %d\n    pkey: 0x%X\n", id+1, 0x8001+id)
		if nd := r.IntN(4); nd > 0 {
			b.WriteString("    default_ports:\n")
			for d, idx := range r.Perm(encap.MaxDefaultPort)[:nd] {
				if d%2 == 0 {
					fmt.Fprintf(&b, "      - {index: %d, node: n%d}\n", idx, listed[r.IntN(len(listed))])
				} else {
					fmt.Fprintf(&b, "      - {index: %d, dlid: 0x%X}\n", idx, 0x100+r.IntN(16))
				}
			}
		}
		b.WriteString("    members:\n")
		nm := 0
		for range r.IntN(20) {
			p := [2]int{listed[r.IntN(len(listed))], r.IntN(4)}
			if used[p] {
				continue
			}
			used[p] = true
			nm++
			fmt.Fprintf(&b, "      - {node: n%d, vport: %d}\n", p[0], p[1])
		}
		if nm == 0 {
			b.WriteString("      []\n")
		}
	}
	return b.String()
}

// randomNodes adds count nodes to f's table with random names (listed or
// not), config names as a join would match them, states and LIDs (0 for
// some). At most one node per config name is active, as joins and reloads
// keep it.
func randomNodes(f *FM, r *rand.Rand, count int) {
	active := map[string]bool{}
	for _, n := range f.nodes {
		if n.state == NodeActive {
			active[n.cfgName] = true
		}
	}
	for range count {
		guid := uint64(0x1000 + len(f.nodes) + r.IntN(1<<20)<<16)
		if r.IntN(8) == 0 {
			guid = uint64(0x100 + r.IntN(indexNames)) // a config entry's GUID
		}
		if f.nodes[guid] != nil {
			continue
		}
		n := &node{portGUID: guid, name: fmt.Sprintf("n%d", r.IntN(indexNames)), ep: silentEP(len(f.nodes)),
			lid: uint32(0xC000 + r.IntN(256)), state: []string{NodeActive, NodeLost, NodeJoining}[r.IntN(3)]}
		if r.IntN(4) == 0 {
			n.nodeGUID = uint64(0x100 + r.IntN(indexNames))
		}
		n.cfgName = f.matchConfig(n)
		if r.IntN(8) == 0 {
			n.lid = 0
		}
		if n.state == NodeActive && active[n.cfgName] {
			n.state = NodeLost
		}
		if n.state == NodeActive {
			active[n.cfgName] = true
		}
		f.putNode(n)
	}
}

// checkIndexed compares the indexed answers with the walks for every node,
// every member of f.cfg and of other (an earlier config), and every vesw ID.
func checkIndexed(t *testing.T, f *FM, other *Config, step string) {
	t.Helper()
	names := []string{""}
	for i := range indexNames + 2 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	for _, name := range names {
		got, want := f.memberKeys(&node{cfgName: name}), walkMemberKeys(f.cfg, name)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: memberKeys(%q) = %v, want %v", step, name, got, want)
		}
		got1, want1 := f.activeNode(name), walkActiveNode(f, name)
		if name == "" && got1 != nil && want1 != nil {
			continue // unlisted nodes: any active one, in map order
		}
		if got, want := got1, want1; got != want {
			t.Fatalf("%s: activeNode(%q) = %s, want %s", step, name, nodeID(got), nodeID(want))
		}
	}
	for id := range encap.VESWID(14) {
		var want *VESWConfig
		for i := range f.cfg.VESWs {
			if f.cfg.VESWs[i].ID == id && want == nil {
				want = &f.cfg.VESWs[i]
			}
		}
		if got, ok := f.vesw(id); got != want || ok != (want != nil) {
			t.Fatalf("%s: vesw(%d) = %p %v, want %p", step, id, got, ok, want)
		}
	}
	for _, n := range f.nodes {
		if got, want := f.matchConfig(n), walkMatch(f.cfg, n); got != want {
			t.Fatalf("%s: matchConfig(%s, node GUID %#x) = %q, want %q", step, nodeID(n), n.nodeGUID, got, want)
		}
	}
	for _, name := range names {
		got, gok := f.index().node(name)
		want, wok := f.cfg.Node(name)
		if got != want || gok != wok {
			t.Fatalf("%s: node(%q) = %+v %v, want %+v %v", step, name, got, gok, want, wok)
		}
	}
	was := f.nodesIn(indexConfig(other))
	for _, name := range names[1:] {
		if want := walkNodeIn(f, name, other); was[name] == nil && len(want) > 0 || was[name] != nil && !slices.Contains(want, was[name]) {
			t.Fatalf("%s: nodesIn[%q] = %s, want one of %d", step, name, nodeID(was[name]), len(want))
		}
	}
	var keys []memberKey
	for _, c := range []*Config{f.cfg, other} {
		for _, v := range c.VESWs {
			for _, m := range v.Members {
				keys = append(keys, memberKey{v.ID, m.Node, m.VPort}, memberKey{v.ID + 1, m.Node, m.VPort})
			}
		}
	}
	for _, k := range keys {
		v, m, ok := f.member(k)
		wv, wm, wok := walkMember(f.cfg, k)
		if v != wv || m != wm || ok != wok {
			t.Fatalf("%s: member(%v) = %p %p %v, want %p %p %v", step, k, v, m, ok, wv, wm, wok)
		}
	}
	for _, n := range f.nodes {
		for _, k := range f.memberKeys(n) {
			v, m, _ := f.member(k)
			pi := f.portInfo(v, m, n)
			got, _ := pi.MarshalBinary()
			if want := walkPortInfo(f, v, m, n); !bytes.Equal(got, want) {
				t.Fatalf("%s: portInfo of %v on %s differs from the walk's:\n got %x\nwant %x", step, k, n.name, got, want)
			}
		}
	}
}

// TestIndexMatchesWalk: on random configs and node tables, through
// reloads (vesws, members and nodes added and removed), joins and losses,
// every indexed answer is the walk's.
func TestIndexMatchesWalk(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 0x1d3))
		cfg := mustConfig(t, randomFabric(r))
		f := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
		f.settled = true
		randomNodes(f, r, 1+r.IntN(30))
		checkIndexed(t, f, cfg, fmt.Sprintf("seed %d: start", seed))
		for step := range 6 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			old := f.cfg
			switch r.IntN(4) {
			case 0, 1: // a reload, which matches every node again
				if err := f.Reload(mustConfig(t, randomFabric(r))); err != nil {
					t.Fatalf("%s: reload: %v", where, err)
				}
				where += " (reload)"
			case 2: // nodes lost, or back with new LIDs
				for _, n := range f.nodes {
					switch r.IntN(4) {
					case 0:
						f.loseNode(n, "test")
					case 1:
						if n.state == NodeLost && walkActiveNode(f, n.cfgName) == nil {
							n.state, n.lid = NodeActive, uint32(0xC000+r.IntN(256))
						}
					}
				}
			case 3: // new nodes announce
				randomNodes(f, r, 1+r.IntN(6))
			}
			checkIndexed(t, f, old, where)
		}
	}
}

func nodeID(n *node) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprintf("%#x (%s, %s, lid %#x)", n.portGUID, n.cfgName, n.state, n.lid)
}

// TestTakeOwedMatchesWalk: takeOwed, which looks up the node's names in
// the DeleteVESWs owed by name, moves what the walk of every owed
// DeleteVESW moved: those of the node's config name, or, for an unlisted
// node, those of "" and of its NodeDescription.
func TestTakeOwedMatchesWalk(t *testing.T) {
	names := []string{"", "n0", "n1", "n2", "n3"}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0x0ed))
		cfg := mustConfig(t, testFabric)
		f := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
		owed := map[memberKey]bool{}
		for range r.IntN(12) {
			k := memberKey{encap.VESWID(1 + r.IntN(3)), names[r.IntN(len(names))], uint8(r.IntN(4))}
			owed[k] = true
			f.oweDelete(k)
		}
		n := &node{portGUID: 0xA, cfgName: names[r.IntN(len(names))], name: names[r.IntN(len(names))]}
		// The walk takeOwed replaced: what it moves, by vport.
		moved, left := map[uint8][]memberKey{}, map[memberKey]bool{}
		for k := range owed {
			if k.node != n.cfgName && (n.cfgName != "" || k.node != n.name) {
				left[k] = true
				continue
			}
			moved[k.vport] = append(moved[k.vport], k)
		}
		f.takeOwed(n)
		got := map[memberKey]bool{}
		for _, ks := range f.owed {
			for k := range ks {
				got[k] = true
			}
		}
		if !maps.Equal(got, left) {
			t.Fatalf("seed %d, node %q (%q): left owed %v, want %v", seed, n.cfgName, n.name, got, left)
		}
		dels := f.deletes[n.portGUID]
		if len(dels) != len(moved) {
			t.Fatalf("seed %d, node %q (%q): %d vports owed deletes, want %d (%v)", seed, n.cfgName, n.name, len(dels), len(moved), moved)
		}
		for vport, d := range dels {
			// Of two owed for one vport, either is sent (map order), as before.
			if !slices.Contains(moved[vport], memberKey{d.vesw, d.node, vport}) {
				t.Fatalf("seed %d: vport %d deletes %v, want one of %v", seed, vport, d, moved[vport])
			}
		}
	}
}
