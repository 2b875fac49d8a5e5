// Package route is the subnet manager's routing core for a switched fabric,
// with no I/O: a graph of switches and HFIs as a directed-route sweep finds
// them (Graph), shortest-path unicast routes spread over equal-cost ports and
// written as linear forwarding tables (Routing.LFTs), multicast trees written
// as multicast forwarding tables (Routing.MFTs), and generators for a
// two-level fat tree and a ring of switches (FatTree, Ring).
//
// The algorithms follow opa-fm's default "shortestpath" engine and its
// multicast spanning tree (docs/fabric.md): hop counts by BFS between
// switches, per-destination choice of one shortest-path egress port with
// destinations balanced over equal-cost ports, and one spanning tree of the
// switches, pruned per group to the branches that lead to members.
//
// Left to the caller (the sweep): sending SMPs, LID assignment (a Graph takes
// the LIDs it is given), LMC above 0, link speed and width (all links cost
// one hop), credit-loop (deadlock) avoidance on topologies other than fat
// trees, and send-only multicast members.
package route
