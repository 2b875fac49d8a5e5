package vema

import (
	"bytes"
	"errors"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

func TestSwitchSizes(t *testing.T) {
	sizes := map[string]int{"SwitchInfo": 84, "LFTBlock": 64, "MFTBlock": 64, "PortStateInfo": 8,
		"AggregateHeader": 8}
	for _, g := range switchGoldens() {
		want, ok := sizes[g.name]
		if !ok {
			continue
		}
		b, err := g.zero().MarshalBinary()
		if err != nil || len(b) != want {
			t.Errorf("%s: zero value encodes to %d bytes (%v), want %d", g.name, len(b), err, want)
		}
	}
	// opa-ff STL_NUM_LFT_BLOCKS_PER_DRSMP = 1872/64; opa-fm's PortStateInfo
	// limits 1872/8 and 2016/8; MAX_AGGREGATE_ATTRIBUTES = 1872/16.
	if LFTBlocksPerDRSMP != 29 || LFTBlocksPerLIDSMP != 31 || MFTBlocksPerDRSMP != 29 ||
		PortStatesPerDRSMP != 234 || PortStatesPerLIDSMP != 252 || MaxAggregateSegments != 117 {
		t.Error("per-SMP limits changed")
	}
}

// TestAttrModGolden checks the modifiers against the layouts opa-ff
// stl_sm_types.h draws and the opa-fm examples docs/management.md §8.2 cites.
func TestAttrModGolden(t *testing.T) {
	enc := func(am uint32, err error) uint32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return am
	}
	cases := []struct {
		name string
		got  uint32
		want uint32
	}{
		// opa-fm's discovery PortInfo Get: (1<<24) | 0x200 | port.
		{"PortInfo port 5 with S", enc(PortsAttrMod{NumPorts: 1, StartSMConfig: true, Port: 5}.Encode()), 0x01000205},
		{"PortInfoAttrMod", PortInfoAttrMod(5, true), 0x01000205},
		// opa-fm reads all ports of a 48-port switch: ((48+1) << 24) | 0.
		{"PortStateInfo all ports", enc(PortsAttrMod{NumPorts: 49}.Encode()), 0x31000000},
		{"PortInfo Set all from 1", enc(PortsAttrMod{NumPorts: 1, All: true, Port: 1}.Encode()), 0x01000101},
		// LFT: NNNN NNNN 0000 0ABB BBBB BBBB BBBB BBBB.
		{"LFT 2 blocks at 0x300", enc(LFTAttrMod{NumBlocks: 2, Block: 0x300}.Encode()), 0x02000300},
		{"LFT 29 blocks at 0", enc(LFTAttrMod{NumBlocks: 29}.Encode()), 0x1D000000},
		{"LFT all at last block", enc(LFTAttrMod{NumBlocks: 1, All: true, Block: LFTMaxBlock}.Encode()), 0x0107FFFF},
		// MFT: NNNN NNNN PP0A BBBB BBBB BBBB BBBB BBBB.
		{"MFT block 5 position 2", enc(MFTAttrMod{NumBlocks: 1, Position: 2, Block: 5}.Encode()), 0x01800005},
		{"MFT all", enc(MFTAttrMod{NumBlocks: 29, Position: 3, All: true, Block: MFTMaxBlock}.Encode()), 0x1DDFFFFF},
		{"Aggregate 3 segments", enc(AggregateAttrMod(3)), 3},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %#08x, want %#08x", c.name, c.got, c.want)
		}
	}
	if m := ParseLFTAttrMod(0x1D000300); m != (LFTAttrMod{NumBlocks: 29, Block: 0x300}) || m.DataLen() != 1856 {
		t.Errorf("ParseLFTAttrMod: %+v", m)
	}
	if m := ParseMFTAttrMod(0x01900005); m != (MFTAttrMod{NumBlocks: 1, Position: 2, All: true, Block: 5}) ||
		m.DataLen() != 64 {
		t.Errorf("ParseMFTAttrMod: %+v", m)
	}
	if m := ParsePortsAttrMod(0x01000205); m != (PortsAttrMod{NumPorts: 1, StartSMConfig: true, Port: 5}) {
		t.Errorf("ParsePortsAttrMod: %+v", m)
	}
}

// TestAttrModRoundTrip: every 32-bit modifier parses and encodes back to
// itself, reserved bits included (a sample of the space).
func TestAttrModRoundTrip(t *testing.T) {
	for i := uint64(0); i < 1<<32; i += 0x10001 * 7 {
		am := uint32(i) ^ uint32(i>>7)
		for name, f := range map[string]func(uint32) (uint32, error){
			"ports": func(a uint32) (uint32, error) { return ParsePortsAttrMod(a).Encode() },
			"LFT":   func(a uint32) (uint32, error) { return ParseLFTAttrMod(a).Encode() },
			"MFT":   func(a uint32) (uint32, error) { return ParseMFTAttrMod(a).Encode() },
		} {
			if got, err := f(am); err != nil || got != am {
				t.Fatalf("%s %#x: %#x %v", name, am, got, err)
			}
		}
	}
}

func TestSwitchRange(t *testing.T) {
	for name, err := range map[string]error{
		"LFT block":      second(LFTAttrMod{Block: LFTMaxBlock + 1}.Encode()),
		"LFT reserved":   second(LFTAttrMod{Reserved: 0x20}.Encode()),
		"MFT block":      second(MFTAttrMod{Block: MFTMaxBlock + 1}.Encode()),
		"MFT position":   second(MFTAttrMod{Position: 4}.Encode()),
		"MFT reserved":   second(MFTAttrMod{Reserved: 2}.Encode()),
		"ports reserved": second(PortsAttrMod{Reserved: 0x4000}.Encode()),
		"aggregate 0":    second(AggregateAttrMod(0)),
		"aggregate 118":  second(AggregateAttrMod(118)),
		"request length": second((&AggregateHeader{RequestLength: 128}).MarshalBinary()),
		"split 0":        second(SplitAggregate(make([]byte, 64), 0)),
	} {
		if !errors.Is(err, ErrRange) {
			t.Errorf("%s: %v, want ErrRange", name, err)
		}
	}
	seg := AggregateSegment{AggregateHeader: AggregateHeader{RequestLength: 1}, Data: make([]byte, 7)}
	if _, err := seg.MarshalBinary(); !errors.Is(err, ErrCount) {
		t.Errorf("payload shorter than RequestLength: %v, want ErrCount", err)
	}
	fields := map[string]func(*SwitchInfo){
		"LifeTimeValue":  func(s *SwitchInfo) { s.LifeTimeValue = 32 },
		"Reserved67":     func(s *SwitchInfo) { s.Reserved67 = 4 },
		"Reserved76High": func(s *SwitchInfo) { s.Reserved76High = 16 },
		"Reserved76Low":  func(s *SwitchInfo) { s.Reserved76Low = 8 },
		"Reserved77":     func(s *SwitchInfo) { s.Reserved77 = 4 },
		"CollectiveMask": func(s *SwitchInfo) { s.CollectiveMask = 8 },
		"MulticastMask":  func(s *SwitchInfo) { s.MulticastMask = 8 },
		"ARAlgorithm":    func(s *SwitchInfo) { s.ARAlgorithm = 8 },
		"ARFrequency":    func(s *SwitchInfo) { s.ARFrequency = 8 },
		"ARThreshold":    func(s *SwitchInfo) { s.ARThreshold = 8 },
		"ARReserved":     func(s *SwitchInfo) { s.ARReserved = 16 },
	}
	for name, set := range fields {
		s := switchInfoVal()
		set(&s)
		b, err := s.AppendBinary([]byte{1})
		if !errors.Is(err, ErrRange) || !bytes.Equal(b, []byte{1}) {
			t.Errorf("%s: %v, %x", name, err, b)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestSwitchHelpers(t *testing.T) {
	if b, e := LFTIndex(0xC000); b != 0x300 || e != 0 {
		t.Errorf("LFTIndex(0xC000) = %#x, %d", b, e)
	}
	if b, e := LFTIndex(0xC3FF); b != 0x30F || e != 63 {
		t.Errorf("LFTIndex(0xC3FF) = %#x, %d", b, e)
	}
	if n := LFTBlocks(0xBFFF); n != 0x300 {
		t.Errorf("LFTBlocks(0xBFFF) = %#x", n)
	}
	if n := LFTBlocks(0); n != 1 {
		t.Errorf("LFTBlocks(0) = %d", n)
	}
	for _, c := range []struct {
		port uint8
		pos  uint8
		bit  uint64
	}{{0, 0, 1}, {63, 0, 1 << 63}, {64, 1, 1}, {200, 3, 1 << 8}, {255, 3, 1 << 63}} {
		if p, b := MFTPortBit(c.port); p != c.pos || b != c.bit {
			t.Errorf("MFTPortBit(%d) = %d, %#x", c.port, p, b)
		}
	}
	for _, c := range []struct {
		lid   encap.LID
		block uint32
		entry uint8
		ok    bool
	}{
		{0xF0000000, 0, 0, true}, {0xF0000011, 2, 1, true}, {0xF07FFFFF, MFTMaxBlock, 7, true},
		{0xF0800000, 0, 0, false}, {encap.LIDPermissive, 0, 0, false}, {0xC000, 0, 0, false},
	} {
		if b, e, ok := MFTIndex(c.lid); b != c.block || e != c.entry || ok != c.ok {
			t.Errorf("MFTIndex(%#x) = %#x, %d, %v", c.lid, b, e, ok)
		}
	}
	p := PortStateInfo{LEDEnableOfflineReason: 0x35, PortPhysStatePortState: 0x54}
	if !p.NeighborNormal() || !p.IsSMConfigurationStarted() || p.OfflineDisabledReason() != 5 ||
		p.PortState() != PortStateActive || p.PhysState() != PhysStateLinkUp {
		t.Errorf("PortStateInfo accessors: %+v", p)
	}
	p.SetPortState(PortStateArmed)
	p.SetPhysState(PhysStatePolling)
	if p.PortPhysStatePortState != 0x23 {
		t.Errorf("setters: %#x", p.PortPhysStatePortState)
	}
}

// TestSplitAggregate decodes opa-fm's discovery Aggregate for a switch
// (NodeDescription 8, PortInfo 31, SwitchInfo 11; 424 bytes) from bytes
// written at the segment offsets.
func TestSplitAggregate(t *testing.T) {
	data := make([]byte, SMPDRDataLen)
	put(data, 0, 0x00, 0x10, 0x00, 0x08, 0, 0, 0, 0)              // NodeDescription, RequestLength 8
	put(data, 8, []byte("S1")...)                                 // its payload
	put(data, 72, 0x00, 0x15, 0x00, 0x1F, 0x01, 0x00, 0x02, 0x03) // PortInfo, 31, N=1 S port 3
	put(data, 328, 0x00, 0x12, 0x00, 0x0B, 0, 0, 0, 0)            // SwitchInfo, 11
	segs, err := SplitAggregate(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 3 || segs[0].AttrID != SMPAttrNodeDescription || string(segs[0].Data[:2]) != "S1" ||
		segs[1].AttrID != SMPAttrPortInfo || segs[1].AttrMod != 0x01000203 || len(segs[1].Data) != 248 ||
		segs[2].AttrID != SMPAttrSwitchInfo || len(segs[2].Data) != 88 {
		t.Fatalf("segments: %+v", segs)
	}
	end := segs[2].Len() + 328
	if end != 424 {
		t.Fatalf("aggregate ends at %d, want 424", end)
	}
	if _, err := SplitAggregate(data[:end-1], 3); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
}

// TestSwitchSMPGolden checks whole SMPs carrying the switch tables, written
// by hand: header offsets of struct opa_smp, modifiers as opa-ff draws them,
// the blocks back to back from the data offset.
func TestSwitchSMPGolden(t *testing.T) {
	build := func(s SMP, blocks ...codec) []byte {
		t.Helper()
		for _, b := range blocks {
			var err error
			if s.Data, err = b.AppendBinary(s.Data); err != nil {
				t.Fatal(err)
			}
		}
		out, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	am := func(v uint32, err error) uint32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// LID-routed Set of LFT blocks 0x300 and 0x301, as opa-fm's multiblock
	// writes once a switch is reachable.
	var drop LFTBlock
	for i := range drop {
		drop[i] = LFTDrop
	}
	lft := goldenLFTBlock().val.(*LFTBlock)
	got := build(SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: MethodSet, TID: 0x10, AttrID: SMPAttrLinearForwardingTable,
		AttrMod: am(LFTAttrMod{NumBlocks: 2, Block: 0x300}.Encode())}}, lft, &drop)
	want := make([]byte, 32+128)
	put(want, 0, 0x80, 0x01, 0x80, 0x02)             // base, LID routed, class_version, Set
	put(want, 15, 0x10)                              // tid
	put(want, 16, 0x00, 0x19)                        // LinearForwardingTable
	put(want, 20, 0x02, 0x00, 0x03, 0x00)            // N = 2, block 0x300
	put(want, 32, lftBlockBytes()...)                // block 0x300
	put(want, 96, bytes.Repeat([]byte{0xFF}, 64)...) // block 0x301: no routes
	if !bytes.Equal(got, want) {
		t.Fatalf("LFT Set:\n got %x\nwant %x", got, want)
	}

	// LID-routed Set of MFT block 2, position 1 (ports 64-127).
	mft := goldenMFTBlock().val.(*MFTBlock)
	got = build(SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: MethodSet, TID: 0x11, AttrID: SMPAttrMulticastForwardingTable,
		AttrMod: am(MFTAttrMod{NumBlocks: 1, Position: 1, Block: 2}.Encode())}}, mft)
	want = make([]byte, 32+64)
	put(want, 0, 0x80, 0x01, 0x80, 0x02)
	put(want, 15, 0x11)
	put(want, 16, 0x00, 0x1B)             // MulticastForwardingTable
	put(want, 20, 0x01, 0x40, 0x00, 0x02) // N = 1, position 1 (bits 23:22), block 2
	put(want, 32, mftBlockBytes()...)
	if !bytes.Equal(got, want) {
		t.Fatalf("MFT Set:\n got %x\nwant %x", got, want)
	}

	// DR GetResp of PortStateInfo for ports 0-2 of a switch one hop away:
	// port 0 Active, port 1 Active/LinkUp, port 2 Down/Polling.
	ps := []PortStateInfo{{PortPhysStatePortState: 0x54}, {LEDEnableOfflineReason: 0x10, PortPhysStatePortState: 0x54,
		LinkWidthDowngradeTxActive: 8, LinkWidthDowngradeRxActive: 8}, {PortPhysStatePortState: 0x21}}
	s := SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnDirectedRoute, ClassVersion: 0x80,
		Method: MethodGetResp, Status: StatusDirection, HopPtr: 1, HopCnt: 1, TID: 0x12, AttrID: SMPAttrPortStateInfo,
		AttrMod: am(PortsAttrMod{NumPorts: 3}.Encode())}}
	s.DR.DRSLID, s.DR.DRDLID = encap.LIDPermissive, encap.LIDPermissive
	s.DR.InitialPath[1], s.DR.ReturnPath[1] = 1, 5
	got = build(s, &ps[0], &ps[1], &ps[2])
	want = make([]byte, 176+24)
	put(want, 0, 0x80, 0x81, 0x80, 0x81)         // base, DR, class_version, GetResp
	put(want, 4, 0x80, 0x00, 0x01, 0x01)         // D; hop_ptr 1, hop_cnt 1
	put(want, 15, 0x12)                          // tid
	put(want, 16, 0x00, 0x87)                    // PortStateInfo
	put(want, 20, 0x03, 0x00, 0x00, 0x00)        // N = 3 from port 0
	put(want, 32, 0xFF, 0xFF, 0xFF, 0xFF)        // dr_slid
	put(want, 36, 0xFF, 0xFF, 0xFF, 0xFF)        // dr_dlid
	put(want, 41, 0x01)                          // initial_path[1]
	put(want, 105, 0x05)                         // return_path[1]
	put(want, 176, 0, 0, 0, 0x54, 0, 0, 0, 0)    // port 0: LinkUp, Active
	put(want, 184, 0, 0x10, 0, 0x54, 0, 8, 0, 8) // port 1: NeighborNormal, LinkUp, Active, 4X/4X
	put(want, 192, 0, 0, 0, 0x21, 0, 0, 0, 0)    // port 2: Polling, Down
	if !bytes.Equal(got, want) {
		t.Fatalf("PortStateInfo GetResp:\n got %x\nwant %x", got, want)
	}
}
