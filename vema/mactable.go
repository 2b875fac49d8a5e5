package vema

import "github.com/opavnic/opavnic/encap"

// MAC-table limits (opa_vnic_vema.c vema_mac_tbl_req_ok).
const (
	// MaxMACEntriesPerMAD is how many 16-byte entries fit a VEMA data area
	// after the 8-byte header: (2008-8)/16 = 125.
	MaxMACEntriesPerMAD = (VEMADataLen - MACTableHeaderLen) / MACTableEntryLen

	// DLIDSDSourceMAC is the dlid_sd bit that marks a source-MAC entry, which
	// DLID lookup skips (OPA_VNIC_DLID_SD_IS_SRC_MAC).
	DLIDSDSourceMAC uint32 = 0x20

	dlidSDShift = 8
	dlidSDMask  = encap.LID16BMask
)

// MACTableHeader is the header of struct opa_veswport_mactable (8 bytes):
//
//	off size field
//	  0    2 offset          (absolute index of the first entry)
//	  2    2 num_entries
//	  4    4 mac_tbl_digest
//
// An agent decodes it alone first, checks Valid, and only then decodes the
// entries with VESWPortMACEntries.
type MACTableHeader struct {
	Offset     uint16
	NumEntries uint16
	Digest     uint32
}

// Valid reports whether a request's range is one the VEMA accepts
// (vema_mac_tbl_req_ok): num_entries <= 125 and offset + num_entries <= 2048.
// A Set that fails it gets StatusUnsupportedMethodAttr, a Get
// StatusInvalidAttrValue (docs/linux-compat.md §4.6).
func (h *MACTableHeader) Valid() bool {
	return h.NumEntries <= MaxMACEntriesPerMAD &&
		int(h.Offset)+int(h.NumEntries) <= MACTableMaxEntries
}

// AppendBinary appends the 8-byte header to b.
func (h *MACTableHeader) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, h.Offset)     // 0
	b = be.AppendUint16(b, h.NumEntries) // 2
	b = be.AppendUint32(b, h.Digest)     // 4
	return b, nil
}

// MarshalBinary returns the 8-byte header.
func (h *MACTableHeader) MarshalBinary() ([]byte, error) {
	return marshal(MACTableHeaderLen, h.AppendBinary)
}

// UnmarshalBinary decodes the first 8 bytes of b.
func (h *MACTableHeader) UnmarshalBinary(b []byte) error {
	if len(b) < MACTableHeaderLen {
		return errShort("MAC table header", MACTableHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *MACTableHeader) decode(d *dec) {
	h.Offset = d.u16()
	h.NumEntries = d.u16()
	h.Digest = d.u32()
}

// MACTableEntry is struct opa_veswport_mactable_entry (16 bytes):
//
//	off size field
//	  0    6 mac_addr       (all zero in a Set: delete this index)
//	  6    6 mac_addr_mask  (stored, not used for lookup)
//	 12    4 dlid_sd        (bits 31:8 DLID, bit 5 source-MAC entry)
type MACTableEntry struct {
	MAC    [6]byte
	Mask   [6]byte
	DLIDSD uint32
}

// MakeDLIDSD builds a dlid_sd word: the 24-bit DLID in bits 31:8 and, for a
// source-MAC entry, bit 5. Bits of dlid above 23 are dropped.
func MakeDLIDSD(dlid uint32, sourceMAC bool) uint32 {
	v := (dlid & dlidSDMask) << dlidSDShift
	if sourceMAC {
		v |= DLIDSDSourceMAC
	}
	return v
}

// DLID returns the 24-bit DLID in bits 31:8 of dlid_sd
// (OPA_VNIC_DLID_SD_GET_DLID), the 16B LID the kernel puts in the header.
func (e *MACTableEntry) DLID() uint32 { return e.DLIDSD >> dlidSDShift }

// SetDLID replaces bits 31:8 of dlid_sd, keeping the side-data bits.
func (e *MACTableEntry) SetDLID(dlid uint32) {
	e.DLIDSD = e.DLIDSD&(1<<dlidSDShift-1) | (dlid&dlidSDMask)<<dlidSDShift
}

// IsSourceMAC reports the source-MAC bit (OPA_VNIC_DLID_SD_IS_SRC_MAC).
func (e *MACTableEntry) IsSourceMAC() bool { return e.DLIDSD&DLIDSDSourceMAC != 0 }

// IsDelete reports whether a Set entry deletes its index: an all-zero MAC.
func (e *MACTableEntry) IsDelete() bool { return e.MAC == [6]byte{} }

// AppendBinary appends the 16-byte entry to b.
func (e *MACTableEntry) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, e.MAC[:]...)               // 0
	b = append(b, e.Mask[:]...)              // 6
	return be.AppendUint32(b, e.DLIDSD), nil // 12
}

// MarshalBinary returns the 16-byte entry.
func (e *MACTableEntry) MarshalBinary() ([]byte, error) {
	return marshal(MACTableEntryLen, e.AppendBinary)
}

// UnmarshalBinary decodes the first 16 bytes of b.
func (e *MACTableEntry) UnmarshalBinary(b []byte) error {
	if len(b) < MACTableEntryLen {
		return errShort("MAC table entry", MACTableEntryLen, len(b))
	}
	e.decode(&dec{b})
	return nil
}

func (e *MACTableEntry) decode(d *dec) {
	d.read(e.MAC[:])
	d.read(e.Mask[:])
	e.DLIDSD = d.u32()
}

// VESWPortMACEntries is the VESWPortMACEntries attribute (0x0012), struct
// opa_veswport_mactable: the header and NumEntries entries of 16 bytes from
// byte 8. Entry i is table index Offset+i.
//
// NumEntries must equal len(Entries) (ErrCount) and be at most 125
// (ErrTooManyEntries) on encode; decode returns ErrTooManyEntries for a
// header announcing more than 125, so check MACTableHeader.Valid first.
type VESWPortMACEntries struct {
	MACTableHeader
	Entries []MACTableEntry
}

// Len returns the encoded size, 8 + 16*len(Entries).
func (m *VESWPortMACEntries) Len() int { return MACTableHeaderLen + MACTableEntryLen*len(m.Entries) }

// AppendBinary appends the header and the entries to b.
func (m *VESWPortMACEntries) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Entries) > MaxMACEntriesPerMAD {
		return b, ErrTooManyEntries
	}
	if int(m.NumEntries) != len(m.Entries) {
		return b, ErrCount
	}
	b, _ = m.MACTableHeader.AppendBinary(b) // 0
	for i := range m.Entries {              // 8 + 16*i
		b, _ = m.Entries[i].AppendBinary(b)
	}
	return b, nil
}

// MarshalBinary returns the header and the entries.
func (m *VESWPortMACEntries) MarshalBinary() ([]byte, error) {
	return marshal(m.Len(), m.AppendBinary)
}

// UnmarshalBinary decodes the header and the NumEntries entries it announces
// from the start of b.
func (m *VESWPortMACEntries) UnmarshalBinary(b []byte) error {
	if len(b) < MACTableHeaderLen {
		return errShort("VESWPortMACEntries", MACTableHeaderLen, len(b))
	}
	d := dec{b}
	var h MACTableHeader
	h.decode(&d)
	if h.NumEntries > MaxMACEntriesPerMAD {
		return ErrTooManyEntries
	}
	n := int(h.NumEntries)
	if need := MACTableHeaderLen + n*MACTableEntryLen; len(b) < need {
		return errShort("VESWPortMACEntries", need, len(b))
	}
	var ents []MACTableEntry
	if n > 0 {
		ents = make([]MACTableEntry, n)
		for i := range ents {
			ents[i].decode(&d)
		}
	}
	m.MACTableHeader, m.Entries = h, ents
	return nil
}

// IfaceMACs limits (opa_vnic_vema.c vema_get_mac_list).
const (
	// MaxIfaceMACsPerMAD is how many 6-byte MACs fit a VEMA data area after
	// the 8-byte header: (2008-8)/6 = 333. A request's num_macs_in_msg of 0
	// asks for this many.
	MaxIfaceMACsPerMAD = (VEMADataLen - IfaceMACsHeaderLen) / 6
)

// IfaceMACsHeader is the header of struct opa_veswport_iface_macs (8 bytes),
// for IfaceUcastMACs (0x0013) and IfaceMcastMACs (0x0014):
//
//	off size field
//	  0    2 start_idx
//	  2    2 num_macs_in_msg  (request: how many, 0 = 333; reply: how many follow)
//	  4    2 tot_macs_in_lst  (reply)
//	  6    2 gen_count        (reply)
//
// A Get request carries only the header; decode it with this type.
type IfaceMACsHeader struct {
	StartIdx     uint16
	NumMACsInMsg uint16
	TotMACsInLst uint16
	GenCount     uint16
}

// Requested returns how many MACs a Get request asks for: NumMACsInMsg, or
// MaxIfaceMACsPerMAD when it is 0 (vema_get_mac_list).
func (h *IfaceMACsHeader) Requested() int {
	if h.NumMACsInMsg == 0 {
		return MaxIfaceMACsPerMAD
	}
	return int(h.NumMACsInMsg)
}

// AppendBinary appends the 8-byte header to b.
func (h *IfaceMACsHeader) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, h.StartIdx)     // 0
	b = be.AppendUint16(b, h.NumMACsInMsg) // 2
	b = be.AppendUint16(b, h.TotMACsInLst) // 4
	b = be.AppendUint16(b, h.GenCount)     // 6
	return b, nil
}

// MarshalBinary returns the 8-byte header.
func (h *IfaceMACsHeader) MarshalBinary() ([]byte, error) {
	return marshal(IfaceMACsHeaderLen, h.AppendBinary)
}

// UnmarshalBinary decodes the first 8 bytes of b.
func (h *IfaceMACsHeader) UnmarshalBinary(b []byte) error {
	if len(b) < IfaceMACsHeaderLen {
		return errShort("IfaceMACs header", IfaceMACsHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *IfaceMACsHeader) decode(d *dec) {
	h.StartIdx = d.u16()
	h.NumMACsInMsg = d.u16()
	h.TotMACsInLst = d.u16()
	h.GenCount = d.u16()
}

// IfaceMACs is an interface MAC list reply: the header and NumMACsInMsg MACs
// of 6 bytes from byte 8. NumMACsInMsg must equal len(MACs) (ErrCount) and be
// at most 333 (ErrTooManyEntries).
type IfaceMACs struct {
	IfaceMACsHeader
	MACs [][6]byte
}

// Len returns the encoded size, 8 + 6*len(MACs).
func (m *IfaceMACs) Len() int { return IfaceMACsHeaderLen + 6*len(m.MACs) }

// AppendBinary appends the header and the MACs to b.
func (m *IfaceMACs) AppendBinary(b []byte) ([]byte, error) {
	if len(m.MACs) > MaxIfaceMACsPerMAD {
		return b, ErrTooManyEntries
	}
	if int(m.NumMACsInMsg) != len(m.MACs) {
		return b, ErrCount
	}
	b, _ = m.IfaceMACsHeader.AppendBinary(b) // 0
	for _, mac := range m.MACs {             // 8 + 6*i
		b = append(b, mac[:]...)
	}
	return b, nil
}

// MarshalBinary returns the header and the MACs.
func (m *IfaceMACs) MarshalBinary() ([]byte, error) { return marshal(m.Len(), m.AppendBinary) }

// UnmarshalBinary decodes the header and the NumMACsInMsg MACs it announces
// from the start of b.
func (m *IfaceMACs) UnmarshalBinary(b []byte) error {
	if len(b) < IfaceMACsHeaderLen {
		return errShort("IfaceMACs", IfaceMACsHeaderLen, len(b))
	}
	d := dec{b}
	var h IfaceMACsHeader
	h.decode(&d)
	if h.NumMACsInMsg > MaxIfaceMACsPerMAD {
		return ErrTooManyEntries
	}
	n := int(h.NumMACsInMsg)
	if need := IfaceMACsHeaderLen + 6*n; len(b) < need {
		return errShort("IfaceMACs", need, len(b))
	}
	var macs [][6]byte
	if n > 0 {
		macs = make([][6]byte, n)
		for i := range macs {
			d.read(macs[i][:])
		}
	}
	m.IfaceMACsHeader, m.MACs = h, macs
	return nil
}
