package vema

import "github.com/opavnic/opavnic/encap"

// SummaryCounters is the VESWPortSummaryCounters attribute (0x0020), struct
// opa_veswport_summary_counters (360 bytes; docs/linux-compat.md §4.8). Every
// counter is a big-endian u64.
//
//	off field            off field            off field
//	  0 vp_instance (2)   88 tx_64_size       176 rx_64_size
//	  2 vesw_id (2)       96 tx_65_127        184 rx_65_127
//	  4 veswport_num (4) 104 tx_128_255       192 rx_128_255
//	  8 tx_errors        112 tx_256_511       200 rx_256_511
//	 16 rx_errors        120 tx_512_1023      208 rx_512_1023
//	 24 tx_packets       128 tx_1024_1518     216 rx_1024_1518
//	 32 rx_packets       136 tx_1519_max      224 rx_1519_max
//	 40 tx_bytes         144 rx_unicast       232 reserved[16] (128 bytes)
//	 48 rx_bytes         152 rx_mcastbcast
//	 56 tx_unicast       160 rx_untagged
//	 64 tx_mcastbcast    168 rx_vlan
//	 72 tx_untagged
//	 80 tx_vlan
//
// The kernel fills vp_instance with the vport index and veswport_num with the
// physical port number.
type SummaryCounters struct {
	VPInstance   uint16
	VESWID       encap.VESWID
	VESWPortNum  uint32
	TxErrors     uint64
	RxErrors     uint64
	TxPackets    uint64
	RxPackets    uint64
	TxBytes      uint64
	RxBytes      uint64
	TxUnicast    uint64
	TxMcastBcast uint64
	TxUntagged   uint64
	TxVLAN       uint64
	Tx64         uint64
	Tx65To127    uint64
	Tx128To255   uint64
	Tx256To511   uint64
	Tx512To1023  uint64
	Tx1024To1518 uint64
	Tx1519Max    uint64
	RxUnicast    uint64
	RxMcastBcast uint64
	RxUntagged   uint64
	RxVLAN       uint64
	Rx64         uint64
	Rx65To127    uint64
	Rx128To255   uint64
	Rx256To511   uint64
	Rx512To1023  uint64
	Rx1024To1518 uint64
	Rx1519Max    uint64
	Reserved     [128]byte
}

// counters lists the u64 fields from byte 8 in wire order.
func (c *SummaryCounters) counters() [28]*uint64 {
	return [28]*uint64{
		&c.TxErrors, &c.RxErrors, &c.TxPackets, &c.RxPackets, &c.TxBytes, &c.RxBytes, // 8-48
		&c.TxUnicast, &c.TxMcastBcast, &c.TxUntagged, &c.TxVLAN, // 56-80
		&c.Tx64, &c.Tx65To127, &c.Tx128To255, &c.Tx256To511, &c.Tx512To1023, &c.Tx1024To1518, &c.Tx1519Max, // 88-136
		&c.RxUnicast, &c.RxMcastBcast, &c.RxUntagged, &c.RxVLAN, // 144-168
		&c.Rx64, &c.Rx65To127, &c.Rx128To255, &c.Rx256To511, &c.Rx512To1023, &c.Rx1024To1518, &c.Rx1519Max, // 176-224
	}
}

// AppendBinary appends the 360-byte counters to b.
func (c *SummaryCounters) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, c.VPInstance)     // 0
	b = be.AppendUint16(b, uint16(c.VESWID)) // 2
	b = be.AppendUint32(b, c.VESWPortNum)    // 4
	for _, p := range c.counters() {         // 8 + 8*i
		b = be.AppendUint64(b, *p)
	}
	return append(b, c.Reserved[:]...), nil // 232
}

// MarshalBinary returns the 360-byte counters.
func (c *SummaryCounters) MarshalBinary() ([]byte, error) {
	return marshal(SummaryCountersLen, c.AppendBinary)
}

// UnmarshalBinary decodes the first 360 bytes of b.
func (c *SummaryCounters) UnmarshalBinary(b []byte) error {
	if len(b) < SummaryCountersLen {
		return errShort("SummaryCounters", SummaryCountersLen, len(b))
	}
	d := dec{b}
	c.VPInstance = d.u16()
	c.VESWID = encap.VESWID(d.u16())
	c.VESWPortNum = d.u32()
	for _, p := range c.counters() {
		*p = d.u64()
	}
	d.read(c.Reserved[:])
	return nil
}

// ErrorCounters is the VESWPortErrorCounters attribute (0x0022), struct
// opa_veswport_error_counters (304 bytes; docs/linux-compat.md §4.8):
//
//	off field           off field           off field
//	  0 vp_instance (2)  64 tx_dlid_zero    128 rx_oversize
//	  2 vesw_id (2)      72 rsvd4           136 rsvd7
//	  4 veswport_num (4) 80 tx_logic        144 rx_eth_down
//	  8 tx_errors        88 rsvd5           152 rx_drop_state
//	 16 rx_errors        96 tx_drop_state   160 rx_logic
//	 24 rsvd0           104 rx_bad_veswid   168 rsvd8
//	 32 tx_smac_filt    112 rsvd6           176 rsvd9[16] (128 bytes)
//	 40 rsvd1           120 rx_runt
//	 48 rsvd2
//	 56 rsvd3
type ErrorCounters struct {
	VPInstance  uint16
	VESWID      encap.VESWID
	VESWPortNum uint32
	TxErrors    uint64
	RxErrors    uint64
	Rsvd0       [8]byte
	TxSMACFilt  uint64
	Rsvd1       [8]byte
	Rsvd2       [8]byte
	Rsvd3       [8]byte
	TxDLIDZero  uint64
	Rsvd4       [8]byte
	TxLogic     uint64
	Rsvd5       [8]byte
	TxDropState uint64
	RxBadVESWID uint64
	Rsvd6       [8]byte
	RxRunt      uint64
	RxOversize  uint64
	Rsvd7       [8]byte
	RxEthDown   uint64
	RxDropState uint64
	RxLogic     uint64
	Rsvd8       [8]byte
	Rsvd9       [128]byte
}

// AppendBinary appends the 304-byte counters to b.
func (c *ErrorCounters) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, c.VPInstance)     // 0
	b = be.AppendUint16(b, uint16(c.VESWID)) // 2
	b = be.AppendUint32(b, c.VESWPortNum)    // 4
	b = be.AppendUint64(b, c.TxErrors)       // 8
	b = be.AppendUint64(b, c.RxErrors)       // 16
	b = append(b, c.Rsvd0[:]...)             // 24
	b = be.AppendUint64(b, c.TxSMACFilt)     // 32
	b = append(b, c.Rsvd1[:]...)             // 40
	b = append(b, c.Rsvd2[:]...)             // 48
	b = append(b, c.Rsvd3[:]...)             // 56
	b = be.AppendUint64(b, c.TxDLIDZero)     // 64
	b = append(b, c.Rsvd4[:]...)             // 72
	b = be.AppendUint64(b, c.TxLogic)        // 80
	b = append(b, c.Rsvd5[:]...)             // 88
	b = be.AppendUint64(b, c.TxDropState)    // 96
	b = be.AppendUint64(b, c.RxBadVESWID)    // 104
	b = append(b, c.Rsvd6[:]...)             // 112
	b = be.AppendUint64(b, c.RxRunt)         // 120
	b = be.AppendUint64(b, c.RxOversize)     // 128
	b = append(b, c.Rsvd7[:]...)             // 136
	b = be.AppendUint64(b, c.RxEthDown)      // 144
	b = be.AppendUint64(b, c.RxDropState)    // 152
	b = be.AppendUint64(b, c.RxLogic)        // 160
	b = append(b, c.Rsvd8[:]...)             // 168
	return append(b, c.Rsvd9[:]...), nil     // 176
}

// MarshalBinary returns the 304-byte counters.
func (c *ErrorCounters) MarshalBinary() ([]byte, error) {
	return marshal(ErrorCountersLen, c.AppendBinary)
}

// UnmarshalBinary decodes the first 304 bytes of b.
func (c *ErrorCounters) UnmarshalBinary(b []byte) error {
	if len(b) < ErrorCountersLen {
		return errShort("ErrorCounters", ErrorCountersLen, len(b))
	}
	d := dec{b}
	c.VPInstance = d.u16()
	c.VESWID = encap.VESWID(d.u16())
	c.VESWPortNum = d.u32()
	c.TxErrors = d.u64()
	c.RxErrors = d.u64()
	d.read(c.Rsvd0[:])
	c.TxSMACFilt = d.u64()
	d.read(c.Rsvd1[:])
	d.read(c.Rsvd2[:])
	d.read(c.Rsvd3[:])
	c.TxDLIDZero = d.u64()
	d.read(c.Rsvd4[:])
	c.TxLogic = d.u64()
	d.read(c.Rsvd5[:])
	c.TxDropState = d.u64()
	c.RxBadVESWID = d.u64()
	d.read(c.Rsvd6[:])
	c.RxRunt = d.u64()
	c.RxOversize = d.u64()
	d.read(c.Rsvd7[:])
	c.RxEthDown = d.u64()
	c.RxDropState = d.u64()
	c.RxLogic = d.u64()
	d.read(c.Rsvd8[:])
	d.read(c.Rsvd9[:])
	return nil
}
