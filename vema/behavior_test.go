package vema

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestPowerOnVESWPortInfoInPlace(t *testing.T) {
	var m MAD
	pod := PowerOnVESWPortInfo()
	out, err := pod.AppendBinary(m.Data[:0])
	if err != nil || len(out) != VESWPortInfoLen || &out[0] != &m.Data[0] {
		t.Fatalf("AppendBinary into the data area: len %d, err %v, in place %v", len(out), err, &out[0] == &m.Data[0])
	}
	want := goldenMAD().val.(*MAD)
	if m.Data != want.Data {
		t.Fatalf("power-on data area differs from the kernel's at byte %d", firstDiff(m.Data[:], want.Data[:]))
	}
	var back VESWPortInfo
	if err := back.UnmarshalBinary(want.Data[:]); err != nil || back != pod {
		t.Fatalf("decode of the kernel's power-on reply: %+v, %v", back, err)
	}
}

func TestClassPortInfoFields(t *testing.T) {
	c := *goldenClassPortInfo().val.(*ClassPortInfo)
	if c.RespTime() != 18 || c.CapMask2() != CPICapMask2PRSupport || !c.SupportsOPAPathRecord() {
		t.Errorf("resp time %d, cap_mask2 %#x, OPA PR %v", c.RespTime(), c.CapMask2(), c.SupportsOPAPathRecord())
	}
	if c.TrapSL() != 5 || c.TrapQP() != 1 || c.TrapHopLimit() != 1 {
		t.Errorf("trap SL %d, QP %d, hop limit %d", c.TrapSL(), c.TrapQP(), c.TrapHopLimit())
	}
	c.SetRespTime(0xFF)
	if c.CapMask2RespTime != 0x8000001F {
		t.Errorf("SetRespTime touched cap_mask2: %#x", c.CapMask2RespTime)
	}
	c.SetCapMask2(0)
	if c.CapMask2RespTime != 0x1F || c.SupportsOPAPathRecord() {
		t.Errorf("SetCapMask2(0): %#x", c.CapMask2RespTime)
	}
	c.SetCapMask2(CPICapMask2PRSupport)
	if c.CapMask2RespTime != 0x8000001F {
		t.Errorf("PR support is bit 31 of the word: %#x", c.CapMask2RespTime)
	}
	c.TrapSLRsvd = 0x07
	c.SetTrapSL(0x3F)
	if c.TrapSLRsvd != 0xFF || c.TrapSL() != 0x1F {
		t.Errorf("SetTrapSL: %#x", c.TrapSLRsvd)
	}
	if VEMACPICapMask != 0xFF01 {
		t.Errorf("VEMA cap_mask %#x, kernel answers 0xFF01", VEMACPICapMask)
	}
}

func TestMACTableEntryDLID(t *testing.T) {
	if got := MakeDLIDSD(0xC00001, true); got != 0xC0000120 {
		t.Errorf("MakeDLIDSD = %#x", got)
	}
	if got := MakeDLIDSD(0xFFC00001, false); got != 0xC0000100 {
		t.Errorf("bits above 23 must be dropped: %#x", got)
	}
	e := MACTableEntry{DLIDSD: 0xABCDEF25}
	if e.DLID() != 0xABCDEF || !e.IsSourceMAC() {
		t.Errorf("DLID %#x, source %v", e.DLID(), e.IsSourceMAC())
	}
	e.SetDLID(0x000005)
	if e.DLIDSD != 0x00000525 {
		t.Errorf("SetDLID must keep side data: %#x", e.DLIDSD)
	}
	e.MAC = mac(0x02)
	if e.IsDelete() || !(&MACTableEntry{}).IsDelete() {
		t.Error("IsDelete")
	}
}

func TestMACTableHeaderValid(t *testing.T) {
	for _, c := range []struct {
		off, n uint16
		ok     bool
	}{
		{0, 0, true}, {0, 125, true}, {0, 126, false}, {1923, 125, true}, {1924, 125, false},
		{2048, 0, true}, {2049, 0, false}, {0xFFFF, 0xFFFF, false}, {2000, 48, true}, {2000, 49, false},
	} {
		h := MACTableHeader{Offset: c.off, NumEntries: c.n}
		if h.Valid() != c.ok {
			t.Errorf("offset %d num %d: Valid = %v", c.off, c.n, !c.ok)
		}
	}
}

func TestListLimits(t *testing.T) {
	// A Get request carries only the header; decoding entries from it is short.
	hdr := []byte{0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00}
	var m VESWPortMACEntries
	if err := m.UnmarshalBinary(hdr); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("3 entries announced, none sent: %v", err)
	}
	big := make([]byte, 4096)
	big[3] = 126
	if err := m.UnmarshalBinary(big); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("126 entries: %v", err)
	}
	m = VESWPortMACEntries{Entries: make([]MACTableEntry, 126)}
	m.NumEntries = 126
	if b, err := m.AppendBinary([]byte{1}); !errors.Is(err, ErrTooManyEntries) || len(b) != 1 {
		t.Errorf("encode 126 entries: %v, %d bytes", err, len(b))
	}
	m = VESWPortMACEntries{Entries: make([]MACTableEntry, 2)}
	if b, err := m.AppendBinary([]byte{1}); !errors.Is(err, ErrCount) || len(b) != 1 {
		t.Errorf("count mismatch: %v, %d bytes", err, len(b))
	}

	var l IfaceMACs
	big[3] = 0x4E
	big[2] = 0x01 // 334
	if err := l.UnmarshalBinary(big); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("334 MACs: %v", err)
	}
	l = IfaceMACs{MACs: make([][6]byte, 1)}
	if _, err := l.MarshalBinary(); !errors.Is(err, ErrCount) {
		t.Errorf("count mismatch: %v", err)
	}
	l = IfaceMACs{MACs: make([][6]byte, 334)}
	l.NumMACsInMsg = 334
	if _, err := l.MarshalBinary(); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("334 MACs encode: %v", err)
	}
	full := IfaceMACs{MACs: make([][6]byte, MaxIfaceMACsPerMAD)}
	full.NumMACsInMsg = MaxIfaceMACsPerMAD
	var mad MAD
	if out, err := full.AppendBinary(mad.Data[:0]); err != nil || len(out) > VEMADataLen {
		t.Errorf("333 MACs must fit the data area: %d, %v", len(out), err)
	}

	var h IfaceMACsHeader
	if h.Requested() != 333 {
		t.Errorf("num_macs_in_msg 0 asks for %d", h.Requested())
	}
	h.NumMACsInMsg = 7
	if h.Requested() != 7 {
		t.Errorf("Requested = %d", h.Requested())
	}
}

func TestDataLimits(t *testing.T) {
	lid := SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnLIDRouted}, Data: make([]byte, SMPLIDDataLen+1)}
	if _, err := lid.MarshalBinary(); !errors.Is(err, ErrTooLong) {
		t.Errorf("LID-routed data 2017: %v", err)
	}
	lid.Data = lid.Data[:SMPLIDDataLen]
	b, err := lid.MarshalBinary()
	if err != nil || len(b) != MADSize {
		t.Fatalf("full LID-routed SMP: %d, %v", len(b), err)
	}
	var s SMP
	if err := s.UnmarshalBinary(append(b, 0)); !errors.Is(err, ErrTooLong) {
		t.Errorf("2049-byte SMP: %v", err)
	}
	dr := SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnDirectedRoute}, Data: make([]byte, SMPDRDataLen)}
	if b, err = dr.MarshalBinary(); err != nil || len(b) != MADSize {
		t.Fatalf("full DR SMP: %d, %v", len(b), err)
	}
	if err := s.UnmarshalBinary(b[:100]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("DR SMP cut inside the route: %v", err)
	}
	dr.Data = append(dr.Data, 0)
	if _, err := dr.MarshalBinary(); !errors.Is(err, ErrTooLong) {
		t.Errorf("DR data 1873: %v", err)
	}
	// A LID-routed SMP does not carry the DR part even if it is set.
	lid = SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnLIDRouted}, DR: DRRoute{DRSLID: 1}}
	if b, _ := lid.MarshalBinary(); len(b) != SMPLIDHeaderLen {
		t.Errorf("LID-routed SMP is %d bytes", len(b))
	}

	sa := SAMAD{Data: make([]byte, SADataLen+1)}
	if _, err := sa.MarshalBinary(); !errors.Is(err, ErrTooLong) {
		t.Errorf("SA data 1993: %v", err)
	}
	var m SAMAD
	if err := m.UnmarshalBinary(make([]byte, MADSize+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("2049-byte SA MAD: %v", err)
	}
	if err := m.UnmarshalBinary(make([]byte, IBMADSize)); err != nil || len(m.Data) != IBSADataLen {
		t.Errorf("IB-sized SA MAD: %d bytes of data, %v", len(m.Data), err)
	}
}

func TestPathRecordRange(t *testing.T) {
	opa := []func(*PathRecord){
		func(r *PathRecord) { r.Reserved48 = 8 },
		func(r *PathRecord) { r.FlowLabel = 1 << 20 },
		func(r *PathRecord) { r.NumbPath = 0x80 },
		func(r *PathRecord) { r.Reserved56 = 4 },
		func(r *PathRecord) { r.QOSType = 4 },
		func(r *PathRecord) { r.Reserved58 = 8 },
		func(r *PathRecord) { r.SL = 32 },
		func(r *PathRecord) { r.MTUSelector = 4 },
		func(r *PathRecord) { r.MTU = 64 },
		func(r *PathRecord) { r.RateSelector = 4 },
		func(r *PathRecord) { r.Rate = 64 },
		func(r *PathRecord) { r.PacketLifeTimeSelector = 4 },
		func(r *PathRecord) { r.PacketLifeTime = 64 },
	}
	for i, f := range opa {
		r := pathRecordVal()
		f(&r)
		if b, err := r.AppendBinary([]byte{9}); !errors.Is(err, ErrRange) || !bytes.Equal(b, []byte{9}) {
			t.Errorf("OPA case %d: %v, %x", i, err, b)
		}
	}
	ib := []func(*IBPathRecord){
		func(r *IBPathRecord) { r.Reserved44 = 8 },
		func(r *IBPathRecord) { r.FlowLabel = 1 << 20 },
		func(r *IBPathRecord) { r.NumbPath = 0x80 },
		func(r *IBPathRecord) { r.QOSClass = 0x1000 },
		func(r *IBPathRecord) { r.SL = 16 },
		func(r *IBPathRecord) { r.MTU = 64 },
		func(r *IBPathRecord) { r.RateSelector = 4 },
		func(r *IBPathRecord) { r.PacketLifeTime = 64 },
	}
	for i, f := range ib {
		r := *goldenIBPathRecord().val.(*IBPathRecord)
		f(&r)
		if _, err := r.MarshalBinary(); !errors.Is(err, ErrRange) {
			t.Errorf("IB case %d: %v", i, err)
		}
	}
}

func TestPortInfoFields(t *testing.T) {
	p := *goldenPortInfo().val.(*PortInfo)
	if p.PortState() != PortStateActive || p.PhysState() != PhysStateLinkUp {
		t.Errorf("state %d, phys %d", p.PortState(), p.PhysState())
	}
	if p.MKeyProtect() != 1 || p.LMC() != 3 || p.SMServiceLevel() != 0x17 {
		t.Errorf("mkey protect %d, lmc %d, smsl %d", p.MKeyProtect(), p.LMC(), p.SMServiceLevel())
	}
	if p.SMTrapQPN() != 1 || p.SAQPN() != 1 || !p.ClientReregister() || p.SubnetTimeout() != 18 || !p.IsSM() {
		t.Errorf("trap qp %d, sa qp %d, rereg %v, timeout %d, IsSM %v",
			p.SMTrapQPN(), p.SAQPN(), p.ClientReregister(), p.SubnetTimeout(), p.IsSM())
	}
	p.SetPortState(PortStateInit)
	p.SetPhysState(PhysStatePolling)
	if p.PortPhysStatePortState != 0x22 {
		t.Errorf("byte 19 = %#x", p.PortPhysStatePortState)
	}
	p.SetPortState(0x1F) // masked to 4 bits
	if p.PortPhysStatePortState != 0x2F {
		t.Errorf("byte 19 = %#x", p.PortPhysStatePortState)
	}
	p.SetSMTrapQPN(0xAB000002) // masked to 24 bits, bits 31:24 kept
	p.SetSAQPN(0x00123456)
	if p.SMTrapQP != 0xFF000002 || p.SAQP != 0xEE123456 {
		t.Errorf("sm_trap_qp %#x, sa_qp %#x", p.SMTrapQP, p.SAQP)
	}
	if PortInfoAttrMod(1, false) != 0x01000001 || PortInfoAttrMod(1, true) != 0x01000201 {
		t.Error("PortInfoAttrMod")
	}
}

func TestHeaderHelpers(t *testing.T) {
	h := goldenMADHeader().val.(*MADHeader)
	if h.VPortIndex() != 5 {
		t.Errorf("vport index %d", h.VPortIndex())
	}
	if !MethodGetResp.IsResponse() || MethodGet.IsResponse() || !MethodGetTableResp.IsResponse() {
		t.Error("IsResponse")
	}
	r := goldenRMPPHeader().val.(*RMPPHeader)
	if r.RespTime() != 8 || r.Flags() != 7 {
		t.Errorf("rmpp resp time %d flags %d", r.RespTime(), r.Flags())
	}
	s := goldenSMPHeader().val.(*SMPHeader)
	if !s.IsDirectedRoute() || !s.Returning() {
		t.Error("SMP DR / D bit")
	}
	n := goldenSMPNotice().val.(*SMPNotice)
	if n.DetailLID() != 0x00C00007 {
		t.Errorf("detail LID %#x", n.DetailLID())
	}
	d := NodeDescriptionFrom("host-a hfi1_0")
	if d.String() != "host-a hfi1_0" {
		t.Errorf("node description %q", d.String())
	}
	long := NodeDescriptionFrom(string(bytes.Repeat([]byte{'x'}, 70)))
	if len(long.String()) != 64 {
		t.Errorf("64-byte description %q", long.String())
	}
}

func TestTrapNoticeInMAD(t *testing.T) {
	g := goldenTrapMAD()
	var n Notice
	if err := n.UnmarshalBinary(g.want[VendorHeaderLen:]); err != nil {
		t.Fatal(err)
	}
	if n != g.val.(*TrapMAD).Notice || n.GenType != 0x08 || n.OUI != IntelOUI ||
		n.Trap.Opcode != TrapEthLinkStatusChange {
		t.Errorf("notice at byte 40: %+v", n)
	}
	var h VendorHeader
	if err := h.UnmarshalBinary(g.want); err != nil || h.Method != MethodTrap || h.AttrID != AttrNotice {
		t.Errorf("peek at the trap's header: %+v, %v", h, err)
	}
	var m MAD
	if err := m.UnmarshalBinary(g.want); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a 272-byte trap is not a 2048-byte MAD: %v", err)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{MethodGetResp.String(), "GetResp"},
		{Method(0x42).String(), "Method(0x42)"},
		{ClassVEMA.String(), "VEMA"},
		{Class(0x99).String(), "Class(0x99)"},
		{StatusInvalidAttrValue.String(), "0x001C (invalid attribute value)"},
		{(StatusDirection | StatusUnsupportedMethodAttr).String(), "0x800C (unsupported method/attribute, D)"},
		{VEMAAttrName(AttrVESWPortMACEntries), "VESWPortMACEntries"},
		{VEMAAttrName(0x0099), "0x0099"},
		{IntelOUI.String(), "00-06-6A"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
