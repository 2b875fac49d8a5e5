package fm

import "github.com/opavnic/opavnic/encap"

// Indexes for the work a poll round does under f.mu: at MaxNodes, with
// vesws of 2048 members, walking the config for each node's members, a
// vesw for each member and the nodes for each default port named by node
// made a round's answers cost members x (members + nodes) (some 600 ms of
// every second on a 2-vCPU machine; BenchmarkPollRound).

// cfgIndex finds a config's members by node and by key. It is built from
// one *Config (indexConfig) and answers for that config only: the FM
// builds it when the config is loaded (New) and reloaded (Reload), and
// FM.index builds it again should f.cfg be another config. A Config is
// never changed once made (Reload replaces it), so the index cannot go
// stale while cfg is f.cfg.
type cfgIndex struct {
	cfg *Config
	// vesws is the position in cfg.VESWs of each vesw ID (the first, as
	// FM.vesw's walk found it).
	vesws map[encap.VESWID]int
	// members is the position of each member of those vesws: vesw, then
	// member (the first of its key in the vesw).
	members map[memberKey][2]int
	// byNode is each config node's members in config order (vesw by
	// vesw, then as listed), as memberKeys' walk gave them. The slices are
	// shared: callers must not change them.
	byNode map[string][]memberKey
	// nodes is the position in cfg.Nodes of each name (Config.Node);
	// byGUID of each GUID but 0, and byName of each name listed without
	// a GUID (matchConfig). Each is the first such entry.
	nodes, byName map[string]int
	byGUID        map[uint64]int
}

// indexConfig indexes cfg: linear in its vesws and members.
func indexConfig(cfg *Config) *cfgIndex {
	x := &cfgIndex{cfg: cfg, vesws: make(map[encap.VESWID]int, len(cfg.VESWs)),
		members: map[memberKey][2]int{}, byNode: map[string][]memberKey{},
		nodes: make(map[string]int, len(cfg.Nodes)), byName: map[string]int{}, byGUID: map[uint64]int{}}
	for i, c := range cfg.Nodes {
		first := func(m map[string]int, k string) {
			if _, dup := m[k]; !dup {
				m[k] = i
			}
		}
		first(x.nodes, c.Name)
		if c.GUID == 0 {
			first(x.byName, c.Name)
		} else if _, dup := x.byGUID[c.GUID]; !dup {
			x.byGUID[c.GUID] = i
		}
	}
	for i := range cfg.VESWs {
		v := &cfg.VESWs[i]
		first := false
		if _, dup := x.vesws[v.ID]; !dup {
			x.vesws[v.ID], first = i, true
		}
		for j, m := range v.Members {
			k := memberKey{v.ID, m.Node, m.VPort}
			if _, dup := x.members[k]; first && !dup {
				x.members[k] = [2]int{i, j}
			}
			x.byNode[m.Node] = append(x.byNode[m.Node], k)
		}
	}
	return x
}

// node is cfg.Node.
func (x *cfgIndex) node(name string) (NodeConfig, bool) {
	if i, ok := x.nodes[name]; ok {
		return x.cfg.Nodes[i], true
	}
	return NodeConfig{}, false
}

// match returns the name of the config node n is under x's config: the
// first entry whose GUID is n's node or port GUID, else the first without
// a GUID named as n's NodeDescription; "" for none.
func (x *cfgIndex) match(n *node) string {
	best := -1
	for _, g := range [2]uint64{n.nodeGUID, n.portGUID} {
		if i, ok := x.byGUID[g]; ok && g != 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		var ok bool
		if best, ok = x.byName[n.name]; !ok {
			return ""
		}
	}
	return x.cfg.Nodes[best].Name
}

// index returns the index of f.cfg (f.mu held), built again when f.cfg is
// not the config it was built for.
func (f *FM) index() *cfgIndex {
	if f.idx == nil || f.idx.cfg != f.cfg {
		f.idx = indexConfig(f.cfg)
	}
	return f.idx
}

// nodesNamed returns the nodes whose cfgName is name, or was when the
// index was built (f.mu held): callers check cfgName. The index of f.nodes
// by config name is dropped (renamed) wherever a node's cfgName changes or
// a node enters or leaves f.nodes (putNode, dropNode), and built again
// here, linear in the nodes, at the next lookup; state and LID are read
// live, so joins and losses need not drop it.
func (f *FM) nodesNamed(name string) []*node {
	if f.byCfg == nil {
		f.byCfg = indexNodes(f.nodes, func(n *node) string { return n.cfgName })
	}
	return f.byCfg[name]
}

// renamed drops the index of the nodes by config name (nodesNamed): a
// node's cfgName changed, or a node entered or left f.nodes (f.mu held).
func (f *FM) renamed() { f.byCfg = nil }

// nodesWithLID returns the nodes whose LID is lid, or was when the index
// was built (f.mu held): callers check lid, and state, which is read live.
// The index is dropped (relid) wherever a node's LID changes or a node
// enters or leaves f.nodes, and built again here, linear in the nodes: a
// VEMA trap looks its sender up in it, not by a walk of every node.
func (f *FM) nodesWithLID(lid uint32) []*node {
	if f.byLID == nil {
		f.byLID = indexNodes(f.nodes, func(n *node) uint32 { return n.lid })
	}
	return f.byLID[lid]
}

// indexNodes is nodes by key.
func indexNodes[K comparable](nodes map[uint64]*node, key func(*node) K) map[K][]*node {
	x := make(map[K][]*node, len(nodes))
	for _, n := range nodes {
		x[key(n)] = append(x[key(n)], n)
	}
	return x
}

// relid drops the index of the nodes by LID (nodesWithLID): a node's LID
// changed, or a node entered or left f.nodes (f.mu held).
func (f *FM) relid() { f.byLID = nil }

// putNode adds n to the node table, and dropNode takes it out (f.mu held):
// the only ways in and out, so that the indexes of the nodes follow.
func (f *FM) putNode(n *node) {
	f.nodes[n.portGUID] = n
	f.renamed()
	f.relid()
}

func (f *FM) dropNode(n *node) {
	delete(f.nodes, n.portGUID)
	f.renamed()
	f.relid()
}
