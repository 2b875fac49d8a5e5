// Package vnicd is the engine of the opavnic per-host daemon: VNIC ports on
// TAP netdevs (created, placed in a network namespace and configured over
// netlink), the configuration each port runs with (the kernel's opa_vesw_info
// and opa_per_veswport_info), the transmit decisions (DLID from the MAC
// table, the multicast DLID, the LID in a locally administered MAC or the
// default port; SC, RC, entropy, PKEY, vesw_id), the receive checks after the
// HFI's (vesw_id, port state, PKEY, runt and oversize), the kernel's counter
// set, the static-mode config, runtime VNICs (vnic_add, vnic_del, vnic_gc:
// checked as config entries, applied through the VEMA agent; runtime.go),
// in managed mode the claims of EM-made ports by containers (the same
// commands move a port into a namespace and back, and a claimed TAP outlives
// a vnicd restart; claims.go, tapmove.go), and the control socket.
//
// It implements ../shared/spec/kernel-reference.md §2 (transmit), §3
// (receive), §5 (counters) and §6 (netdev behaviour) on top of package hfi
// and package encap (WIRE.md). It knows nothing of UDP: the HFI carries its
// packets.
//
// Data path: one poll loop (dataplane.go) does a node's per-packet work in
// both directions: it waits in epoll_wait for the UDP socket and every TAP,
// which are kept out of the Go runtime's poller, then reads each ready one
// without waiting. A transmit batch goes from TAP read to HFI send; a receive
// batch's frames are queued per port and each port's frames written to its
// TAP in one call. Where the loop cannot be used (a transport or device that
// cannot be polled: test doubles), each port has its own transmit goroutine
// and receive runs on the HFI's goroutine. Port configuration is an immutable
// snapshot swapped atomically, so neither direction takes a lock, logs or
// allocates per frame.
package vnicd
