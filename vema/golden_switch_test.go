package vema

import "math/rand/v2"

// Golden vectors of the switch attributes, written by hand at the offsets
// and bit positions of opa-ff stl_sm_types.h (STL_SWITCH_INFO,
// STL_LINEAR_FORWARDING_TABLE, STL_MULTICAST_FORWARDING_TABLE,
// STL_PORT_STATE_INFO, STL_AGGREGATE) as docs/management.md §8.2
// summarises them. They join goldens(), so the golden,
// short-input, round-trip and fuzz tests cover them.

func switchGoldens() []golden {
	return []golden{
		goldenSwitchInfo(), goldenLFTBlock(), goldenMFTBlock(), goldenPortStateInfo(),
		goldenAggregateHeader(), goldenAggregateSegment(),
	}
}

func switchInfoBytes() []byte {
	w := make([]byte, 84)
	put(w, 0, 0x00, 0x00, 0xC0, 0x00)  // LinearFDBCap 0xC000 ("48K")
	put(w, 4, 0x01, 0x02, 0x03, 0x04)  // PortGroupFDBCap
	put(w, 8, 0x00, 0x00, 0x20, 0x00)  // MulticastFDBCap 8192
	put(w, 12, 0x00, 0x00, 0xC3, 0xFF) // LinearFDBTop
	put(w, 16, 0xF0, 0x00, 0x00, 0x10) // MulticastFDBTop, 32-bit MLID form
	put(w, 20, 0x11, 0x12, 0x13, 0x14) // CollectiveCap
	put(w, 24, 0x21, 0x22, 0x23, 0x24) // CollectiveTop
	put(w, 28, 0xE1, 0xE2, 0xE3, 0xE4) // Reserved
	put(w, 32, seq(0x30, 16)...)       // IPAddrIPV6
	put(w, 48, 0xC0, 0xA8, 0x01, 0x02) // IPAddrIPV4
	put(w, 52, seq(0x50, 15)...)       // Reserved26, 27, 28, 21, 22, 23
	put(w, 67, 0x6E)                   // LifeTimeValue 13 (7:3), PortStateChange 1 (2), Reserved20 2 (1:0)
	put(w, 68, 0xA1, 0xA2)             // Reserved24
	put(w, 70, 0x00, 0x20)             // PartitionEnforcementCap
	put(w, 72, 0x40, 0x41)             // PortGroupCap, PortGroupTop
	put(w, 74, 0x01, 0x01)             // RoutingMode.Supported, .Enabled: linear
	put(w, 76, 0xAD)                   // u2: Reserved20-23 1010, EnhancedPort0 1, Reserved 101
	put(w, 77, 0x8C)                   // Reserved 10, CollectiveMask 1, MulticastMask 4
	put(w, 78, 0x95, 0xB9)             // AR: Enable 1, Pause 0, Algorithm 2, Frequency 5 | LostRoutesOnly 1, Threshold 3, Reserved 1001
	put(w, 80, 0x00, 0x0C)             // CapabilityMask: IsExtendedSCSCSupported, IsAddrRangeConfigSupported
	put(w, 82, 0xBE, 0xEF)             // CapabilityMaskCollectives
	return w
}

func switchInfoVal() SwitchInfo {
	return SwitchInfo{
		LinearFDBCap: 0xC000, PortGroupFDBCap: 0x01020304, MulticastFDBCap: 8192,
		LinearFDBTop: 0xC3FF, MulticastFDBTop: 0xF0000010, CollectiveCap: 0x11121314,
		CollectiveTop: 0x21222324, Reserved28: [4]byte{0xE1, 0xE2, 0xE3, 0xE4},
		IPAddrIPv6: [16]byte(seq(0x30, 16)), IPAddrIPv4: [4]byte{192, 168, 1, 2},
		Reserved52:    [15]byte(seq(0x50, 15)),
		LifeTimeValue: 13, PortStateChange: true, Reserved67: 2, Reserved68: [2]byte{0xA1, 0xA2},
		PartitionEnforcementCap: 0x20, PortGroupCap: 0x40, PortGroupTop: 0x41,
		RoutingModeSupported: RoutingModeLinear, RoutingModeEnabled: RoutingModeLinear,
		Reserved76High: 0xA, EnhancedPort0: true, Reserved76Low: 5,
		Reserved77: 2, CollectiveMask: 1, MulticastMask: 4,
		AREnable: true, ARAlgorithm: 2, ARFrequency: 5, ARLostRoutesOnly: true, ARThreshold: 3, ARReserved: 9,
		CapabilityMask:     SwitchCapIsExtendedSCSCSupported | SwitchCapIsAddrRangeConfigSupported,
		CapabilityMaskColl: 0xBEEF,
	}
}

func goldenSwitchInfo() golden {
	v := switchInfoVal()
	return golden{name: "SwitchInfo", val: &v, want: switchInfoBytes(), zero: func() codec { return new(SwitchInfo) }}
}

// lftBlockBytes is block 0x300 of a switch whose DLIDs 0xC000.. go out of
// ports 1-3, its own LID 0xC004 to port 0, and the rest dropped.
func lftBlockBytes() []byte {
	w := make([]byte, 64)
	for i := range w {
		w[i] = 0xFF // no route
	}
	put(w, 0, 0x01, 0x02, 0x03, 0x01) // LIDs 0xC000-0xC003
	put(w, 4, 0x00)                   // 0xC004: the switch's own port 0
	put(w, 63, 0x24)                  // 0xC03F: port 36
	return w
}

func goldenLFTBlock() golden {
	var v LFTBlock
	for i := range v {
		v[i] = LFTDrop
	}
	v[0], v[1], v[2], v[3], v[4], v[63] = 1, 2, 3, 1, 0, 36
	return golden{name: "LFTBlock", val: &v, want: lftBlockBytes(), zero: func() codec { return new(LFTBlock) }}
}

// mftBlockBytes: entry 0 holds ports 0 and 63 (bit 0 of byte 7 and bit 7 of
// byte 0: bit 0 is the least significant bit of the BE64), entry 1 ports 1
// and 9, the others distinct bytes.
func mftBlockBytes() []byte {
	w := make([]byte, 64)
	put(w, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x01) // entry 0: ports 63 and 0
	put(w, 8, 0, 0, 0, 0, 0, 0, 0x02, 0x02) // entry 1: ports 9 and 1
	put(w, 16, seq(0x10, 48)...)            // entries 2-7
	return w
}

func goldenMFTBlock() golden {
	v := MFTBlock{1<<63 | 1<<0, 1<<9 | 1<<1,
		0x1011121314151617, 0x18191A1B1C1D1E1F, 0x2021222324252627,
		0x28292A2B2C2D2E2F, 0x3031323334353637, 0x38393A3B3C3D3E3F}
	return golden{name: "MFTBlock", val: &v, want: mftBlockBytes(), zero: func() codec { return new(MFTBlock) }}
}

func portStateInfoBytes() []byte {
	w := make([]byte, 8)
	put(w, 0, 0xE1)       // PortStates bits 31:24, reserved
	put(w, 1, 0x35)       // IsSMConfigurationStarted, NeighborNormal, OfflineDisabledReason 5
	put(w, 2, 0xE2)       // Reserved2
	put(w, 3, 0x54)       // PortPhysicalState 5 LinkUp, PortState 4 Active
	put(w, 4, 0x00, 0x08) // LinkWidthDowngradeTxActive 4X
	put(w, 6, 0x00, 0x04) // LinkWidthDowngradeRxActive 3X
	return w
}

func goldenPortStateInfo() golden {
	v := &PortStateInfo{PortStatesReserved: 0xE1, LEDEnableOfflineReason: 0x35, PortStatesReserved2: 0xE2,
		PortPhysStatePortState: 0x54, LinkWidthDowngradeTxActive: 8, LinkWidthDowngradeRxActive: 4}
	return golden{name: "PortStateInfo", val: v, want: portStateInfoBytes(), zero: func() codec { return new(PortStateInfo) }}
}

func goldenAggregateHeader() golden {
	v := &AggregateHeader{AttrID: SMPAttrSwitchInfo, Error: true, Reserved: 0x81, RequestLength: 11,
		AttrMod: 0x01020304}
	w := make([]byte, 8)
	put(w, 0, 0x00, 0x12)             // AttributeID SwitchInfo
	put(w, 2, 0xC0, 0x8B)             // Error 1, Reserved 0x81 (14:7), RequestLength 11
	put(w, 4, 0x01, 0x02, 0x03, 0x04) // AttributeModifier
	return golden{name: "AggregateHeader", val: v, want: w, zero: func() codec { return new(AggregateHeader) }}
}

// goldenAggregateSegment is opa-fm's discovery segment for NodeDescription:
// RequestLength 8 (64 bytes), modifier 0.
func goldenAggregateSegment() golden {
	desc := NodeDescriptionFrom("S1 edge")
	v := &AggregateSegment{AggregateHeader: AggregateHeader{AttrID: SMPAttrNodeDescription, RequestLength: 8},
		Data: desc[:]}
	w := make([]byte, 8+64)
	put(w, 0, 0x00, 0x10)           // AttributeID NodeDescription
	put(w, 2, 0x00, 0x08)           // RequestLength 8
	put(w, 8, []byte("S1 edge")...) // payload: NUL-padded text
	return golden{name: "AggregateSegment", val: v, want: w, zero: func() codec { return new(AggregateSegment) }}
}

// fixupSwitch makes a random switch attribute encodable: bit fields fit and
// an Aggregate payload matches its RequestLength.
func fixupSwitch(c codec, r *rand.Rand) {
	switch v := c.(type) {
	case *SwitchInfo:
		v.LifeTimeValue &= 0x1F
		v.Reserved67 &= 3
		v.Reserved76High &= 0xF
		v.Reserved76Low &= 7
		v.Reserved77 &= 3
		v.CollectiveMask &= 7
		v.MulticastMask &= 7
		v.ARAlgorithm &= 7
		v.ARFrequency &= 7
		v.ARThreshold &= 7
		v.ARReserved &= 0xF
	case *AggregateHeader:
		v.RequestLength &= 0x7F
	case *AggregateSegment:
		v.RequestLength &= 0x7F
		v.Data = randomBytes(r, v.PayloadLen())
	}
}

// randomSwitchWire returns random bytes a switch decoder accepts, or nil for
// a fixed-size type.
func randomSwitchWire(g golden, r *rand.Rand) []byte {
	if _, ok := g.val.(*AggregateSegment); ok {
		b := randomBytes(r, AggregateHeaderLen)
		return append(b, randomBytes(r, 8*int(b[3]&0x7F))...)
	}
	return nil
}
