package vema

import "github.com/opavnic/opavnic/encap"

// MADHeader is the common MAD header, struct ib_mad_hdr (24 bytes;
// docs/linux-compat.md §4.2):
//
//	off size field
//	  0    1 base_version    (0x80 for OPA)
//	  1    1 mgmt_class
//	  2    1 class_version
//	  3    1 method
//	  4    2 status
//	  6    2 class_specific
//	  8    8 tid
//	 16    2 attr_id
//	 18    2 resv
//	 20    4 attr_mod
type MADHeader struct {
	BaseVersion   uint8
	MgmtClass     Class
	ClassVersion  uint8
	Method        Method
	Status        Status
	ClassSpecific uint16
	TID           uint64
	AttrID        uint16
	Reserved      [2]byte
	AttrMod       uint32
}

// VPortIndex returns the vport a VEMA MAD addresses: attr_mod & 0xFF
// (vema_get_vport_num). The other bits are ignored by the kernel.
func (h *MADHeader) VPortIndex() uint8 { return uint8(h.AttrMod) }

// AppendBinary appends the 24-byte header to b.
func (h *MADHeader) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, h.BaseVersion, uint8(h.MgmtClass), h.ClassVersion, uint8(h.Method)) // 0-3
	b = be.AppendUint16(b, uint16(h.Status))                                          // 4
	b = be.AppendUint16(b, h.ClassSpecific)                                           // 6
	b = be.AppendUint64(b, h.TID)                                                     // 8
	b = be.AppendUint16(b, h.AttrID)                                                  // 16
	b = append(b, h.Reserved[:]...)                                                   // 18
	b = be.AppendUint32(b, h.AttrMod)                                                 // 20
	return b, nil
}

// MarshalBinary returns the 24-byte header.
func (h *MADHeader) MarshalBinary() ([]byte, error) { return marshal(MADHeaderLen, h.AppendBinary) }

// UnmarshalBinary decodes the first 24 bytes of b. Any MAD starts with it, so
// it is also how a receiver peeks at class, method and attribute first.
func (h *MADHeader) UnmarshalBinary(b []byte) error {
	if len(b) < MADHeaderLen {
		return errShort("MAD header", MADHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *MADHeader) decode(d *dec) {
	h.BaseVersion = d.u8()
	h.MgmtClass = Class(d.u8())
	h.ClassVersion = d.u8()
	h.Method = Method(d.u8())
	h.Status = Status(d.u16())
	h.ClassSpecific = d.u16()
	h.TID = d.u64()
	h.AttrID = d.u16()
	d.read(h.Reserved[:])
	h.AttrMod = d.u32()
}

// RMPP header flags and types (ib_mad.h IB_MGMT_RMPP_*).
const (
	RMPPTypeData  uint8 = 1
	RMPPTypeAck   uint8 = 2
	RMPPTypeStop  uint8 = 3
	RMPPTypeAbort uint8 = 4

	RMPPFlagActive uint8 = 1
	RMPPFlagFirst  uint8 = 2
	RMPPFlagLast   uint8 = 4
)

// RMPPHeader is struct ib_rmpp_hdr (12 bytes), MAD bytes 24-35:
//
//	off size field
//	  0    1 rmpp_version
//	  1    1 rmpp_type
//	  2    1 rmpp_rtime_flags  (bits 7:3 response time, 2:0 flags)
//	  3    1 rmpp_status
//	  4    4 seg_num
//	  8    4 paylen_newwin
type RMPPHeader struct {
	Version      uint8
	Type         uint8
	RTimeFlags   uint8
	Status       uint8
	SegNum       uint32
	PayLenNewWin uint32
}

// RespTime returns bits 7:3 of rmpp_rtime_flags.
func (r *RMPPHeader) RespTime() uint8 { return r.RTimeFlags >> 3 }

// Flags returns bits 2:0 of rmpp_rtime_flags.
func (r *RMPPHeader) Flags() uint8 { return r.RTimeFlags & 7 }

// AppendBinary appends the 12-byte RMPP header to b.
func (r *RMPPHeader) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, r.Version, r.Type, r.RTimeFlags, r.Status) // 0-3
	b = be.AppendUint32(b, r.SegNum)                         // 4
	b = be.AppendUint32(b, r.PayLenNewWin)                   // 8
	return b, nil
}

// MarshalBinary returns the 12-byte RMPP header.
func (r *RMPPHeader) MarshalBinary() ([]byte, error) {
	return marshal(RMPPHeaderLen, r.AppendBinary)
}

// UnmarshalBinary decodes the first 12 bytes of b.
func (r *RMPPHeader) UnmarshalBinary(b []byte) error {
	if len(b) < RMPPHeaderLen {
		return errShort("RMPP header", RMPPHeaderLen, len(b))
	}
	r.decode(&dec{b})
	return nil
}

func (r *RMPPHeader) decode(d *dec) {
	r.Version = d.u8()
	r.Type = d.u8()
	r.RTimeFlags = d.u8()
	r.Status = d.u8()
	r.SegNum = d.u32()
	r.PayLenNewWin = d.u32()
}

// VendorHeader is the 40-byte header of a vendor-class MAD such as VEMA's
// (struct opa_vnic_vema_mad up to data; ib_vendor_mad):
//
//	off size field
//	  0   24 common MAD header
//	 24   12 RMPP header
//	 36    1 reserved
//	 37    3 OUI (00 06 6A for VEMA)
//
// The VEMA answers a request by copying these 40 bytes and setting method
// GetResp and status (docs/linux-compat.md §4.1).
type VendorHeader struct {
	MADHeader
	RMPP     RMPPHeader
	Reserved uint8
	OUI      OUI
}

// AppendBinary appends the 40-byte vendor header to b.
func (h *VendorHeader) AppendBinary(b []byte) ([]byte, error) {
	b, _ = h.MADHeader.AppendBinary(b) // 0
	b, _ = h.RMPP.AppendBinary(b)      // 24
	b = append(b, h.Reserved)          // 36
	b = append(b, h.OUI[:]...)         // 37
	return b, nil
}

// MarshalBinary returns the 40-byte vendor header.
func (h *VendorHeader) MarshalBinary() ([]byte, error) {
	return marshal(VendorHeaderLen, h.AppendBinary)
}

// UnmarshalBinary decodes the first 40 bytes of b.
func (h *VendorHeader) UnmarshalBinary(b []byte) error {
	if len(b) < VendorHeaderLen {
		return errShort("vendor MAD header", VendorHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *VendorHeader) decode(d *dec) {
	h.MADHeader.decode(d)
	h.RMPP.decode(d)
	h.Reserved = d.u8()
	d.read(h.OUI[:])
}

// MAD is a VEMA MAD, struct opa_vnic_vema_mad: the vendor header and a
// 2008-byte data area, 2048 bytes on the wire. Requests from the EM and every
// VEMA response have this size. Attributes are encoded into the data area in
// place (attr.AppendBinary(m.Data[:0])) and decoded from it
// (attr.UnmarshalBinary(m.Data[:])).
type MAD struct {
	VendorHeader
	Data [VEMADataLen]byte
}

// AppendBinary appends the 2048-byte MAD to b.
func (m *MAD) AppendBinary(b []byte) ([]byte, error) {
	b, _ = m.VendorHeader.AppendBinary(b) // 0
	return append(b, m.Data[:]...), nil   // 40
}

// MarshalBinary returns the 2048-byte MAD.
func (m *MAD) MarshalBinary() ([]byte, error) { return marshal(MADSize, m.AppendBinary) }

// UnmarshalBinary decodes a 2048-byte MAD from the first 2048 bytes of b.
// A VEMA trap (272 bytes) is a TrapMAD instead.
func (m *MAD) UnmarshalBinary(b []byte) error {
	if len(b) < MADSize {
		return errShort("VEMA MAD", MADSize, len(b))
	}
	d := dec{b}
	m.VendorHeader.decode(&d)
	d.read(m.Data[:])
	return nil
}

// Notice types and trap opcodes of VEMA traps (opa_vnic_encap.h).
const (
	// NoticeTypeInfo is OPA_INTEL_EMA_NOTICE_TYPE_INFO.
	NoticeTypeInfo uint8 = 0x04
	// VEMANoticeGenType is the gen_type of every VEMA notice: the type in
	// bits 7:1, bit 0 (generic) clear, 0x04<<1.
	VEMANoticeGenType uint8 = NoticeTypeInfo << 1

	TrapIfaceUcastMACChange uint8 = 1 // OPA_VESWPORT_TRAP_IFACE_UCAST_MAC_CHANGE
	TrapIfaceMcastMACChange uint8 = 2 // OPA_VESWPORT_TRAP_IFACE_MCAST_MAC_CHANGE
	TrapEthLinkStatusChange uint8 = 3 // OPA_VESWPORT_TRAP_ETH_LINK_STATUS_CHANGE
)

// TrapMAD is a VEMA trap as it travels (docs/linux-compat.md §4.9): vendor
// header (method Trap, attribute Notice), the 96-byte notice and zeros up to
// the 232-byte data length the kernel sends, 272 bytes in all.
//
//	off size field
//	  0   40 vendor header
//	 40   96 notice (opa_vnic_notice_attr)
//	136  136 rest of the data, zero when the kernel sends it
type TrapMAD struct {
	VendorHeader
	Notice Notice
	Pad    [TrapDataLen - NoticeLen]byte
}

// AppendBinary appends the 272-byte trap MAD to b.
func (t *TrapMAD) AppendBinary(b []byte) ([]byte, error) {
	b, _ = t.VendorHeader.AppendBinary(b) // 0
	b, _ = t.Notice.AppendBinary(b)       // 40
	return append(b, t.Pad[:]...), nil    // 136
}

// MarshalBinary returns the 272-byte trap MAD.
func (t *TrapMAD) MarshalBinary() ([]byte, error) { return marshal(TrapMADLen, t.AppendBinary) }

// UnmarshalBinary decodes a trap MAD from the first 272 bytes of b.
func (t *TrapMAD) UnmarshalBinary(b []byte) error {
	if len(b) < TrapMADLen {
		return errShort("VEMA trap MAD", TrapMADLen, len(b))
	}
	d := dec{b}
	t.VendorHeader.decode(&d)
	t.Notice.decode(&d)
	d.read(t.Pad[:])
	return nil
}

// Notice is the VEMA notice attribute, struct opa_vnic_notice_attr (96
// bytes), with the trap payload (struct opa_veswport_trap) at the start of its
// raw data:
//
//	off size field
//	  0    1 gen_type      (VEMANoticeGenType, 0x08)
//	  1    3 oui           (00 06 6A)
//	  4    2 trap_num      (0: the kernel does not set it)
//	  6    2 toggle_count
//	  8    4 issuer_lid    (the vport's encap_slid)
//	 12    4 reserved
//	 16   16 issuer_gid
//	 32   16 raw_data[0:16]: opa_veswport_trap
//	 48   48 raw_data[16:64]
type Notice struct {
	GenType     uint8
	OUI         OUI
	TrapNum     uint16
	ToggleCount uint16
	IssuerLID   encap.LID
	Reserved    [4]byte
	IssuerGID   encap.GID
	Trap        VESWPortTrap
	RawDataRest [64 - VESWPortTrapLen]byte
}

// AppendBinary appends the 96-byte notice to b.
func (n *Notice) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, n.GenType)                    // 0
	b = append(b, n.OUI[:]...)                  // 1
	b = be.AppendUint16(b, n.TrapNum)           // 4
	b = be.AppendUint16(b, n.ToggleCount)       // 6
	b = be.AppendUint32(b, uint32(n.IssuerLID)) // 8
	b = append(b, n.Reserved[:]...)             // 12
	b = append(b, n.IssuerGID[:]...)            // 16
	b, _ = n.Trap.AppendBinary(b)               // 32
	return append(b, n.RawDataRest[:]...), nil  // 48
}

// MarshalBinary returns the 96-byte notice.
func (n *Notice) MarshalBinary() ([]byte, error) { return marshal(NoticeLen, n.AppendBinary) }

// UnmarshalBinary decodes the first 96 bytes of b.
func (n *Notice) UnmarshalBinary(b []byte) error {
	if len(b) < NoticeLen {
		return errShort("VEMA notice", NoticeLen, len(b))
	}
	n.decode(&dec{b})
	return nil
}

func (n *Notice) decode(d *dec) {
	n.GenType = d.u8()
	d.read(n.OUI[:])
	n.TrapNum = d.u16()
	n.ToggleCount = d.u16()
	n.IssuerLID = encap.LID(d.u32())
	d.read(n.Reserved[:])
	d.read(n.IssuerGID[:])
	n.Trap.decode(d)
	d.read(n.RawDataRest[:])
}

// VESWPortTrap is the trap payload, struct opa_veswport_trap (16 bytes):
//
//	off size field
//	  0    2 fabric_id
//	  2    2 veswid
//	  4    4 veswportnum    (the vport's port_num from the EM)
//	  8    2 opaportnum     (physical port)
//	 10    1 veswportindex  (vport index)
//	 11    1 opcode         (Trap* constants)
//	 12    4 reserved
type VESWPortTrap struct {
	FabricID      uint16
	VESWID        encap.VESWID
	VESWPortNum   uint32
	OPAPortNum    uint16
	VESWPortIndex uint8
	Opcode        uint8
	Reserved      [4]byte
}

// AppendBinary appends the 16-byte trap payload to b.
func (t *VESWPortTrap) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, t.FabricID)       // 0
	b = be.AppendUint16(b, uint16(t.VESWID)) // 2
	b = be.AppendUint32(b, t.VESWPortNum)    // 4
	b = be.AppendUint16(b, t.OPAPortNum)     // 8
	b = append(b, t.VESWPortIndex, t.Opcode) // 10, 11
	return append(b, t.Reserved[:]...), nil  // 12
}

// MarshalBinary returns the 16-byte trap payload.
func (t *VESWPortTrap) MarshalBinary() ([]byte, error) {
	return marshal(VESWPortTrapLen, t.AppendBinary)
}

// UnmarshalBinary decodes the first 16 bytes of b.
func (t *VESWPortTrap) UnmarshalBinary(b []byte) error {
	if len(b) < VESWPortTrapLen {
		return errShort("VESWPortTrap", VESWPortTrapLen, len(b))
	}
	t.decode(&dec{b})
	return nil
}

func (t *VESWPortTrap) decode(d *dec) {
	t.FabricID = d.u16()
	t.VESWID = encap.VESWID(d.u16())
	t.VESWPortNum = d.u32()
	t.OPAPortNum = d.u16()
	t.VESWPortIndex = d.u8()
	t.Opcode = d.u8()
	d.read(t.Reserved[:])
}
