package hfi

import "sync/atomic"

// Counters are an HFI port's counters: OPA's port counters (data in 8-byte
// flits, as OPA counts PortXmitData and PortRcvData) and one counter per
// receive check of docs/wire.md §7. All are atomic and only ever grow.
type Counters struct {
	XmitData     atomic.Uint64 // flits handed to the wire
	RcvData      atomic.Uint64 // flits of packets that passed the checks
	XmitPkts     atomic.Uint64
	RcvPkts      atomic.Uint64
	RcvErrors    atomic.Uint64 // packets that failed any receive check
	XmitDiscards atomic.Uint64 // packets not sent: no route, or refused by the kernel

	RcvMalformed atomic.Uint64 // length or L2
	RcvBadICRC   atomic.Uint64
	RcvBadSource atomic.Uint64 // source endpoint is not SLID's
	RcvBadDLID   atomic.Uint64 // not for this port
	RcvUnknownL4 atomic.Uint64 // no receiver for the L4 type
	XmitNoRoute  atomic.Uint64 // DLID not in the directory

	// XmitPeerErrors counts the errors the kernel reported for datagrams
	// sent (the UDP transport's PeerErrors): ICMP port unreachable from a
	// peer's host with no vnicd listening, host or network unreachable.
	// Errors reported, not datagrams lost: hosts rate-limit their ICMP.
	XmitPeerErrors atomic.Uint64
	// PeerErrorFloods counts the times such errors came so fast (more
	// than 10000 a second: forged, most likely) that the transport stopped
	// taking them for 10 s, lest they starve its traffic.
	PeerErrorFloods atomic.Uint64
}

// CounterValue is one named counter reading. Its JSON keys are lower case,
// as the VNIC counters' (vnicctl --json hfi and counters agree).
type CounterValue struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Snapshot returns every counter with its name, in a fixed order.
func (c *Counters) Snapshot() []CounterValue {
	return []CounterValue{
		{"PortXmitData", c.XmitData.Load()},
		{"PortRcvData", c.RcvData.Load()},
		{"PortXmitPkts", c.XmitPkts.Load()},
		{"PortRcvPkts", c.RcvPkts.Load()},
		{"PortRcvErrors", c.RcvErrors.Load()},
		{"PortXmitDiscards", c.XmitDiscards.Load()},
		{"rcv_malformed", c.RcvMalformed.Load()},
		{"rcv_bad_icrc", c.RcvBadICRC.Load()},
		{"rcv_bad_source", c.RcvBadSource.Load()},
		{"rcv_bad_dlid", c.RcvBadDLID.Load()},
		{"rcv_unknown_l4", c.RcvUnknownL4.Load()},
		{"xmit_no_route", c.XmitNoRoute.Load()},
		{"xmit_peer_errors", c.XmitPeerErrors.Load()},
		{"peer_error_floods", c.PeerErrorFloods.Load()},
	}
}
