package engine

import "sync/atomic"

// PortCounters are a VNIC port's counters, kept as the kernel's opa_vnic kept
// them (kernel-reference.md §2.7, §3, §5): the base counts are atomic; the
// aggregates (rx_errors, tx_errors, rx_dropped, tx_dropped, rx_length_errors)
// are derived when read.
type PortCounters struct {
	TxPackets, RxPackets atomic.Uint64
	TxBytes, RxBytes     atomic.Uint64 // frame length + 4 (the FCS the fabric does not carry)

	TxUnicast, TxMcastBcast atomic.Uint64
	TxUntagged, TxVLAN      atomic.Uint64
	TxLen                   [numLenBuckets]atomic.Uint64
	RxUnicast, RxMcastBcast atomic.Uint64
	RxUntagged, RxVLAN      atomic.Uint64
	RxLen                   [numLenBuckets]atomic.Uint64

	RxFifoErrors    atomic.Uint64 // TAP write refused
	TxFifoErrors    atomic.Uint64 // frame could not be encapsulated
	TxCarrierErrors atomic.Uint64
	TxDLIDZero      atomic.Uint64
	TxDropState     atomic.Uint64
	RxDropState     atomic.Uint64
	RxOversize      atomic.Uint64
	RxRunt          atomic.Uint64
	RxBadVESWID     atomic.Uint64 // the kernel's rx_nohandler
	RxBadPKey       atomic.Uint64
}

const numLenBuckets = 7

// lenBucket returns the histogram bucket of a frame length (no FCS), as the
// kernel's update_len_counters.
func lenBucket(n int) int {
	switch {
	case n >= 1515:
		return 6
	case n >= 1020:
		return 5
	case n >= 508:
		return 4
	case n >= 252:
		return 3
	case n >= 124:
		return 2
	case n >= 61:
		return 1
	}
	return 0
}

// Counter is one named counter reading.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Snapshot returns the counters of the kernel's ethtool -S (the 39 entries of
// opa_vnic_ethtool.c's vnic_gstrings_stats), in its order,
// then rx_bad_veswid and rx_bad_pkey.
func (c *PortCounters) Snapshot() []Counter {
	txErr := c.TxFifoErrors.Load() + c.TxCarrierErrors.Load() + c.TxDropState.Load() + c.TxDLIDZero.Load()
	rxErr := c.RxFifoErrors.Load() + c.RxBadVESWID.Load() + c.RxDropState.Load() + c.RxOversize.Load() +
		c.RxRunt.Load() + c.RxBadPKey.Load()
	out := []Counter{
		{"rx_packets", c.RxPackets.Load()},
		{"tx_packets", c.TxPackets.Load()},
		{"rx_bytes", c.RxBytes.Load()},
		{"tx_bytes", c.TxBytes.Load()},
		{"rx_errors", rxErr},
		{"tx_errors", txErr},
		{"rx_dropped", rxErr},
		{"tx_dropped", txErr},
		{"tx_unicast", c.TxUnicast.Load()},
		{"tx_mcastbcast", c.TxMcastBcast.Load()},
		{"tx_untagged", c.TxUntagged.Load()},
		{"tx_vlan", c.TxVLAN.Load()},
	}
	for i, name := range txLenNames {
		out = append(out, Counter{name, c.TxLen[i].Load()})
	}
	out = append(out,
		Counter{"rx_unicast", c.RxUnicast.Load()},
		Counter{"rx_mcastbcast", c.RxMcastBcast.Load()},
		Counter{"rx_untagged", c.RxUntagged.Load()},
		Counter{"rx_vlan", c.RxVLAN.Load()},
	)
	for i, name := range rxLenNames {
		out = append(out, Counter{name, c.RxLen[i].Load()})
	}
	return append(out,
		Counter{"rx_fifo_errors", c.RxFifoErrors.Load()},
		Counter{"rx_length_errors", c.RxOversize.Load() + c.RxRunt.Load()},
		Counter{"tx_fifo_errors", c.TxFifoErrors.Load()},
		Counter{"tx_carrier_errors", c.TxCarrierErrors.Load()},
		Counter{"tx_dlid_zero", c.TxDLIDZero.Load()},
		Counter{"tx_drop_state", c.TxDropState.Load()},
		Counter{"rx_drop_state", c.RxDropState.Load()},
		Counter{"rx_oversize", c.RxOversize.Load()},
		Counter{"rx_runt", c.RxRunt.Load()},
		Counter{"rx_bad_veswid", c.RxBadVESWID.Load()},
		Counter{"rx_bad_pkey", c.RxBadPKey.Load()},
	)
}

var (
	txLenNames = [numLenBuckets]string{"tx_64_size", "tx_65_127", "tx_128_255", "tx_256_511", "tx_512_1023", "tx_1024_1518", "tx_1519_max"}
	rxLenNames = [numLenBuckets]string{"rx_64_size", "rx_65_127", "rx_128_255", "rx_256_511", "rx_512_1023", "rx_1024_1518", "rx_1519_max"}
)
