package vema

import "fmt"

// SMP attribute modifiers, all in one place (hfi1 mad.h OPA_AM_*, opa-ff
// stl_sm_types.h; docs/linux-compat.md §9.5, docs/management.md "Switch
// attributes"). Bit 31 is the most significant bit of the BE32 field:
//
//	PortInfo, PortStateInfo   NNNN NNNN 0000 0000 0000 00SA PPPP PPPP  PortsAttrMod
//	LinearForwardingTable     NNNN NNNN 0000 0ABB BBBB BBBB BBBB BBBB  LFTAttrMod
//	MulticastForwardingTable  NNNN NNNN PP0A BBBB BBBB BBBB BBBB BBBB  MFTAttrMod
//	Aggregate                 segment count in 7:0, 1..MaxAggregateSegments
//	NodeInfo, NodeDescription, SwitchInfo: 0
//
// N counts ports or blocks, S starts SM configuration, A (Set only) applies
// the one attribute in the data to all ports or blocks from P or B, P is a
// port (0 = a switch's management port; an HFI answers for the receiving
// port whatever P says), B a block, PP an MFT position.
const (
	// SMPAttrModNPort1 is N = 1 in bits 31:24, which PortInfo and
	// PortStateInfo require on an HFI.
	SMPAttrModNPort1 uint32 = 1 << 24
	// SMPAttrModStartSMConfig is bit 9, S: start of SM configuration
	// (OPA_AM_START_SM_CFG); Init->Armed needs it first.
	SMPAttrModStartSMConfig uint32 = 1 << 9
	// SMPAttrModAllPorts is bit 8, A of PortInfo (Set only).
	SMPAttrModAllPorts uint32 = 1 << 8
)

// PortInfoAttrMod returns the attribute modifier an FM puts on a PortInfo
// Get or Set for one port: N = 1, the port number in bits 7:0, and S when
// startSMConfig.
func PortInfoAttrMod(port uint8, startSMConfig bool) uint32 {
	am := SMPAttrModNPort1 | uint32(port)
	if startSMConfig {
		am |= SMPAttrModStartSMConfig
	}
	return am
}

// PortsAttrMod is the modifier of PortInfo and PortStateInfo: N ports from
// port P. opa-fm reads every port of a switch with one PortStateInfo Get,
// PortsAttrMod{NumPorts: NumPorts + 1}. Reserved keeps bits 23:10 so that a
// parsed modifier encodes back unchanged.
type PortsAttrMod struct {
	NumPorts      uint8  // 31:24
	Reserved      uint16 // 23:10, 14 bits
	StartSMConfig bool   // 9
	All           bool   // 8, PortInfo Set only
	Port          uint8  // 7:0
}

// ParsePortsAttrMod splits a PortInfo or PortStateInfo modifier.
func ParsePortsAttrMod(am uint32) PortsAttrMod {
	return PortsAttrMod{
		NumPorts:      uint8(am >> 24),
		Reserved:      uint16(am >> 10 & 0x3FFF),
		StartSMConfig: am&SMPAttrModStartSMConfig != 0,
		All:           am&SMPAttrModAllPorts != 0,
		Port:          uint8(am),
	}
}

// Encode returns the modifier; ErrRange when Reserved is wider than 14 bits.
func (m PortsAttrMod) Encode() (uint32, error) {
	if !fits(uint64(m.Reserved), 14) {
		return 0, errRange("port modifier reserved bits", uint64(m.Reserved), 14)
	}
	am := uint32(m.NumPorts)<<24 | uint32(m.Reserved)<<10 | uint32(m.Port)
	if m.StartSMConfig {
		am |= SMPAttrModStartSMConfig
	}
	if m.All {
		am |= SMPAttrModAllPorts
	}
	return am, nil
}

// LFTAttrMod is the modifier of LinearForwardingTable: N blocks from block
// B, 64 entries each (LFTIndex gives the block of a LID). One DR SMP holds at
// most LFTBlocksPerDRSMP blocks, an LID-routed one LFTBlocksPerLIDSMP.
type LFTAttrMod struct {
	NumBlocks uint8  // 31:24
	Reserved  uint8  // 23:19, 5 bits
	All       bool   // 18, Set only
	Block     uint32 // 17:0, at most LFTMaxBlock
}

// ParseLFTAttrMod splits a LinearForwardingTable modifier.
func ParseLFTAttrMod(am uint32) LFTAttrMod {
	return LFTAttrMod{
		NumBlocks: uint8(am >> 24),
		Reserved:  uint8(am >> 19 & 0x1F),
		All:       am&(1<<18) != 0,
		Block:     am & LFTMaxBlock,
	}
}

// Encode returns the modifier; ErrRange when Block or Reserved is too wide.
func (m LFTAttrMod) Encode() (uint32, error) {
	if !fits(uint64(m.Block), 18) {
		return 0, errRange("LFT block", uint64(m.Block), 18)
	}
	if !fits(uint64(m.Reserved), 5) {
		return 0, errRange("LFT modifier reserved bits", uint64(m.Reserved), 5)
	}
	return uint32(m.NumBlocks)<<24 | uint32(m.Reserved)<<19 | uint32(b2u8(m.All))<<18 | m.Block, nil
}

// DataLen returns the data size of the blocks the modifier names, 64*N.
func (m LFTAttrMod) DataLen() int { return int(m.NumBlocks) * LFTBlockLen }

// MFTAttrMod is the modifier of MulticastForwardingTable: N blocks from block
// B, at position P (ports 64P..64P+63), 8 entries each (MFTIndex gives the
// block of an MLID, MFTPortBit the position of a port).
type MFTAttrMod struct {
	NumBlocks uint8  // 31:24
	Position  uint8  // 23:22, 2 bits
	Reserved  uint8  // 21, 1 bit
	All       bool   // 20, Set only
	Block     uint32 // 19:0, at most MFTMaxBlock
}

// ParseMFTAttrMod splits a MulticastForwardingTable modifier.
func ParseMFTAttrMod(am uint32) MFTAttrMod {
	return MFTAttrMod{
		NumBlocks: uint8(am >> 24),
		Position:  uint8(am >> 22 & 0x3),
		Reserved:  uint8(am >> 21 & 0x1),
		All:       am&(1<<20) != 0,
		Block:     am & MFTMaxBlock,
	}
}

// Encode returns the modifier; ErrRange when Block, Position or Reserved is
// too wide.
func (m MFTAttrMod) Encode() (uint32, error) {
	if !fits(uint64(m.Block), 20) {
		return 0, errRange("MFT block", uint64(m.Block), 20)
	}
	if !fits(uint64(m.Position), 2) {
		return 0, errRange("MFT position", uint64(m.Position), 2)
	}
	if !fits(uint64(m.Reserved), 1) {
		return 0, errRange("MFT modifier reserved bit", uint64(m.Reserved), 1)
	}
	return uint32(m.NumBlocks)<<24 | uint32(m.Position)<<22 | uint32(m.Reserved)<<21 |
		uint32(b2u8(m.All))<<20 | m.Block, nil
}

// DataLen returns the data size of the blocks the modifier names, 64*N.
func (m MFTAttrMod) DataLen() int { return int(m.NumBlocks) * MFTBlockLen }

// AggregateAttrMod returns the modifier of an Aggregate with n segments;
// ErrRange outside 1..MaxAggregateSegments.
func AggregateAttrMod(n int) (uint32, error) {
	if n < 1 || n > MaxAggregateSegments {
		return 0, fmt.Errorf("%w: Aggregate segment count %d, want 1..%d", ErrRange, n, MaxAggregateSegments)
	}
	return uint32(n), nil
}
