package vema

import "github.com/opavnic/opavnic/encap"

// SAHeader is the header of struct ib_sa_mad (56 bytes, packed;
// docs/linux-compat.md §10.1), the same for IB (base 1, class 2) and OPA
// (base 0x80, class 0x80) SA MADs:
//
//	off size field
//	  0   24 common MAD header
//	 24   12 RMPP header
//	 36    8 sm_key
//	 44    2 attr_offset   (record size in 8-byte units)
//	 46    2 reserved
//	 48    8 comp_mask     (bit n = 1<<n, CompMask* constants)
type SAHeader struct {
	MADHeader
	RMPP       RMPPHeader
	SMKey      uint64
	AttrOffset uint16
	Reserved   [2]byte
	CompMask   uint64
}

// AppendBinary appends the 56-byte SA header to b.
func (h *SAHeader) AppendBinary(b []byte) ([]byte, error) {
	b, _ = h.MADHeader.AppendBinary(b)         // 0
	b, _ = h.RMPP.AppendBinary(b)              // 24
	b = be.AppendUint64(b, h.SMKey)            // 36
	b = be.AppendUint16(b, h.AttrOffset)       // 44
	b = append(b, h.Reserved[:]...)            // 46
	return be.AppendUint64(b, h.CompMask), nil // 48
}

// MarshalBinary returns the 56-byte SA header.
func (h *SAHeader) MarshalBinary() ([]byte, error) { return marshal(SAHeaderLen, h.AppendBinary) }

// UnmarshalBinary decodes the first 56 bytes of b.
func (h *SAHeader) UnmarshalBinary(b []byte) error {
	if len(b) < SAHeaderLen {
		return errShort("SA header", SAHeaderLen, len(b))
	}
	h.decode(&dec{b})
	return nil
}

func (h *SAHeader) decode(d *dec) {
	h.MADHeader.decode(d)
	h.RMPP.decode(d)
	h.SMKey = d.u64()
	h.AttrOffset = d.u16()
	d.read(h.Reserved[:])
	h.CompMask = d.u64()
}

// SAMAD is an SA MAD: the 56-byte header and the records. Data is variable,
// at most 1992 bytes (a 2048-byte OPA MAD; an IB SA MAD has 200), ErrTooLong
// beyond.
type SAMAD struct {
	SAHeader
	Data []byte
}

// Len returns the encoded size, 56 + len(Data).
func (m *SAMAD) Len() int { return SAHeaderLen + len(m.Data) }

// AppendBinary appends the SA MAD to b.
func (m *SAMAD) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Data) > SADataLen {
		return b, ErrTooLong
	}
	b, _ = m.SAHeader.AppendBinary(b)
	return append(b, m.Data...), nil // 56
}

// MarshalBinary returns the SA MAD.
func (m *SAMAD) MarshalBinary() ([]byte, error) { return marshal(m.Len(), m.AppendBinary) }

// UnmarshalBinary decodes an SA MAD; everything after the header is Data
// (copied).
func (m *SAMAD) UnmarshalBinary(b []byte) error {
	if len(b) < SAHeaderLen {
		return errShort("SA MAD", SAHeaderLen, len(b))
	}
	if len(b)-SAHeaderLen > SADataLen {
		return ErrTooLong
	}
	m.SAHeader.decode(&dec{b})
	m.Data = cloneData(b[SAHeaderLen:])
	return nil
}

// PathRecordAttrOffset is the attr_offset of a PathRecord: 64 bytes in
// 8-byte units.
const PathRecordAttrOffset = PathRecordLen / 8

// PathRecord component-mask bits (ib_sa.h IB_SA_PATH_REC_*). The kernel sends
// the same bits with OPA records.
const (
	CompMaskServiceID      uint64 = 1<<0 | 1<<1 // service_id_8msb and service_id_56lsb
	CompMaskDGID           uint64 = 1 << 2
	CompMaskSGID           uint64 = 1 << 3
	CompMaskDLID           uint64 = 1 << 4
	CompMaskSLID           uint64 = 1 << 5
	CompMaskRawTraffic     uint64 = 1 << 6
	CompMaskFlowLabel      uint64 = 1 << 8
	CompMaskHopLimit       uint64 = 1 << 9
	CompMaskTrafficClass   uint64 = 1 << 10
	CompMaskReversible     uint64 = 1 << 11
	CompMaskNumbPath       uint64 = 1 << 12
	CompMaskPKey           uint64 = 1 << 13
	CompMaskQOSClass       uint64 = 1 << 14
	CompMaskSL             uint64 = 1 << 15
	CompMaskMTUSelector    uint64 = 1 << 16
	CompMaskMTU            uint64 = 1 << 17
	CompMaskRateSelector   uint64 = 1 << 18
	CompMaskRate           uint64 = 1 << 19
	CompMaskPacketLifeSel  uint64 = 1 << 20
	CompMaskPacketLifeTime uint64 = 1 << 21
	CompMaskPreference     uint64 = 1 << 22
)

// Selectors of the MTU, rate and packet-life-time fields (enum ib_sa_selector).
const (
	SelectorGreaterThan uint8 = 0
	SelectorLessThan    uint8 = 1
	SelectorExactly     uint8 = 2
	SelectorBest        uint8 = 3
)

// selVal is a 2-bit selector and a 6-bit value sharing a byte.
type selVal struct{ sel, val uint8 }

func (s selVal) byte(what string) (uint8, error) {
	if !fits(uint64(s.sel), 2) {
		return 0, errRange(what+" selector", uint64(s.sel), 2)
	}
	if !fits(uint64(s.val), 6) {
		return 0, errRange(what, uint64(s.val), 6)
	}
	return s.sel<<6 | s.val, nil
}

// flowWord packs raw_traffic(1) reserved(3) flow_label(20) hop_limit(8), the
// word both records share (IB at byte 44, OPA at byte 48).
func flowWord(raw bool, rsvd uint8, flow uint32, hop uint8) (uint32, error) {
	if !fits(uint64(rsvd), 3) {
		return 0, errRange("PathRecord reserved bits", uint64(rsvd), 3)
	}
	if !fits(uint64(flow), 20) {
		return 0, errRange("flow_label", uint64(flow), 20)
	}
	return uint32(b2u8(raw))<<31 | uint32(rsvd)<<28 | flow<<8 | uint32(hop), nil
}

func unpackFlowWord(w uint32) (raw bool, rsvd uint8, flow uint32, hop uint8) {
	return w>>31 != 0, uint8(w>>28) & 7, w >> 8 & 0xFFFFF, uint8(w)
}

// PathRecord is the OPA PathRecord (attribute 0x0035 with base and class
// version 0x80, 64 bytes; docs/linux-compat.md §10.3, sa_query.c
// opa_path_rec_table). LIDs are 32-bit. Bit fields are separate Go fields;
// AppendBinary returns ErrRange for a value wider than its field.
//
//	off bits  field
//	  0       service_id (8)
//	  8       dgid (16)
//	 24       sgid (16)
//	 40       dlid (4)
//	 44       slid (4)
//	 48 7     raw_traffic
//	 48 6:4   reserved
//	 48 3:0 + 49, 50: flow_label (20)
//	 51       hop_limit
//	 52       traffic_class
//	 53 7     reversible
//	 53 6:0   numb_path
//	 54       pkey (2)
//	 56 7,6,5,4 l2_8B, l2_10B, l2_9B, l2_16B
//	 56 3:2   reserved
//	 56 1:0   qos_type
//	 57       qos_priority
//	 58 7:5   reserved
//	 58 4:0   sl
//	 59       reserved
//	 60 7:6 / 5:0  mtu_selector / mtu
//	 61 7:6 / 5:0  rate_selector / rate
//	 62 7:6 / 5:0  packet_life_time_selector / packet_life_time
//	 63       preference
type PathRecord struct {
	ServiceID              uint64
	DGID                   encap.GID
	SGID                   encap.GID
	DLID                   encap.LID
	SLID                   encap.LID
	RawTraffic             bool
	Reserved48             uint8 // 3 bits
	FlowLabel              uint32
	HopLimit               uint8
	TrafficClass           uint8
	Reversible             bool
	NumbPath               uint8
	PKey                   encap.PKey
	L2_8B                  bool
	L2_10B                 bool
	L2_9B                  bool
	L2_16B                 bool
	Reserved56             uint8 // 2 bits
	QOSType                uint8
	QOSPriority            uint8
	Reserved58             uint8 // 3 bits
	SL                     uint8
	Reserved59             uint8
	MTUSelector            uint8
	MTU                    uint8
	RateSelector           uint8
	Rate                   uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	Preference             uint8
}

// AppendBinary appends the 64-byte OPA PathRecord to b.
func (r *PathRecord) AppendBinary(b []byte) ([]byte, error) {
	fw, err := flowWord(r.RawTraffic, r.Reserved48, r.FlowLabel, r.HopLimit)
	if err != nil {
		return b, err
	}
	if !fits(uint64(r.NumbPath), 7) {
		return b, errRange("numb_path", uint64(r.NumbPath), 7)
	}
	if !fits(uint64(r.Reserved56), 2) {
		return b, errRange("PathRecord byte 56 reserved bits", uint64(r.Reserved56), 2)
	}
	if !fits(uint64(r.QOSType), 2) {
		return b, errRange("qos_type", uint64(r.QOSType), 2)
	}
	if !fits(uint64(r.Reserved58), 3) {
		return b, errRange("PathRecord byte 58 reserved bits", uint64(r.Reserved58), 3)
	}
	if !fits(uint64(r.SL), 5) {
		return b, errRange("sl", uint64(r.SL), 5)
	}
	mtu, err := selVal{r.MTUSelector, r.MTU}.byte("mtu")
	if err != nil {
		return b, err
	}
	rate, err := selVal{r.RateSelector, r.Rate}.byte("rate")
	if err != nil {
		return b, err
	}
	plt, err := selVal{r.PacketLifeTimeSelector, r.PacketLifeTime}.byte("packet_life_time")
	if err != nil {
		return b, err
	}
	l2 := b2u8(r.L2_8B)<<7 | b2u8(r.L2_10B)<<6 | b2u8(r.L2_9B)<<5 | b2u8(r.L2_16B)<<4 |
		r.Reserved56<<2 | r.QOSType
	b = be.AppendUint64(b, r.ServiceID)                 // 0
	b = append(b, r.DGID[:]...)                         // 8
	b = append(b, r.SGID[:]...)                         // 24
	b = be.AppendUint32(b, uint32(r.DLID))              // 40
	b = be.AppendUint32(b, uint32(r.SLID))              // 44
	b = be.AppendUint32(b, fw)                          // 48
	b = append(b, r.TrafficClass)                       // 52
	b = append(b, b2u8(r.Reversible)<<7|r.NumbPath)     // 53
	b = be.AppendUint16(b, uint16(r.PKey))              // 54
	b = append(b, l2, r.QOSPriority)                    // 56, 57
	b = append(b, r.Reserved58<<5|r.SL, r.Reserved59)   // 58, 59
	return append(b, mtu, rate, plt, r.Preference), nil // 60-63
}

// MarshalBinary returns the 64-byte OPA PathRecord.
func (r *PathRecord) MarshalBinary() ([]byte, error) {
	return marshal(PathRecordLen, r.AppendBinary)
}

// UnmarshalBinary decodes the first 64 bytes of b.
func (r *PathRecord) UnmarshalBinary(b []byte) error {
	if len(b) < PathRecordLen {
		return errShort("OPA PathRecord", PathRecordLen, len(b))
	}
	d := dec{b}
	r.ServiceID = d.u64()
	d.read(r.DGID[:])
	d.read(r.SGID[:])
	r.DLID = encap.LID(d.u32())
	r.SLID = encap.LID(d.u32())
	r.RawTraffic, r.Reserved48, r.FlowLabel, r.HopLimit = unpackFlowWord(d.u32())
	r.TrafficClass = d.u8()
	v := d.u8()
	r.Reversible, r.NumbPath = v>>7 != 0, v&0x7F
	r.PKey = encap.PKey(d.u16())
	v = d.u8()
	r.L2_8B, r.L2_10B, r.L2_9B, r.L2_16B = v&0x80 != 0, v&0x40 != 0, v&0x20 != 0, v&0x10 != 0
	r.Reserved56, r.QOSType = v>>2&3, v&3
	r.QOSPriority = d.u8()
	v = d.u8()
	r.Reserved58, r.SL = v>>5, v&0x1F
	r.Reserved59 = d.u8()
	v = d.u8()
	r.MTUSelector, r.MTU = v>>6, v&0x3F
	v = d.u8()
	r.RateSelector, r.Rate = v>>6, v&0x3F
	v = d.u8()
	r.PacketLifeTimeSelector, r.PacketLifeTime = v>>6, v&0x3F
	r.Preference = d.u8()
	return nil
}

// IBPathRecord is the IB PathRecord (attribute 0x0035 with base 1 and class
// 2, 64 bytes; docs/linux-compat.md §10.2, sa_query.c path_rec_table), with
// 16-bit LIDs. Extended LIDs travel in special GIDs with the LIDs 0
// (docs/wire.md §6). AppendBinary returns ErrRange for a value wider than its
// field.
//
//	off bits  field
//	  0       service_id (8)
//	  8       dgid (16)
//	 24       sgid (16)
//	 40       dlid (2)
//	 42       slid (2)
//	 44 7     raw_traffic
//	 44 6:4   reserved
//	 44 3:0 + 45, 46: flow_label (20)
//	 47       hop_limit
//	 48       traffic_class
//	 49 7     reversible
//	 49 6:0   numb_path
//	 50       pkey (2)
//	 52 + 53 7:4  qos_class (12)
//	 53 3:0   sl
//	 54 7:6 / 5:0  mtu_selector / mtu
//	 55 7:6 / 5:0  rate_selector / rate
//	 56 7:6 / 5:0  packet_life_time_selector / packet_life_time
//	 57       preference
//	 58       reserved (6)
type IBPathRecord struct {
	ServiceID              uint64
	DGID                   encap.GID
	SGID                   encap.GID
	DLID                   uint16
	SLID                   uint16
	RawTraffic             bool
	Reserved44             uint8 // 3 bits
	FlowLabel              uint32
	HopLimit               uint8
	TrafficClass           uint8
	Reversible             bool
	NumbPath               uint8
	PKey                   encap.PKey
	QOSClass               uint16
	SL                     uint8
	MTUSelector            uint8
	MTU                    uint8
	RateSelector           uint8
	Rate                   uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	Preference             uint8
	Reserved58             [6]byte
}

// AppendBinary appends the 64-byte IB PathRecord to b.
func (r *IBPathRecord) AppendBinary(b []byte) ([]byte, error) {
	fw, err := flowWord(r.RawTraffic, r.Reserved44, r.FlowLabel, r.HopLimit)
	if err != nil {
		return b, err
	}
	if !fits(uint64(r.NumbPath), 7) {
		return b, errRange("numb_path", uint64(r.NumbPath), 7)
	}
	if !fits(uint64(r.QOSClass), 12) {
		return b, errRange("qos_class", uint64(r.QOSClass), 12)
	}
	if !fits(uint64(r.SL), 4) {
		return b, errRange("sl", uint64(r.SL), 4)
	}
	mtu, err := selVal{r.MTUSelector, r.MTU}.byte("mtu")
	if err != nil {
		return b, err
	}
	rate, err := selVal{r.RateSelector, r.Rate}.byte("rate")
	if err != nil {
		return b, err
	}
	plt, err := selVal{r.PacketLifeTimeSelector, r.PacketLifeTime}.byte("packet_life_time")
	if err != nil {
		return b, err
	}
	b = be.AppendUint64(b, r.ServiceID)                // 0
	b = append(b, r.DGID[:]...)                        // 8
	b = append(b, r.SGID[:]...)                        // 24
	b = be.AppendUint16(b, r.DLID)                     // 40
	b = be.AppendUint16(b, r.SLID)                     // 42
	b = be.AppendUint32(b, fw)                         // 44
	b = append(b, r.TrafficClass)                      // 48
	b = append(b, b2u8(r.Reversible)<<7|r.NumbPath)    // 49
	b = be.AppendUint16(b, uint16(r.PKey))             // 50
	b = be.AppendUint16(b, r.QOSClass<<4|uint16(r.SL)) // 52
	b = append(b, mtu, rate, plt, r.Preference)        // 54-57
	return append(b, r.Reserved58[:]...), nil          // 58
}

// MarshalBinary returns the 64-byte IB PathRecord.
func (r *IBPathRecord) MarshalBinary() ([]byte, error) {
	return marshal(PathRecordLen, r.AppendBinary)
}

// UnmarshalBinary decodes the first 64 bytes of b.
func (r *IBPathRecord) UnmarshalBinary(b []byte) error {
	if len(b) < PathRecordLen {
		return errShort("IB PathRecord", PathRecordLen, len(b))
	}
	d := dec{b}
	r.ServiceID = d.u64()
	d.read(r.DGID[:])
	d.read(r.SGID[:])
	r.DLID = d.u16()
	r.SLID = d.u16()
	r.RawTraffic, r.Reserved44, r.FlowLabel, r.HopLimit = unpackFlowWord(d.u32())
	r.TrafficClass = d.u8()
	v := d.u8()
	r.Reversible, r.NumbPath = v>>7 != 0, v&0x7F
	r.PKey = encap.PKey(d.u16())
	w := d.u16()
	r.QOSClass, r.SL = w>>4, uint8(w&0xF)
	v = d.u8()
	r.MTUSelector, r.MTU = v>>6, v&0x3F
	v = d.u8()
	r.RateSelector, r.Rate = v>>6, v&0x3F
	v = d.u8()
	r.PacketLifeTimeSelector, r.PacketLifeTime = v>>6, v&0x3F
	r.Preference = d.u8()
	d.read(r.Reserved58[:])
	return nil
}
