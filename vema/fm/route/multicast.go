package route

import (
	"fmt"

	"github.com/opavnic/opavnic/encap"
)

// MaxGroups is the size of the multicast LID range: a group's MLID is
// encap.LIDMulticastBase + n for n < MaxGroups, the 16B multicast LIDs
// 0xF00000..0xF7FFFF.
const MaxGroups = 0x80000

// MFTBlockSize is the number of MLIDs in one MulticastForwardingTable block.
const MFTBlockSize = 8

// PortMask is a set of switch ports 0..255: port p is bit p%64 of word p/64,
// as the four positions of a MulticastForwardingTable entry.
type PortMask [4]uint64

// Set adds port p (0..255).
func (m *PortMask) Set(p int) { m[p>>6&3] |= 1 << (p & 63) }

// Has reports whether port p (0..255) is in m.
func (m PortMask) Has(p int) bool { return m[p>>6&3]&(1<<(p&63)) != 0 }

// IsZero reports whether m is empty.
func (m PortMask) IsZero() bool { return m == PortMask{} }

// Group is a multicast group: its MLID in the 32-bit form
// (encap.LIDMulticastBase + n; encap.LIDFrom16B converts a 16B MLID) and its
// member HFIs, which both send and receive.
type Group struct {
	MLID    encap.LID
	Members []NodeID
}

// MFT is one switch's multicast forwarding table: Masks[n] is the egress
// port mask for MLID encap.LIDMulticastBase + n, for every n up to the
// highest group in use. A switch forwards a packet to every port of the mask
// except the one it came in on.
type MFT struct {
	Switch NodeID
	Masks  []PortMask
}

// tree is the spanning tree of the switches, rooted at root, as BFS order
// and, per switch index, the link to its parent.
type tree struct {
	root  int32
	order []int32 // switch indices, root first, each after its parent
	up    []treeEdge
}

// treeEdge links a switch to its parent: port on the child, parent switch
// index and port on the parent. The root's is {0, -1, 0}.
type treeEdge struct {
	port       uint8
	parent     int32
	parentPort uint8
}

// spanningTree builds one spanning tree of all switches: a BFS over
// inter-switch links, in port order, from the switch whose total hop count
// to all others is least (the lowest index on a tie), so that the tree is
// shallow and deterministic.
func (r *Routing) spanningTree() tree {
	S := len(r.sw)
	if S == 0 {
		return tree{root: -1}
	}
	root, best := 0, -1
	for i := range S {
		sum := 0
		for _, h := range r.hops[i*S : (i+1)*S] {
			sum += int(h)
		}
		if best < 0 || sum < best {
			root, best = i, sum
		}
	}
	t := tree{root: int32(root), order: make([]int32, 0, S), up: make([]treeEdge, S)}
	seen := make([]bool, S)
	seen[root] = true
	t.up[root] = treeEdge{parent: -1}
	t.order = append(t.order, int32(root))
	for q := 0; q < len(t.order); q++ { // each switch is queued at most once
		u := t.order[q]
		for _, l := range r.isls[u] {
			if seen[l.peer] {
				continue
			}
			seen[l.peer] = true
			t.up[l.peer] = treeEdge{port: l.peerPort, parent: u, parentPort: l.port}
			t.order = append(t.order, l.peer)
		}
	}
	return t
}

// TreeRoot returns the root switch of the multicast spanning tree, or None
// when the graph has no switch.
func (r *Routing) TreeRoot() NodeID {
	if r.tree.root < 0 {
		return None
	}
	return r.sw[r.tree.root]
}

// MFTs builds one MFT per switch, in node order, for groups. Every group
// uses the spanning tree pruned to the links that lie between members (a
// link is kept when members lie on both of its sides), so a packet from any
// member reaches every other member exactly once and no switch without a
// member behind it. A group may be empty; a duplicate MLID, an MLID out of
// range, or a member that is not an HFI is an error (ErrBadGroup).
func (r *Routing) MFTs(groups []Group) ([]MFT, error) {
	S := len(r.sw)
	top := -1
	seen := map[encap.LID]bool{}
	for gi, gr := range groups {
		if !gr.MLID.IsMulticast() || gr.MLID-encap.LIDMulticastBase >= MaxGroups {
			return nil, fmt.Errorf("%w: group %d: %v is not a multicast LID %v..%v", ErrBadGroup, gi,
				gr.MLID, encap.LIDMulticastBase, encap.LIDMulticastBase+MaxGroups-1)
		}
		if seen[gr.MLID] {
			return nil, fmt.Errorf("%w: MLID %v given twice", ErrBadGroup, gr.MLID)
		}
		seen[gr.MLID] = true
		for _, m := range gr.Members {
			if !r.isHFI(m) {
				return nil, fmt.Errorf("%w: MLID %v: member %d is not an HFI of the graph", ErrBadGroup, gr.MLID, m)
			}
		}
		top = max(top, int(gr.MLID-encap.LIDMulticastBase))
	}
	out := make([]MFT, S)
	for s := range S {
		out[s] = MFT{Switch: r.sw[s], Masks: make([]PortMask, top+1)}
	}
	below := make([]int, S) // members hanging on the subtree of each switch
	member := map[NodeID]bool{}
	for _, gr := range groups {
		off := int(gr.MLID - encap.LIDMulticastBase)
		clear(below)
		clear(member)
		for _, m := range gr.Members {
			if member[m] {
				continue
			}
			member[m] = true
			a := r.attach[m]
			below[a.Node]++
			out[a.Node].Masks[off].Set(a.Port)
		}
		total := len(member)
		for k := len(r.tree.order) - 1; k > 0; k-- { // children before parents; the root (k = 0) has no uplink
			c := r.tree.order[k]
			e := r.tree.up[c]
			if below[c] > 0 && below[c] < total {
				out[c].Masks[off].Set(int(e.port))
				out[e.parent].Masks[off].Set(int(e.parentPort))
			}
			below[e.parent] += below[c]
		}
	}
	return out, nil
}

// MFTBlocks cuts an MFT into MulticastForwardingTable blocks of 8 MLIDs:
// block b holds MLID offsets 8*b .. 8*b+7, the last block padded with empty
// masks.
func MFTBlocks(masks []PortMask) [][MFTBlockSize]PortMask {
	out := make([][MFTBlockSize]PortMask, (len(masks)+MFTBlockSize-1)/MFTBlockSize)
	for b := range out {
		copy(out[b][:], masks[b*MFTBlockSize:])
	}
	return out
}
