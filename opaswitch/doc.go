// Package opaswitch is an emulated Omni-Path switch: external ports
// 1..NumPorts (48 by default, as an edge switch) and the management port 0.
// Each external port has at most one cable, a pair of UDP endpoints: the
// port's own and the one at the cable's other end (an HFI's or another
// switch port's), the only endpoint the port takes datagrams from, so any
// cable can be captured with tcpdump.
//
// Forwarding: a 16B packet goes out unchanged (its ICRC stays valid), by
// its DLID: a unicast DLID through the linear forwarding table (an entry 0
// is the switch's own SMA, 0xFF or a DLID above LinearFDBTop drops), a
// multicast DLID through the multicast forwarding table to every port of
// its mask but the one it came in on, the permissive DLID (directed-route
// SMPs) to the SMA. A port carries data only when Active; SMPs (SC 15)
// cross it from Init on. Whatever is not forwarded is counted on the port:
// malformed packets (never forwarded), datagrams from a stranger on the
// cable, DLIDs no table routes, ports that cannot carry the packet.
//
// The data plane is one goroutine (Switch.Run): epoll over every cable,
// a batch read from each ready port, and one batch sent per egress port;
// it allocates nothing and logs nothing per packet. Packets for port 0 are
// copied and handed to the SMA's goroutine (internal/handoff), so a slow
// answer never holds up forwarding.
//
// docs/fabric.md describes the switched fabric this is part of.
package opaswitch
