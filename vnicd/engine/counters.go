package engine

import (
	"sync/atomic"

	"github.com/opavnic/opavnic/vnicd/tap"
)

// PortCounters are a VNIC port's counters, kept as the kernel's opa_vnic kept
// them (docs/linux-compat.md §2.7, §3, §5): the base counts are atomic; the
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

// Counter is one named counter, as ethtool -S shows it.
type Counter = tap.Counter

// Snapshot returns the counters of the kernel's ethtool -S (the 39 entries of
// opa_vnic_ethtool.c's vnic_gstrings_stats), in its order,
// then rx_bad_veswid and rx_bad_pkey.
func (c *PortCounters) Snapshot() []Counter {
	txErr := c.TxFifoErrors.Load() + c.TxCarrierErrors.Load() + c.TxDropState.Load() + c.TxDLIDZero.Load()
	rxErr := c.RxFifoErrors.Load() + c.RxBadVESWID.Load() + c.RxDropState.Load() + c.RxOversize.Load() +
		c.RxRunt.Load() + c.RxBadPKey.Load()
	out := []Counter{
		{Name: "rx_packets", Value: c.RxPackets.Load()},
		{Name: "tx_packets", Value: c.TxPackets.Load()},
		{Name: "rx_bytes", Value: c.RxBytes.Load()},
		{Name: "tx_bytes", Value: c.TxBytes.Load()},
		{Name: "rx_errors", Value: rxErr},
		{Name: "tx_errors", Value: txErr},
		{Name: "rx_dropped", Value: rxErr},
		{Name: "tx_dropped", Value: txErr},
		{Name: "tx_unicast", Value: c.TxUnicast.Load()},
		{Name: "tx_mcastbcast", Value: c.TxMcastBcast.Load()},
		{Name: "tx_untagged", Value: c.TxUntagged.Load()},
		{Name: "tx_vlan", Value: c.TxVLAN.Load()},
	}
	for i, name := range txLenNames {
		out = append(out, Counter{Name: name, Value: c.TxLen[i].Load()})
	}
	out = append(out,
		Counter{Name: "rx_unicast", Value: c.RxUnicast.Load()},
		Counter{Name: "rx_mcastbcast", Value: c.RxMcastBcast.Load()},
		Counter{Name: "rx_untagged", Value: c.RxUntagged.Load()},
		Counter{Name: "rx_vlan", Value: c.RxVLAN.Load()},
	)
	for i, name := range rxLenNames {
		out = append(out, Counter{Name: name, Value: c.RxLen[i].Load()})
	}
	return append(out,
		Counter{Name: "rx_fifo_errors", Value: c.RxFifoErrors.Load()},
		Counter{Name: "rx_length_errors", Value: c.RxOversize.Load() + c.RxRunt.Load()},
		Counter{Name: "tx_fifo_errors", Value: c.TxFifoErrors.Load()},
		Counter{Name: "tx_carrier_errors", Value: c.TxCarrierErrors.Load()},
		Counter{Name: "tx_dlid_zero", Value: c.TxDLIDZero.Load()},
		Counter{Name: "tx_drop_state", Value: c.TxDropState.Load()},
		Counter{Name: "rx_drop_state", Value: c.RxDropState.Load()},
		Counter{Name: "rx_oversize", Value: c.RxOversize.Load()},
		Counter{Name: "rx_runt", Value: c.RxRunt.Load()},
		Counter{Name: "rx_bad_veswid", Value: c.RxBadVESWID.Load()},
		Counter{Name: "rx_bad_pkey", Value: c.RxBadPKey.Load()},
	)
}

var (
	txLenNames = [numLenBuckets]string{"tx_64_size", "tx_65_127", "tx_128_255", "tx_256_511", "tx_512_1023", "tx_1024_1518", "tx_1519_max"}
	rxLenNames = [numLenBuckets]string{"rx_64_size", "rx_65_127", "rx_128_255", "rx_256_511", "rx_512_1023", "rx_1024_1518", "rx_1519_max"}
)
