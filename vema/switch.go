package vema

import "github.com/opavnic/opavnic/encap"

// Switch attribute IDs not already in the SMP list (opa-ff stl_sm_types.h
// STL_MCLASS_ATTRIB_ID_*; docs/management.md §8.2).
const (
	SMPAttrLinearForwardingTable    uint16 = 0x0019
	SMPAttrMulticastForwardingTable uint16 = 0x001B
)

// Switch attribute sizes and per-SMP limits (opa-ff stl_sm_types.h).
const (
	SwitchInfoLen        = 84 // sizeof(STL_SWITCH_INFO)
	LFTBlockLen          = 64 // sizeof(STL_LINEAR_FORWARDING_TABLE): 64 one-byte ports
	LFTBlockEntries      = 64 // MAX_LFT_ELEMENTS_BLOCK
	MFTBlockEntries      = 8  // STL_NUM_MFT_ELEMENTS_BLOCK: 8 port masks of 64 bits
	MFTBlockLen          = MFTBlockEntries * 8
	MFTPositions         = 4                                // STL_NUM_MFT_POSITIONS_MASK: 4 x 64 ports = 256
	PortStateInfoLen     = 8                                // sizeof(STL_PORT_STATE_INFO), one port
	AggregateHeaderLen   = 8                                // sizeof(STL_AGGREGATE) before its payload
	MaxAggregateSegments = 117                              // MAX_AGGREGATE_ATTRIBUTES = 1872 / 16
	MaxAggregateRequest  = 127                              // RequestLength is 7 bits, in 8-byte units
	LFTMaxBlock          = 0x3FFFF                          // MAX_LFT_BLOCK_NUM: 2^24 LIDs / 64
	MFTMaxBlock          = 0xFFFFF                          // STL_MAX_MFT_BLOCK_NUM: 2^23 MLIDs / 8
	LFTBlocksPerDRSMP    = SMPDRDataLen / LFTBlockLen       // 29, STL_NUM_LFT_BLOCKS_PER_DRSMP
	LFTBlocksPerLIDSMP   = SMPLIDDataLen / LFTBlockLen      // 31
	MFTBlocksPerDRSMP    = SMPDRDataLen / MFTBlockLen       // 29
	MFTBlocksPerLIDSMP   = SMPLIDDataLen / MFTBlockLen      // 31
	PortStatesPerDRSMP   = SMPDRDataLen / PortStateInfoLen  // 234, as opa-fm computes it
	PortStatesPerLIDSMP  = SMPLIDDataLen / PortStateInfoLen // 252
	switchInfoReserved52 = 15                               // Reserved26, 27, 28, 21, 22, 23
)

// LFTDrop is the LFT entry for "no route": the packet is dropped. opa-fm fills
// a new table with it before routing. A switch treats any entry above its
// NumPorts the same way; entry 0 names its own management port.
const LFTDrop uint8 = 0xFF

// SwitchInfo RoutingMode values (opa-ff STL_ROUTE_*).
const (
	RoutingModeNOP    uint8 = 0 // Enabled: no change
	RoutingModeLinear uint8 = 1 // linear forwarding table
)

// SwitchInfo CapabilityMask bits (opa-ff SWITCH_CAPABILITY_MASK).
const (
	SwitchCapIsAdaptiveRoutingSupported uint16 = 1 << 0
	SwitchCapIsAddrRangeConfigSupported uint16 = 1 << 2
	SwitchCapIsExtendedSCSCSupported    uint16 = 1 << 3
)

// SwitchInfo is the OPA SwitchInfo attribute, 0x0012 (opa-ff STL_SWITCH_INFO,
// 84 bytes; docs/management.md §8.2). Bit fields are separate Go fields;
// AppendBinary returns ErrRange for a value wider than its field.
//
//	off bits  field
//	  0       LinearFDBCap (4)
//	  4       PortGroupFDBCap (4)
//	  8       MulticastFDBCap (4)
//	 12       LinearFDBTop (4)
//	 16       MulticastFDBTop (4)
//	 20       CollectiveCap (4)
//	 24       CollectiveTop (4)
//	 28       reserved (4)
//	 32       IPAddrIPV6 (16)
//	 48       IPAddrIPV4 (4)
//	 52       reserved (15: Reserved26, 27, 28, 21, 22, 23)
//	 67 7:3   LifeTimeValue
//	 67 2     PortStateChange
//	 67 1:0   reserved
//	 68       reserved (2)
//	 70       PartitionEnforcementCap (2)
//	 72       PortGroupCap
//	 73       PortGroupTop
//	 74       RoutingMode.Supported
//	 75       RoutingMode.Enabled
//	 76 7:4   reserved
//	 76 3     EnhancedPort0
//	 76 2:0   reserved
//	 77 7:6   reserved
//	 77 5:3   CollectiveMask
//	 77 2:0   MulticastMask
//	 78 15    AdaptiveRouting.Enable
//	 78 14    AdaptiveRouting.Pause
//	 78 13:11 AdaptiveRouting.Algorithm
//	 78 10:8  AdaptiveRouting.Frequency
//	 78 7     AdaptiveRouting.LostRoutesOnly
//	 78 6:4   AdaptiveRouting.Threshold
//	 78 3:0   reserved
//	 80       CapabilityMask (2)
//	 82       CapabilityMaskCollectives (2)
type SwitchInfo struct {
	LinearFDBCap            uint32
	PortGroupFDBCap         uint32
	MulticastFDBCap         uint32
	LinearFDBTop            encap.LID
	MulticastFDBTop         encap.LID
	CollectiveCap           uint32
	CollectiveTop           encap.LID
	Reserved28              [4]byte
	IPAddrIPv6              [16]byte
	IPAddrIPv4              [4]byte
	Reserved52              [switchInfoReserved52]byte
	LifeTimeValue           uint8 // 5 bits
	PortStateChange         bool
	Reserved67              uint8 // 2 bits
	Reserved68              [2]byte
	PartitionEnforcementCap uint16
	PortGroupCap            uint8
	PortGroupTop            uint8
	RoutingModeSupported    uint8
	RoutingModeEnabled      uint8
	Reserved76High          uint8 // 4 bits, 7:4
	EnhancedPort0           bool
	Reserved76Low           uint8 // 3 bits, 2:0
	Reserved77              uint8 // 2 bits
	CollectiveMask          uint8 // 3 bits
	MulticastMask           uint8 // 3 bits
	AREnable                bool
	ARPause                 bool
	ARAlgorithm             uint8 // 3 bits
	ARFrequency             uint8 // 3 bits
	ARLostRoutesOnly        bool
	ARThreshold             uint8 // 3 bits
	ARReserved              uint8 // 4 bits
	CapabilityMask          uint16
	CapabilityMaskColl      uint16
}

// check returns ErrRange for the first bit field wider than its bits.
func (s *SwitchInfo) check() error {
	for _, f := range []struct {
		name string
		v    uint8
		bits uint
	}{
		{"SwitchInfo LifeTimeValue", s.LifeTimeValue, 5},
		{"SwitchInfo byte 67 reserved bits", s.Reserved67, 2},
		{"SwitchInfo byte 76 reserved bits 7:4", s.Reserved76High, 4},
		{"SwitchInfo byte 76 reserved bits 2:0", s.Reserved76Low, 3},
		{"SwitchInfo byte 77 reserved bits", s.Reserved77, 2},
		{"SwitchInfo CollectiveMask", s.CollectiveMask, 3},
		{"SwitchInfo MulticastMask", s.MulticastMask, 3},
		{"SwitchInfo AdaptiveRouting.Algorithm", s.ARAlgorithm, 3},
		{"SwitchInfo AdaptiveRouting.Frequency", s.ARFrequency, 3},
		{"SwitchInfo AdaptiveRouting.Threshold", s.ARThreshold, 3},
		{"SwitchInfo AdaptiveRouting reserved bits", s.ARReserved, 4},
	} {
		if !fits(uint64(f.v), f.bits) {
			return errRange(f.name, uint64(f.v), f.bits)
		}
	}
	return nil
}

// AppendBinary appends the 84-byte SwitchInfo to b.
func (s *SwitchInfo) AppendBinary(b []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return b, err
	}
	ar := uint16(b2u8(s.AREnable))<<15 | uint16(b2u8(s.ARPause))<<14 |
		uint16(s.ARAlgorithm)<<11 | uint16(s.ARFrequency)<<8 |
		uint16(b2u8(s.ARLostRoutesOnly))<<7 | uint16(s.ARThreshold)<<4 | uint16(s.ARReserved)
	b = be.AppendUint32(b, s.LinearFDBCap)                                      // 0
	b = be.AppendUint32(b, s.PortGroupFDBCap)                                   // 4
	b = be.AppendUint32(b, s.MulticastFDBCap)                                   // 8
	b = be.AppendUint32(b, uint32(s.LinearFDBTop))                              // 12
	b = be.AppendUint32(b, uint32(s.MulticastFDBTop))                           // 16
	b = be.AppendUint32(b, s.CollectiveCap)                                     // 20
	b = be.AppendUint32(b, uint32(s.CollectiveTop))                             // 24
	b = append(b, s.Reserved28[:]...)                                           // 28
	b = append(b, s.IPAddrIPv6[:]...)                                           // 32
	b = append(b, s.IPAddrIPv4[:]...)                                           // 48
	b = append(b, s.Reserved52[:]...)                                           // 52
	b = append(b, s.LifeTimeValue<<3|b2u8(s.PortStateChange)<<2|s.Reserved67)   // 67
	b = append(b, s.Reserved68[:]...)                                           // 68
	b = be.AppendUint16(b, s.PartitionEnforcementCap)                           // 70
	b = append(b, s.PortGroupCap, s.PortGroupTop)                               // 72, 73
	b = append(b, s.RoutingModeSupported, s.RoutingModeEnabled)                 // 74, 75
	b = append(b, s.Reserved76High<<4|b2u8(s.EnhancedPort0)<<3|s.Reserved76Low) // 76
	b = append(b, s.Reserved77<<6|s.CollectiveMask<<3|s.MulticastMask)          // 77
	b = be.AppendUint16(b, ar)                                                  // 78
	b = be.AppendUint16(b, s.CapabilityMask)                                    // 80
	return be.AppendUint16(b, s.CapabilityMaskColl), nil                        // 82
}

// MarshalBinary returns the 84-byte SwitchInfo.
func (s *SwitchInfo) MarshalBinary() ([]byte, error) { return marshal(SwitchInfoLen, s.AppendBinary) }

// UnmarshalBinary decodes the first 84 bytes of b.
func (s *SwitchInfo) UnmarshalBinary(b []byte) error {
	if len(b) < SwitchInfoLen {
		return errShort("SwitchInfo", SwitchInfoLen, len(b))
	}
	d := dec{b}
	s.LinearFDBCap = d.u32()
	s.PortGroupFDBCap = d.u32()
	s.MulticastFDBCap = d.u32()
	s.LinearFDBTop = encap.LID(d.u32())
	s.MulticastFDBTop = encap.LID(d.u32())
	s.CollectiveCap = d.u32()
	s.CollectiveTop = encap.LID(d.u32())
	d.read(s.Reserved28[:])
	d.read(s.IPAddrIPv6[:])
	d.read(s.IPAddrIPv4[:])
	d.read(s.Reserved52[:])
	v := d.u8()
	s.LifeTimeValue, s.PortStateChange, s.Reserved67 = v>>3, v&0x04 != 0, v&0x03
	d.read(s.Reserved68[:])
	s.PartitionEnforcementCap = d.u16()
	s.PortGroupCap = d.u8()
	s.PortGroupTop = d.u8()
	s.RoutingModeSupported = d.u8()
	s.RoutingModeEnabled = d.u8()
	v = d.u8()
	s.Reserved76High, s.EnhancedPort0, s.Reserved76Low = v>>4, v&0x08 != 0, v&0x07
	v = d.u8()
	s.Reserved77, s.CollectiveMask, s.MulticastMask = v>>6, v>>3&0x07, v&0x07
	ar := d.u16()
	s.AREnable, s.ARPause = ar&0x8000 != 0, ar&0x4000 != 0
	s.ARAlgorithm, s.ARFrequency = uint8(ar>>11&0x07), uint8(ar>>8&0x07)
	s.ARLostRoutesOnly = ar&0x0080 != 0
	s.ARThreshold, s.ARReserved = uint8(ar>>4&0x07), uint8(ar&0x0F)
	s.CapabilityMask = d.u16()
	s.CapabilityMaskColl = d.u16()
	return nil
}

// LFTBlock is one block of the LinearForwardingTable attribute, 0x0019
// (opa-ff STL_LINEAR_FORWARDING_TABLE): entry i of block n is the egress
// port for DLID 64*n + i. 0 is the switch's own management port, LFTDrop
// (or any port above NumPorts) drops. An LFT Get or Set carries N blocks
// back to back; see LFTAttrMod.
type LFTBlock [LFTBlockEntries]uint8

// AppendBinary appends the 64 entries to b.
func (l *LFTBlock) AppendBinary(b []byte) ([]byte, error) { return append(b, l[:]...), nil }

// MarshalBinary returns the 64 entries.
func (l *LFTBlock) MarshalBinary() ([]byte, error) { return marshal(LFTBlockLen, l.AppendBinary) }

// UnmarshalBinary decodes the first 64 bytes of b.
func (l *LFTBlock) UnmarshalBinary(b []byte) error {
	if len(b) < LFTBlockLen {
		return errShort("LFT block", LFTBlockLen, len(b))
	}
	copy(l[:], b)
	return nil
}

// LFTIndex returns the LFT block holding lid's entry and the entry's index in
// it. A LID above the table's 24 bits gives a block above LFTMaxBlock, which
// LFTAttrMod refuses.
func LFTIndex(lid encap.LID) (block uint32, entry uint8) {
	return uint32(lid) / LFTBlockEntries, uint8(uint32(lid) % LFTBlockEntries)
}

// LFTBlocks returns how many blocks, from block 0, cover DLIDs 0..top: what a
// switch stores and an SM writes for LinearFDBTop = top.
func LFTBlocks(top encap.LID) uint32 { return uint32(top)/LFTBlockEntries + 1 }

// MFTBlock is one block of the MulticastForwardingTable attribute, 0x001B
// (opa-ff STL_MULTICAST_FORWARDING_TABLE): 8 big-endian 64-bit port masks.
// Entry j of block n, at position p, is the mask of ports 64p..64p+63 for
// MLID offset 8*n + j (see MFTIndex); port q is bit q%64, bit 0 being the
// least significant (see MFTPortBit).
type MFTBlock [MFTBlockEntries]uint64

// AppendBinary appends the 64-byte block to b.
func (m *MFTBlock) AppendBinary(b []byte) ([]byte, error) {
	for _, v := range m {
		b = be.AppendUint64(b, v)
	}
	return b, nil
}

// MarshalBinary returns the 64-byte block.
func (m *MFTBlock) MarshalBinary() ([]byte, error) { return marshal(MFTBlockLen, m.AppendBinary) }

// UnmarshalBinary decodes the first 64 bytes of b.
func (m *MFTBlock) UnmarshalBinary(b []byte) error {
	if len(b) < MFTBlockLen {
		return errShort("MFT block", MFTBlockLen, len(b))
	}
	d := dec{b}
	for i := range m {
		m[i] = d.u64()
	}
	return nil
}

// MFTPortBit returns the position whose masks hold port and the port's bit
// in them (fm sm_multicast.c Mft_Position, Mft_PortmaskBit).
func MFTPortBit(port uint8) (position uint8, bit uint64) {
	return port / 64, 1 << (port % 64)
}

// MFTIndex returns the MFT block and entry of a 32-bit multicast LID
// (0xF0000000 + offset): offset/8 and offset%8. ok is false for a LID that is
// not multicast or whose offset is beyond the 2^23 entries the attribute
// addresses.
func MFTIndex(mlid encap.LID) (block uint32, entry uint8, ok bool) {
	if !mlid.IsMulticast() {
		return 0, 0, false
	}
	off := uint32(mlid - encap.LIDMulticastBase)
	if off > (MFTMaxBlock+1)*MFTBlockEntries-1 {
		return 0, 0, false
	}
	return off / MFTBlockEntries, uint8(off % MFTBlockEntries), true
}

// PortStateInfo is one port's entry of the PortStateInfo attribute, 0x0087
// (opa-ff STL_PORT_STATE_INFO, 8 bytes). A Get or Set carries N entries for
// ports P, P+1, ... back to back (PortsAttrMod). Bytes 0-3 are PortInfo bytes
// 16-19 and are kept whole the way PortInfo keeps them:
//
//	off bits field
//	  0      reserved
//	  1  7   reserved
//	  1  6   LEDEnabled
//	  1  5   IsSMConfigurationStarted
//	  1  4   NeighborNormal
//	  1  3:0 OfflineDisabledReason
//	  2      reserved
//	  3  7:4 PortPhysicalState
//	  3  3:0 PortState
//	  4      LinkWidthDowngradeTxActive (2)
//	  6      LinkWidthDowngradeRxActive (2)
type PortStateInfo struct {
	PortStatesReserved         uint8
	LEDEnableOfflineReason     uint8
	PortStatesReserved2        uint8
	PortPhysStatePortState     uint8
	LinkWidthDowngradeTxActive uint16
	LinkWidthDowngradeRxActive uint16
}

// Bits of PortStates byte 1 (PortInfo byte 17; opa-ff STL_PORT_STATES).
const (
	PortStatesLEDEnabled               uint8 = 1 << 6
	PortStatesIsSMConfigurationStarted uint8 = 1 << 5
	PortStatesNeighborNormal           uint8 = 1 << 4
	portStatesOfflineReasonMask        uint8 = 0x0F
)

// PortState returns the logical state, bits 3:0 of byte 3.
func (p *PortStateInfo) PortState() uint8 { return p.PortPhysStatePortState & piMaskPortState }

// SetPortState sets bits 3:0 of byte 3 (s masked to 4 bits).
func (p *PortStateInfo) SetPortState(s uint8) {
	p.PortPhysStatePortState = p.PortPhysStatePortState&piMaskPhysState | s&piMaskPortState
}

// PhysState returns the physical state, bits 7:4 of byte 3.
func (p *PortStateInfo) PhysState() uint8 { return p.PortPhysStatePortState >> 4 }

// SetPhysState sets bits 7:4 of byte 3 (s masked to 4 bits).
func (p *PortStateInfo) SetPhysState(s uint8) {
	p.PortPhysStatePortState = p.PortPhysStatePortState&piMaskPortState | (s<<4)&piMaskPhysState
}

// NeighborNormal reports bit 4 of byte 1: the link partner reached Armed,
// which Armed -> Active needs.
func (p *PortStateInfo) NeighborNormal() bool {
	return p.LEDEnableOfflineReason&PortStatesNeighborNormal != 0
}

// IsSMConfigurationStarted reports bit 5 of byte 1.
func (p *PortStateInfo) IsSMConfigurationStarted() bool {
	return p.LEDEnableOfflineReason&PortStatesIsSMConfigurationStarted != 0
}

// OfflineDisabledReason returns bits 3:0 of byte 1.
func (p *PortStateInfo) OfflineDisabledReason() uint8 {
	return p.LEDEnableOfflineReason & portStatesOfflineReasonMask
}

// AppendBinary appends the 8-byte entry to b.
func (p *PortStateInfo) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, p.PortStatesReserved, p.LEDEnableOfflineReason)  // 0, 1
	b = append(b, p.PortStatesReserved2, p.PortPhysStatePortState) // 2, 3
	b = be.AppendUint16(b, p.LinkWidthDowngradeTxActive)           // 4
	return be.AppendUint16(b, p.LinkWidthDowngradeRxActive), nil   // 6
}

// MarshalBinary returns the 8-byte entry.
func (p *PortStateInfo) MarshalBinary() ([]byte, error) {
	return marshal(PortStateInfoLen, p.AppendBinary)
}

// UnmarshalBinary decodes the first 8 bytes of b.
func (p *PortStateInfo) UnmarshalBinary(b []byte) error {
	if len(b) < PortStateInfoLen {
		return errShort("PortStateInfo", PortStateInfoLen, len(b))
	}
	d := dec{b}
	p.PortStatesReserved = d.u8()
	p.LEDEnableOfflineReason = d.u8()
	p.PortStatesReserved2 = d.u8()
	p.PortPhysStatePortState = d.u8()
	p.LinkWidthDowngradeTxActive = d.u16()
	p.LinkWidthDowngradeRxActive = d.u16()
	return nil
}

// AggregateHeader is the 8-byte head of one segment of the Aggregate
// attribute, 0x0080 (opa-ff STL_AGGREGATE; hfi1 struct opa_aggregate):
//
//	off bits  field
//	  0       AttributeID (2)
//	  2 15    Error
//	  2 14:7  reserved
//	  2 6:0   RequestLength, in 8-byte units
//	  4       AttributeModifier (4)
//
// The payload follows, 8*RequestLength bytes; the next segment starts right
// after it. AppendBinary returns ErrRange for a RequestLength above 127.
type AggregateHeader struct {
	AttrID        uint16
	Error         bool
	Reserved      uint8
	RequestLength uint8 // 7 bits
	AttrMod       uint32
}

// PayloadLen returns the payload size, 8*RequestLength.
func (h *AggregateHeader) PayloadLen() int { return 8 * int(h.RequestLength) }

// AppendBinary appends the 8-byte header to b.
func (h *AggregateHeader) AppendBinary(b []byte) ([]byte, error) {
	if !fits(uint64(h.RequestLength), 7) {
		return b, errRange("Aggregate RequestLength", uint64(h.RequestLength), 7)
	}
	b = be.AppendUint16(b, h.AttrID)                                                                // 0
	b = be.AppendUint16(b, uint16(b2u8(h.Error))<<15|uint16(h.Reserved)<<7|uint16(h.RequestLength)) // 2
	return be.AppendUint32(b, h.AttrMod), nil                                                       // 4
}

// MarshalBinary returns the 8-byte header.
func (h *AggregateHeader) MarshalBinary() ([]byte, error) {
	return marshal(AggregateHeaderLen, h.AppendBinary)
}

// UnmarshalBinary decodes the first 8 bytes of b.
func (h *AggregateHeader) UnmarshalBinary(b []byte) error {
	if len(b) < AggregateHeaderLen {
		return errShort("Aggregate segment header", AggregateHeaderLen, len(b))
	}
	d := dec{b}
	h.AttrID = d.u16()
	r := d.u16()
	h.Error, h.Reserved, h.RequestLength = r&0x8000 != 0, uint8(r>>7), uint8(r&0x7F)
	h.AttrMod = d.u32()
	return nil
}

// AggregateSegment is one segment: the header and its 8*RequestLength bytes
// of payload. AppendBinary returns ErrCount when len(Data) is not
// 8*RequestLength; UnmarshalBinary reads exactly that much.
type AggregateSegment struct {
	AggregateHeader
	Data []byte
}

// Len returns the encoded size, 8 + 8*RequestLength.
func (s *AggregateSegment) Len() int { return AggregateHeaderLen + s.PayloadLen() }

// AppendBinary appends the segment to b.
func (s *AggregateSegment) AppendBinary(b []byte) ([]byte, error) {
	if len(s.Data) != s.PayloadLen() {
		return b, ErrCount
	}
	b, err := s.AggregateHeader.AppendBinary(b)
	if err != nil {
		return b, err
	}
	return append(b, s.Data...), nil
}

// MarshalBinary returns the segment.
func (s *AggregateSegment) MarshalBinary() ([]byte, error) { return marshal(s.Len(), s.AppendBinary) }

// UnmarshalBinary decodes one segment from the start of b (Data copied).
func (s *AggregateSegment) UnmarshalBinary(b []byte) error {
	var h AggregateHeader
	if err := h.UnmarshalBinary(b); err != nil {
		return err
	}
	n := AggregateHeaderLen + h.PayloadLen()
	if len(b) < n {
		return errShort("Aggregate segment", n, len(b))
	}
	s.AggregateHeader, s.Data = h, cloneData(b[AggregateHeaderLen:n])
	return nil
}

// SplitAggregate decodes the n segments of an Aggregate SMP's data, in
// order. data is the SMP's data area: an SMA must pad a received request to
// the full area first, since opa-fm sends the last segment of a Get without
// its payload. ErrRange for n outside 1..MaxAggregateSegments (hfi1 answers
// that with status 0x001C), ErrShort when a segment runs past data.
func SplitAggregate(data []byte, n int) ([]AggregateSegment, error) {
	if _, err := AggregateAttrMod(n); err != nil {
		return nil, err
	}
	segs := make([]AggregateSegment, n)
	for i := range segs {
		if err := segs[i].UnmarshalBinary(data); err != nil {
			return nil, err
		}
		data = data[segs[i].Len():]
	}
	return segs, nil
}

var (
	_ codec = (*SwitchInfo)(nil)
	_ codec = (*LFTBlock)(nil)
	_ codec = (*MFTBlock)(nil)
	_ codec = (*PortStateInfo)(nil)
	_ codec = (*AggregateHeader)(nil)
	_ codec = (*AggregateSegment)(nil)
)
