// Package tap is a VNIC's Linux netdev: a TAP device opened with
// IFF_VNET_HDR, so that the kernel hands over TCP and UDP super-frames
// (TSO/USO) with partial checksums, which this package cuts into frames
// (offload.go) and finishes, and so that runs of received TCP segments are
// written back as one super-frame (gro.go). It also creates the netdev in a
// network namespace, moves it between namespaces and back, keeps it
// persistent across a daemon's restart, and watches its link state, MTU,
// MAC and multicast list over netlink.
//
// Netdev is the interface a VNIC port drives; TAP implements it, and
// vnicd/taptest has an in-memory one for tests. The package is ours rather
// than a library such as water because those have no vnet_hdr and no
// offloads, which carry most of a TAP's throughput.
//
// It knows nothing of Omni-Path: frames in, frames out.
package tap
