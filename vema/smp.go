package vema

import (
	"bytes"

	"github.com/opavnic/opavnic/encap"
)

// SMPHeader is the first 32 bytes of struct opa_smp, the whole header of a
// LID-routed SMP (docs/linux-compat.md §9.3):
//
//	off size field
//	  0    1 base_version   (0x80)
//	  1    1 mgmt_class     (0x01 LID routed, 0x81 directed route)
//	  2    1 class_version  (0x80)
//	  3    1 method
//	  4    2 status         (bit 15: D, the direction of a DR SMP)
//	  6    1 hop_ptr        (DR only)
//	  7    1 hop_cnt        (DR only)
//	  8    8 tid
//	 16    2 attr_id
//	 18    2 resv
//	 20    4 attr_mod
//	 24    8 mkey
type SMPHeader struct {
	BaseVersion  uint8
	MgmtClass    Class
	ClassVersion uint8
	Method       Method
	Status       Status
	HopPtr       uint8
	HopCnt       uint8
	TID          uint64
	AttrID       uint16
	Reserved     [2]byte
	AttrMod      uint32
	MKey         uint64
}

// IsDirectedRoute reports whether the SMP is directed route (class 0x81).
func (h *SMPHeader) IsDirectedRoute() bool { return h.MgmtClass == ClassSubnDirectedRoute }

// Returning reports the D bit: a DR SMP on its way back to the SM.
func (h *SMPHeader) Returning() bool { return h.Status&StatusDirection != 0 }

// AppendBinary appends the 32-byte header to b.
func (h *SMPHeader) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, h.BaseVersion, uint8(h.MgmtClass), h.ClassVersion, uint8(h.Method)) // 0-3
	b = be.AppendUint16(b, uint16(h.Status))                                          // 4
	b = append(b, h.HopPtr, h.HopCnt)                                                 // 6, 7
	b = be.AppendUint64(b, h.TID)                                                     // 8
	b = be.AppendUint16(b, h.AttrID)                                                  // 16
	b = append(b, h.Reserved[:]...)                                                   // 18
	b = be.AppendUint32(b, h.AttrMod)                                                 // 20
	return be.AppendUint64(b, h.MKey), nil                                            // 24
}

// MarshalBinary returns the 32-byte header.
func (h *SMPHeader) MarshalBinary() ([]byte, error) {
	return marshal(SMPLIDHeaderLen, h.AppendBinary)
}

// UnmarshalBinary decodes the first 32 bytes of b.
func (h *SMPHeader) UnmarshalBinary(b []byte) error {
	if len(b) < SMPLIDHeaderLen {
		return errShort("SMP header", SMPLIDHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *SMPHeader) decode(d *dec) {
	h.BaseVersion = d.u8()
	h.MgmtClass = Class(d.u8())
	h.ClassVersion = d.u8()
	h.Method = Method(d.u8())
	h.Status = Status(d.u16())
	h.HopPtr = d.u8()
	h.HopCnt = d.u8()
	h.TID = d.u64()
	h.AttrID = d.u16()
	d.read(h.Reserved[:])
	h.AttrMod = d.u32()
	h.MKey = d.u64()
}

// DRRoute is the directed-route part of struct opa_smp, SMP bytes 32-175
// (144 bytes):
//
//	off size field
//	 32    4 dr_slid          (encap.LIDPermissive = permissive)
//	 36    4 dr_dlid
//	 40   64 initial_path[64] (port per hop)
//	104   64 return_path[64]
//	168    8 reserved
type DRRoute struct {
	DRSLID      encap.LID
	DRDLID      encap.LID
	InitialPath [SMPMaxPathHops]byte
	ReturnPath  [SMPMaxPathHops]byte
	Reserved    [8]byte
}

func (r *DRRoute) appendTo(b []byte) []byte {
	b = be.AppendUint32(b, uint32(r.DRSLID)) // 32
	b = be.AppendUint32(b, uint32(r.DRDLID)) // 36
	b = append(b, r.InitialPath[:]...)       // 40
	b = append(b, r.ReturnPath[:]...)        // 104
	return append(b, r.Reserved[:]...)       // 168
}

func (r *DRRoute) decode(d *dec) {
	r.DRSLID = encap.LID(d.u32())
	r.DRDLID = encap.LID(d.u32())
	d.read(r.InitialPath[:])
	d.read(r.ReturnPath[:])
	d.read(r.Reserved[:])
}

// SMP is struct opa_smp: the 32-byte header, for class 0x81 the 144-byte
// directed route, then the attribute data. Data is variable: hfi1 answers
// with header + attribute rounded up to 8 bytes (a DR PortInfo reply is 424
// bytes), and at most the class's data size (2016 LID routed, 1872 DR),
// ErrTooLong beyond. DR is encoded and decoded only for class 0x81 and is
// ignored otherwise.
type SMP struct {
	SMPHeader
	DR   DRRoute
	Data []byte
}

// HeaderLen returns 32, or 176 for a directed-route SMP.
func (s *SMP) HeaderLen() int {
	if s.IsDirectedRoute() {
		return SMPDRHeaderLen
	}
	return SMPLIDHeaderLen
}

// MaxDataLen returns 2016, or 1872 for a directed-route SMP.
func (s *SMP) MaxDataLen() int {
	if s.IsDirectedRoute() {
		return SMPDRDataLen
	}
	return SMPLIDDataLen
}

// Len returns the encoded size, HeaderLen() + len(Data).
func (s *SMP) Len() int { return s.HeaderLen() + len(s.Data) }

// AppendBinary appends the SMP to b.
func (s *SMP) AppendBinary(b []byte) ([]byte, error) {
	if len(s.Data) > s.MaxDataLen() {
		return b, ErrTooLong
	}
	b, _ = s.SMPHeader.AppendBinary(b) // 0
	if s.IsDirectedRoute() {
		b = s.DR.appendTo(b) // 32
	}
	return append(b, s.Data...), nil // 32 or 176
}

// MarshalBinary returns the SMP.
func (s *SMP) MarshalBinary() ([]byte, error) { return marshal(s.Len(), s.AppendBinary) }

// UnmarshalBinary decodes an SMP; everything after the header is Data
// (copied).
func (s *SMP) UnmarshalBinary(b []byte) error {
	if len(b) < SMPLIDHeaderLen {
		return errShort("SMP", SMPLIDHeaderLen, len(b))
	}
	d := dec{b}
	var h SMPHeader
	h.decode(&d)
	var r DRRoute
	hlen, maxData := SMPLIDHeaderLen, SMPLIDDataLen
	if h.IsDirectedRoute() {
		hlen, maxData = SMPDRHeaderLen, SMPDRDataLen
		if len(b) < hlen {
			return errShort("directed-route SMP", hlen, len(b))
		}
		r.decode(&d)
	}
	if len(b)-hlen > maxData {
		return ErrTooLong
	}
	s.SMPHeader, s.DR, s.Data = h, r, cloneData(b[hlen:])
	return nil
}

// cloneData copies b, giving nil for an empty b.
func cloneData(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// Node types (NodeInfo node_type).
const (
	NodeTypeCA     uint8 = 1
	NodeTypeSwitch uint8 = 2
	NodeTypeRouter uint8 = 3
)

// NodeInfo is struct opa_node_info (44 bytes; docs/linux-compat.md §9.6):
//
//	off size field
//	  0    1 base_version
//	  1    1 class_version
//	  2    1 node_type
//	  3    1 num_ports
//	  4    4 reserved
//	  8    8 system_image_guid
//	 16    8 node_guid
//	 24    8 port_guid
//	 32    2 partition_cap
//	 34    2 device_id
//	 36    4 revision
//	 40    1 local_port_num
//	 41    3 vendor_id (OUI)
type NodeInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        uint8
	NumPorts        uint8
	Reserved        [4]byte
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	LocalPortNum    uint8
	VendorID        OUI
}

// AppendBinary appends the 44-byte NodeInfo to b.
func (n *NodeInfo) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, n.BaseVersion, n.ClassVersion, n.NodeType, n.NumPorts) // 0-3
	b = append(b, n.Reserved[:]...)                                      // 4
	b = be.AppendUint64(b, n.SystemImageGUID)                            // 8
	b = be.AppendUint64(b, n.NodeGUID)                                   // 16
	b = be.AppendUint64(b, n.PortGUID)                                   // 24
	b = be.AppendUint16(b, n.PartitionCap)                               // 32
	b = be.AppendUint16(b, n.DeviceID)                                   // 34
	b = be.AppendUint32(b, n.Revision)                                   // 36
	b = append(b, n.LocalPortNum)                                        // 40
	return append(b, n.VendorID[:]...), nil                              // 41
}

// MarshalBinary returns the 44-byte NodeInfo.
func (n *NodeInfo) MarshalBinary() ([]byte, error) { return marshal(NodeInfoLen, n.AppendBinary) }

// UnmarshalBinary decodes the first 44 bytes of b.
func (n *NodeInfo) UnmarshalBinary(b []byte) error {
	if len(b) < NodeInfoLen {
		return errShort("NodeInfo", NodeInfoLen, len(b))
	}
	d := dec{b}
	n.BaseVersion = d.u8()
	n.ClassVersion = d.u8()
	n.NodeType = d.u8()
	n.NumPorts = d.u8()
	d.read(n.Reserved[:])
	n.SystemImageGUID = d.u64()
	n.NodeGUID = d.u64()
	n.PortGUID = d.u64()
	n.PartitionCap = d.u16()
	n.DeviceID = d.u16()
	n.Revision = d.u32()
	n.LocalPortNum = d.u8()
	d.read(n.VendorID[:])
	return nil
}

// NodeDescription is struct opa_node_description: 64 raw bytes, by
// convention NUL-padded text.
type NodeDescription [NodeDescriptionLen]byte

// NodeDescriptionFrom copies s into a NodeDescription, truncated to 64
// bytes and NUL-padded.
func NodeDescriptionFrom(s string) NodeDescription {
	var d NodeDescription
	copy(d[:], s)
	return d
}

// String returns the text up to the first NUL.
func (d *NodeDescription) String() string {
	if i := bytes.IndexByte(d[:], 0); i >= 0 {
		return string(d[:i])
	}
	return string(d[:])
}

// AppendBinary appends the 64 bytes to b.
func (d *NodeDescription) AppendBinary(b []byte) ([]byte, error) { return append(b, d[:]...), nil }

// MarshalBinary returns the 64 bytes.
func (d *NodeDescription) MarshalBinary() ([]byte, error) {
	return marshal(NodeDescriptionLen, d.AppendBinary)
}

// UnmarshalBinary decodes the first 64 bytes of b.
func (d *NodeDescription) UnmarshalBinary(b []byte) error {
	if len(b) < NodeDescriptionLen {
		return errShort("NodeDescription", NodeDescriptionLen, len(b))
	}
	copy(d[:], b)
	return nil
}

// SMA notice values (ib_mad.h IB_NOTICE_*, hfi1 mad.h OPA_TRAP_*;
// docs/linux-compat.md §11.1).
const (
	NoticeGenericFatal    uint8 = 0x80 // IB_NOTICE_TYPE_FATAL
	NoticeGenericUrgent   uint8 = 0x81
	NoticeGenericSecurity uint8 = 0x82
	NoticeGenericSM       uint8 = 0x83
	NoticeGenericInfo     uint8 = 0x84

	NoticeProdCA       uint16 = 1 // IB_NOTICE_PROD_CA (prod_type_lsb)
	NoticeProdSwitch   uint16 = 2
	NoticeProdRouter   uint16 = 3
	NoticeProdClassMgr uint16 = 4

	TrapGIDInService     uint16 = 64
	TrapGIDOutOfService  uint16 = 65
	TrapPortChangeState  uint16 = 128
	TrapLinkIntegrity    uint16 = 129
	TrapChangeCapability uint16 = 144
	TrapChangeSysGUID    uint16 = 145
	TrapBadMKey          uint16 = 256
	TrapBadPKey          uint16 = 257
	TrapBadQKey          uint16 = 258
)

// SMPNotice is the SMA notice attribute, struct opa_mad_notice_attr (96
// bytes; docs/linux-compat.md §11.2), carried at data offset 0 of a Trap SMP:
//
//	off size field
//	  0    1 generic_type   (0x80|type for generic notices)
//	  1    1 prod_type_msb
//	  2    2 prod_type_lsb
//	  4    2 trap_num
//	  6    2 toggle_count
//	  8    4 issuer_lid
//	 12    4 reserved1
//	 16   16 issuer_gid
//	 32   64 details (per trap: 128-131 and 144 start with the LID, BE32)
type SMPNotice struct {
	GenericType uint8
	ProdTypeMSB uint8
	ProdTypeLSB uint16
	TrapNum     uint16
	ToggleCount uint16
	IssuerLID   encap.LID
	Reserved1   [4]byte
	IssuerGID   encap.GID
	Details     [64]byte
}

// DetailLID returns the big-endian LID at the start of the details, where
// traps 128-131 and 144 carry it.
func (n *SMPNotice) DetailLID() encap.LID { return encap.LID(be.Uint32(n.Details[:])) }

// AppendBinary appends the 96-byte notice to b.
func (n *SMPNotice) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, n.GenericType, n.ProdTypeMSB) // 0, 1
	b = be.AppendUint16(b, n.ProdTypeLSB)       // 2
	b = be.AppendUint16(b, n.TrapNum)           // 4
	b = be.AppendUint16(b, n.ToggleCount)       // 6
	b = be.AppendUint32(b, uint32(n.IssuerLID)) // 8
	b = append(b, n.Reserved1[:]...)            // 12
	b = append(b, n.IssuerGID[:]...)            // 16
	return append(b, n.Details[:]...), nil      // 32
}

// MarshalBinary returns the 96-byte notice.
func (n *SMPNotice) MarshalBinary() ([]byte, error) { return marshal(NoticeLen, n.AppendBinary) }

// UnmarshalBinary decodes the first 96 bytes of b.
func (n *SMPNotice) UnmarshalBinary(b []byte) error {
	if len(b) < NoticeLen {
		return errShort("SMP notice", NoticeLen, len(b))
	}
	d := dec{b}
	n.GenericType = d.u8()
	n.ProdTypeMSB = d.u8()
	n.ProdTypeLSB = d.u16()
	n.TrapNum = d.u16()
	n.ToggleCount = d.u16()
	n.IssuerLID = encap.LID(d.u32())
	d.read(n.Reserved1[:])
	d.read(n.IssuerGID[:])
	d.read(n.Details[:])
	return nil
}
