package opaswitch

import "sync/atomic"

// PortCounters are one switch port's counters, named as the OPA
// PortCounters attribute names them (data in 8-byte flits), plus the
// emulator's own reasons for a drop. They are atomic: the data plane adds,
// anyone reads.
type PortCounters struct {
	XmitData, RcvData    atomic.Uint64 // flits (8 bytes) sent and received
	XmitPkts, RcvPkts    atomic.Uint64
	XmitDiscards         atomic.Uint64 // packets for this port it could not send: not Active, not cabled, refused by the kernel
	RcvErrors            atomic.Uint64 // malformed packets received (never forwarded)
	RcvSwitchRelayErrors atomic.Uint64 // packets received that no table entry routes
	RcvForeign           atomic.Uint64 // datagrams from an endpoint that is not the cable's other end
	RcvStateDrops        atomic.Uint64 // data packets received while the port was not Active
}

// CounterValue is one named counter.
type CounterValue struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Snapshot returns the counters under their OPA names, the emulator's own
// last.
func (c *PortCounters) Snapshot() []CounterValue {
	return []CounterValue{
		{"PortXmitData", c.XmitData.Load()},
		{"PortRcvData", c.RcvData.Load()},
		{"PortXmitPkts", c.XmitPkts.Load()},
		{"PortRcvPkts", c.RcvPkts.Load()},
		{"PortXmitDiscards", c.XmitDiscards.Load()},
		{"PortRcvErrors", c.RcvErrors.Load()},
		{"PortRcvSwitchRelayErrors", c.RcvSwitchRelayErrors.Load()},
		{"rcv_foreign", c.RcvForeign.Load()},
		{"rcv_state_drops", c.RcvStateDrops.Load()},
	}
}
