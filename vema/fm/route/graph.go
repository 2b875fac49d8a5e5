package route

import (
	"errors"
	"fmt"

	"github.com/opavnic/opavnic/encap"
)

// MaxPorts is the most external ports a switch may have: an LFT entry is one
// byte and 0xFF means drop, so ports are 1..254.
const MaxPorts = 254

// Drop is the LFT entry for a LID with no route.
const Drop uint8 = 0xFF

// Kind says what a node is.
type Kind uint8

const (
	// Switch has a management port 0, which holds its LID, and external
	// ports 1..NumPorts.
	Switch Kind = 1
	// HFI has one port, port 1, which holds its LID.
	HFI Kind = 2
)

func (k Kind) String() string {
	switch k {
	case Switch:
		return "switch"
	case HFI:
		return "HFI"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// NodeID names a node of one Graph: its index in the order nodes were added
// (the sweep's BFS order), which also orders routing decisions.
type NodeID int32

// None is the NodeID of no node, the peer of an unconnected port.
const None NodeID = -1

// Peer is the far end of a link: a node and its port.
type Peer struct {
	Node NodeID
	Port int
}

// Node is one switch or HFI.
type Node struct {
	GUID     uint64
	Kind     Kind
	NumPorts int       // external ports: 1..NumPorts (1 for an HFI)
	LID      encap.LID // a switch's port 0 LID or an HFI's port 1 LID; 0 = none yet
	// Ports[p] is the peer of port p, for p in 0..NumPorts; port 0 and
	// unconnected ports have Peer{None, 0}.
	Ports []Peer
}

// Errors that Graph methods and New wrap, for errors.Is.
var (
	ErrBadNode     = errors.New("route: no such node")
	ErrBadPort     = errors.New("route: bad port")
	ErrDuplicate   = errors.New("route: GUID already names another kind of node")
	ErrPortInUse   = errors.New("route: port already linked elsewhere")
	ErrBadLID      = errors.New("route: bad LID")
	ErrLIDConflict = errors.New("route: LID already held by another node")
	ErrTopology    = errors.New("route: fabric cannot be routed")
	ErrBadGroup    = errors.New("route: bad multicast group")
)

// Graph is a fabric as discovered so far. The zero value is not ready; use
// NewGraph. A Graph is not safe for concurrent mutation.
type Graph struct {
	nodes  []Node
	byGUID map[uint64]NodeID
	byLID  map[encap.LID]NodeID
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{byGUID: map[uint64]NodeID{}, byLID: map[encap.LID]NodeID{}}
}

// AddSwitch adds a switch with numPorts external ports, or returns the switch
// already added under guid (a node met again through a loop or a second
// link). A GUID met again as an HFI, or with another port count, is an error
// (opa-fm's "Duplicate NodeGuid").
func (g *Graph) AddSwitch(guid uint64, numPorts int) (NodeID, error) {
	if numPorts < 1 || numPorts > MaxPorts {
		return None, fmt.Errorf("%w: switch %#x with %d ports (1..%d)", ErrBadPort, guid, numPorts, MaxPorts)
	}
	return g.add(guid, Switch, numPorts)
}

// AddHFI adds an HFI, or returns the one already added under guid.
func (g *Graph) AddHFI(guid uint64) (NodeID, error) { return g.add(guid, HFI, 1) }

func (g *Graph) add(guid uint64, k Kind, numPorts int) (NodeID, error) {
	if guid == 0 {
		return None, fmt.Errorf("%w: GUID 0", ErrBadNode)
	}
	if id, ok := g.byGUID[guid]; ok {
		n := &g.nodes[id]
		if n.Kind != k || n.NumPorts != numPorts {
			return None, fmt.Errorf("%w: %#x is a %v with %d ports, met again as a %v with %d",
				ErrDuplicate, guid, n.Kind, n.NumPorts, k, numPorts)
		}
		return id, nil
	}
	id := NodeID(len(g.nodes))
	ports := make([]Peer, numPorts+1)
	for i := range ports {
		ports[i] = Peer{Node: None}
	}
	g.nodes = append(g.nodes, Node{GUID: guid, Kind: k, NumPorts: numPorts, Ports: ports})
	g.byGUID[guid] = id
	return id, nil
}

// Lookup returns the node added under guid.
func (g *Graph) Lookup(guid uint64) (NodeID, bool) {
	id, ok := g.byGUID[guid]
	return id, ok
}

// Len returns the number of nodes; their IDs are 0..Len()-1.
func (g *Graph) Len() int { return len(g.nodes) }

// Node returns node id. The Ports slice is the graph's own: read it, do not
// change it.
func (g *Graph) Node(id NodeID) (Node, bool) {
	if !g.valid(id) {
		return Node{}, false
	}
	return g.nodes[id], true
}

// ByLID returns the node that holds lid.
func (g *Graph) ByLID(lid encap.LID) (NodeID, bool) {
	id, ok := g.byLID[lid]
	return id, ok
}

func (g *Graph) valid(id NodeID) bool { return id >= 0 && int(id) < len(g.nodes) }

// Link cables port ap of node a to port bp of node b. Linking the same two
// ports again is a no-op (a sweep sees each link from both sides); a port
// already cabled elsewhere, port 0, a port out of range, or a port linked
// to itself is an error.
func (g *Graph) Link(a NodeID, ap int, b NodeID, bp int) error {
	for _, e := range [2]Peer{{a, ap}, {b, bp}} {
		if !g.valid(e.Node) {
			return fmt.Errorf("%w: node %d (graph has %d)", ErrBadNode, e.Node, len(g.nodes))
		}
		if n := &g.nodes[e.Node]; e.Port < 1 || e.Port > n.NumPorts {
			return fmt.Errorf("%w: port %d of %v %#x (1..%d)", ErrBadPort, e.Port, n.Kind, n.GUID, n.NumPorts)
		}
	}
	if a == b && ap == bp {
		return fmt.Errorf("%w: port %d of %#x linked to itself", ErrBadPort, ap, g.nodes[a].GUID)
	}
	pa, pb := g.nodes[a].Ports[ap], g.nodes[b].Ports[bp]
	if pa == (Peer{b, bp}) && pb == (Peer{a, ap}) {
		return nil
	}
	for _, e := range [2]struct {
		end, peer Peer
	}{{Peer{a, ap}, pa}, {Peer{b, bp}, pb}} {
		if e.peer.Node != None {
			n, o := g.nodes[e.end.Node], g.nodes[e.peer.Node]
			return fmt.Errorf("%w: port %d of %#x is linked to port %d of %#x", ErrPortInUse,
				e.end.Port, n.GUID, e.peer.Port, o.GUID)
		}
	}
	g.nodes[a].Ports[ap] = Peer{b, bp}
	g.nodes[b].Ports[bp] = Peer{a, ap}
	return nil
}

// SetLID gives node id the LID lid, replacing any LID it had. lid must be
// unicast and fit a 16B header (1..0xEFFFFF, extended LIDs included) and not
// be held by another node.
func (g *Graph) SetLID(id NodeID, lid encap.LID) error {
	if !g.valid(id) {
		return fmt.Errorf("%w: node %d (graph has %d)", ErrBadNode, id, len(g.nodes))
	}
	if !lid.IsUnicast() || lid > encap.LIDMaxUnicast16B {
		return fmt.Errorf("%w: %v is not a unicast LID (1..%v)", ErrBadLID, lid, encap.LIDMaxUnicast16B)
	}
	if o, ok := g.byLID[lid]; ok && o != id {
		return fmt.Errorf("%w: %v wanted by %#x is held by %#x", ErrLIDConflict, lid, g.nodes[id].GUID, g.nodes[o].GUID)
	}
	n := &g.nodes[id]
	if n.LID != 0 {
		delete(g.byLID, n.LID)
	}
	n.LID = lid
	g.byLID[lid] = id
	return nil
}
