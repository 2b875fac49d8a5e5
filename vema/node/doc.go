// Package node is the node side of the management protocol
// (docs/management.md): what a Linux node with an OPA port and opa_vnic
// answers to the fabric manager, as functions from request bytes to
// response bytes. The wire format is package vema's; the manager's side is
// package vema/fm; vnicd sends and receives the datagrams and applies what
// is set.
//
// Agent is the VEMA agent of the node's one physical port
// (docs/linux-compat.md §4). It answers class 0x34 Gets and Sets of class
// version 0x80 with the Intel OUI: ClassPortInfo, VESWPortInfo and
// VESWPortMACEntries (Get, Set), DeleteVESW (Set), IfaceUcastMACs,
// IfaceMcastMACs, the summary and the error counters (Get); the reply is
// 2048 bytes, method GetResp. Statuses: 0x0000; 0x000C for an attribute (or
// a method on it) it does not serve and for a MAC table the port refuses;
// 0x001C for a vport that does not exist, one beyond vema.MaxVPort, a
// VESWPortInfo the port cannot run, and a MAC-table range out of bounds. A
// Set VESWPortInfo creates its vport; a Get of a missing one reads the
// power-on values with status 0. A Get or Set of another class version or OUI gets
// the MAD core's 24-byte reply with 0x000C; other methods and classes get
// none. The agent drives the vports through a PortController (in vnicd, the
// engine's ports; in tests, vema/node/nodetest).
//
// Trap builds the VEMA trap the caller sends when a vport's netdev changes its
// unicast MACs, its multicast list or its link: to the stored ClassPortInfo's
// trap_lid, none while that is 0 or the vport is missing, and at most
// TrapsInWindow per vport in a TrapWindow, as the kernel rate-limits them.
//
// SMA is the node's subnet management agent (docs/linux-compat.md §9.10):
// directed-route and LID-routed SMPs, Get NodeInfo, NodeDescription and
// PortInfo, Set PortInfo (LID, SM LID, subnet prefix, state, the trap and SA
// QPs). Statuses: 0x0004 for another class version (the request echoed), 0x0008
// for a method other than Get and Set, 0x000C for an attribute or a method on
// it that it does not serve, 0x001C for a bad attribute modifier and for a
// Set PortInfo whose LIDs or state it refuses; a directed-route reply has the
// D bit. Responses, Trap, TrapRepress, a short SMP and a directed-route one
// of 64 hops or more get no answer. Announce builds the trap 144 by which the
// node makes itself known to the SM.
//
// DirAssembler collects the blocks of a directory generation
// (docs/management.md §3, an emulation's own class) and hands out the
// generation once it holds every block; a block out of bounds is an error,
// which vnicd answers with 0x001C.
package node
