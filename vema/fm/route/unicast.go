package route

import (
	"fmt"

	"github.com/opavnic/opavnic/encap"
)

// BlockSize is the number of LFT entries in one LinearForwardingTable block.
const BlockSize = 64

// noHops marks a pair of switches with no path between them.
const noHops = ^uint16(0)

// isl is an inter-switch port: the port number, the switch index of its
// peer and the peer's port.
type isl struct {
	port     uint8
	peerPort uint8
	peer     int32
}

// host is an HFI attached to a switch: its LID and the switch port facing it.
type host struct {
	node NodeID
	lid  encap.LID
	port uint8
}

// Routing holds what every routing decision needs: the switches, their
// inter-switch ports, the HFIs on each, and the hop count between every two
// switches. It is a snapshot: changes to the Graph after New do not reach
// it. The hop counts take 2·S² bytes for S switches, and each LFT one byte
// per LID up to the top LID.
type Routing struct {
	sw     []NodeID // switch index -> node, in node order
	swLID  []encap.LID
	swPort []int    // per switch: NumPorts
	swIdx  []int32  // node -> switch index, -1 for an HFI
	isls   [][]isl  // per switch, in port order
	hosts  [][]host // per switch, in node order
	attach []Peer   // per node: for an HFI, the switch index and port it hangs on
	hops   []uint16 // hops[i*len(sw)+j]: links from switch i to switch j
	top    encap.LID
	tree   tree
}

// New checks that g can be routed and computes the hop counts. It fails
// (ErrTopology) when a node has no LID, an HFI is not cabled to a switch, or
// some switch cannot reach another. An empty graph routes to nothing.
func New(g *Graph) (*Routing, error) {
	r := &Routing{swIdx: make([]int32, len(g.nodes)), attach: make([]Peer, len(g.nodes))}
	for id := range g.nodes {
		n := &g.nodes[id]
		if n.LID == 0 {
			return nil, fmt.Errorf("%w: %v %#x has no LID", ErrTopology, n.Kind, n.GUID)
		}
		r.top = max(r.top, n.LID)
		r.swIdx[id] = -1
		if n.Kind == Switch {
			r.swIdx[id] = int32(len(r.sw))
			r.sw = append(r.sw, NodeID(id))
			r.swLID = append(r.swLID, n.LID)
			r.swPort = append(r.swPort, n.NumPorts)
		}
	}
	S := len(r.sw)
	r.isls = make([][]isl, S)
	r.hosts = make([][]host, S)
	for s, id := range r.sw {
		n := &g.nodes[id]
		for p := 1; p <= n.NumPorts; p++ {
			if pe := n.Ports[p]; pe.Node != None && g.nodes[pe.Node].Kind == Switch {
				r.isls[s] = append(r.isls[s], isl{port: uint8(p), peerPort: uint8(pe.Port), peer: r.swIdx[pe.Node]})
			}
		}
	}
	for id := range g.nodes {
		n := &g.nodes[id]
		if n.Kind != HFI {
			continue
		}
		pe := n.Ports[1]
		if pe.Node == None || g.nodes[pe.Node].Kind != Switch {
			return nil, fmt.Errorf("%w: HFI %#x is not cabled to a switch", ErrTopology, n.GUID)
		}
		s := r.swIdx[pe.Node]
		r.attach[id] = Peer{Node: NodeID(s), Port: pe.Port}
		r.hosts[s] = append(r.hosts[s], host{node: NodeID(id), lid: n.LID, port: uint8(pe.Port)})
	}
	r.hops = make([]uint16, S*S)
	queue := make([]int32, 0, S)
	for src := range S {
		row := r.hops[src*S : (src+1)*S]
		for j := range row {
			row[j] = noHops
		}
		row[src] = 0
		queue = append(queue[:0], int32(src))
		for q := 0; q < len(queue); q++ { // each switch is queued at most once
			u := queue[q]
			for _, l := range r.isls[u] {
				if row[l.peer] == noHops {
					row[l.peer] = row[u] + 1
					queue = append(queue, l.peer)
				}
			}
		}
		if len(queue) != S {
			for j := range row {
				if row[j] == noHops {
					return nil, fmt.Errorf("%w: switch %#x cannot reach switch %#x",
						ErrTopology, g.nodes[r.sw[src]].GUID, g.nodes[r.sw[j]].GUID)
				}
			}
		}
	}
	r.tree = r.spanningTree()
	return r, nil
}

// Hops returns the number of links on a shortest path between two switches,
// or -1 when a or b is not a switch of the graph.
func (r *Routing) Hops(a, b NodeID) int {
	if !r.isSwitch(a) || !r.isSwitch(b) {
		return -1
	}
	return int(r.hops[int(r.swIdx[a])*len(r.sw)+int(r.swIdx[b])])
}

func (r *Routing) isSwitch(id NodeID) bool {
	return id >= 0 && int(id) < len(r.swIdx) && r.swIdx[id] >= 0
}

// isHFI reports whether id was an HFI of the graph when r was made.
func (r *Routing) isHFI(id NodeID) bool {
	return id >= 0 && int(id) < len(r.swIdx) && r.swIdx[id] < 0
}

// TopLID returns the highest LID in use, the LinearFDBTop of every switch.
func (r *Routing) TopLID() encap.LID { return r.top }

// LFT is one switch's linear forwarding table: Ports[lid] is the egress port
// for DLID lid (0 = the switch itself, Drop = no route), for every LID up to
// the top LID in use.
type LFT struct {
	Switch NodeID
	Ports  []uint8
}

// eqSet counts, for one set of equal-cost ports of one switch, how many HFI
// destinations each port has been given.
type eqSet struct{ count []int }

// LFTs routes every LID from every switch and returns one LFT per switch, in
// node order.
//
// Every entry follows a shortest path: the switch's own LID goes to port 0,
// an HFI cabled to the switch to the port facing it, and any other LID to
// one of the ports whose neighbour switch is one hop nearer the switch that
// holds (or is cabled to) the LID. Among those equal-cost ports the choice
// for an HFI LID is, in order of precedence:
//
//  1. the port that has carried the fewest HFI LIDs of this same set of
//     equal-cost ports, so that per switch and per set the counts differ by
//     at most one;
//  2. the port that has carried the fewest HFI LIDs overall on this switch;
//  3. the port whose neighbour switch has carried the fewest HFI LIDs from all
//     switches routed so far, so that sibling switches favour different
//     next hops;
//  4. the lowest port number.
//
// Destinations are taken by the switch they hang on (in node order), then in
// node order. Switch LIDs, which carry only management traffic, are routed by
// the same rule but not counted, as opa-fm does.
func (r *Routing) LFTs() []LFT {
	S := len(r.sw)
	out := make([]LFT, S)
	swLoad := make([]int, S)
	var key []byte
	var cand []isl
	for i := range S {
		t := make([]uint8, int(r.top)+1)
		for k := range t {
			t[k] = Drop
		}
		portLoad := make([]int, r.swPort[i]+1)
		sets := map[string]*eqSet{}
		row := r.hops[i*S : (i+1)*S]
		for j := range S {
			if j == i {
				t[r.swLID[j]] = 0
				for _, h := range r.hosts[j] {
					t[h.lid] = h.port
				}
				continue
			}
			cand, key = cand[:0], key[:0]
			for _, l := range r.isls[i] {
				if r.hops[int(l.peer)*S+j] == row[j]-1 {
					cand = append(cand, l)
					key = append(key, l.port)
				}
			}
			set := sets[string(key)]
			if set == nil {
				set = &eqSet{count: make([]int, len(cand))}
				sets[string(key)] = set
			}
			for _, h := range r.hosts[j] {
				k := pick(set, cand, portLoad, swLoad)
				set.count[k]++
				portLoad[cand[k].port]++
				swLoad[cand[k].peer]++
				t[h.lid] = cand[k].port
			}
			t[r.swLID[j]] = cand[pick(set, cand, portLoad, swLoad)].port
		}
		out[i] = LFT{Switch: r.sw[i], Ports: t}
	}
	return out
}

// pick returns the index in cand of the port the LFTs rule chooses. cand is
// never empty: a switch at distance d > 0 has a neighbour at d-1.
func pick(set *eqSet, cand []isl, portLoad, swLoad []int) int {
	best := 0
	for k := 1; k < len(cand); k++ {
		a, b := cand[k], cand[best]
		switch {
		case set.count[k] != set.count[best]:
			if set.count[k] < set.count[best] {
				best = k
			}
		case portLoad[a.port] != portLoad[b.port]:
			if portLoad[a.port] < portLoad[b.port] {
				best = k
			}
		case swLoad[a.peer] < swLoad[b.peer]:
			best = k
		}
	}
	return best
}

// Blocks cuts an LFT into 64-entry LinearForwardingTable blocks: block b
// holds the entries for LIDs 64*b .. 64*b+63, and the last block is padded
// with Drop.
func Blocks(lft []uint8) [][BlockSize]uint8 {
	out := make([][BlockSize]uint8, (len(lft)+BlockSize-1)/BlockSize)
	for b := range out {
		n := copy(out[b][:], lft[b*BlockSize:])
		for k := n; k < BlockSize; k++ {
			out[b][k] = Drop
		}
	}
	return out
}
