// Package engine is the VNIC side of one HFI: its ports, each on a netdev
// (tap.Netdev), the configuration each port runs with (the kernel's
// opa_vesw_info and opa_per_veswport_info), the transmit decisions (DLID
// from the MAC table, the multicast DLID, the LID in a locally administered
// MAC or the default port; SC, RC, entropy, PKEY, vesw_id), the receive
// checks after the HFI's (vesw_id, port state, PKEY, runt and oversize) and
// the receive demultiplexing by vesw_id, the kernel's counter set, and the
// poll loops that carry frames both ways.
//
// It implements docs/linux-compat.md §2 (transmit), §3 (receive), §5
// (counters) and §6 (netdev behaviour) on top of package hfi and package
// encap (docs/wire.md). It does not open sockets, read config files or speak
// VEMA: the daemon (package vnicd) makes the HFI, and the VEMA agent drives
// ports through SetPort and DeletePort.
//
// Data path: one poll loop per queue (dataplane.go) does a node's
// per-packet work in both directions: it waits in epoll_wait for its UDP
// socket and its queue of every TAP, which are kept out of the Go runtime's
// poller, then reads each ready one without waiting. A transmit batch goes
// from TAP read to HFI send; a receive batch's frames are queued per port
// and each port's frames written to its TAP in one call. Port configuration
// is an immutable snapshot swapped atomically, so neither direction takes a
// lock, logs or allocates per frame.
package engine
