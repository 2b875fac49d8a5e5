package encap

import "encoding/binary"

// Management packets, L4 0x08 (docs/wire.md §4; docs/linux-compat.md §12.1):
//
//	bytes 0-15   16B header, L4 = 0x08, LT = 0
//	bytes 16-19  destination QPN, big-endian (low 24 bits)
//	bytes 20-23  source QPN, big-endian
//	bytes 24-    MAD, a multiple of 8 bytes
//	then         pad (always 3), ICRC (4), tail (0x40 | 3)

// Well-known queue pairs.
const (
	QPNSMI  uint32 = 0 // subnet management (SMPs)
	QPNGSI  uint32 = 1 // general services (SA, VEMA)
	qpnMask uint32 = 0xFFFFFF
	mgmtPad        = 3
)

// MgmtParams are the header fields of a management packet. LIDs are 24-bit
// 16B LIDs.
type MgmtParams struct {
	SLID, DLID      uint32
	SC              uint8
	PKey            PKey
	DestQPN, SrcQPN uint32
}

// MgmtPacketLen returns the wire length of a management packet carrying a MAD
// of madLen bytes (a multiple of 8).
func MgmtPacketLen(madLen int) int { return MgmtHeaderLen + madLen + mgmtPad + TrailerLen }

// EncapMgmt wraps, in place, the MAD at buf[off:off+madLen] into a 16B
// management packet and returns it as a sub-slice of buf: the 24-byte header
// goes into buf[off-24:off], pad, ICRC and tail after the MAD.
func EncapMgmt(buf []byte, off, madLen int, p *MgmtParams) ([]byte, error) {
	if off < MgmtHeaderLen {
		return nil, ErrNoHeadroom
	}
	if madLen < 0 || madLen%8 != 0 {
		return nil, ErrMADLength
	}
	total := MgmtPacketLen(madLen)
	if total > MaxPacketLen {
		return nil, ErrFrameTooLong
	}
	start := off - MgmtHeaderLen
	if start+total > len(buf) {
		return nil, ErrNoTailroom
	}
	pkt := buf[start : start+total]
	le := binary.LittleEndian
	le.PutUint32(pkt[0:], p.SLID&lidLowMask|uint32(total/8)<<lenShift)
	le.PutUint32(pkt[4:], p.DLID&lidLowMask|uint32(p.SC&scMask)<<scShift|L2Type16B<<l2Shift)
	le.PutUint32(pkt[8:], L4FabricMgt|(p.SLID>>20&lidHiMask)<<slidHiShift|
		(p.DLID>>20&lidHiMask)<<dlidHiShift|uint32(p.PKey)<<pkeyShift)
	le.PutUint32(pkt[12:], 0)
	binary.BigEndian.PutUint32(pkt[16:], p.DestQPN&qpnMask)
	binary.BigEndian.PutUint32(pkt[20:], p.SrcQPN&qpnMask)
	clear(pkt[MgmtHeaderLen+madLen : total-TrailerLen])
	pkt[total-1] = tailLT | mgmtPad
	putICRC(pkt)
	return pkt, nil
}

// AppendMgmt appends to dst a management packet carrying mad and returns the
// extended slice. It is the control-path form of EncapMgmt.
func AppendMgmt(dst []byte, p *MgmtParams, mad []byte) ([]byte, error) {
	if len(mad)%8 != 0 {
		return dst, ErrMADLength
	}
	n := len(dst)
	total := MgmtPacketLen(len(mad))
	dst = append(dst, make([]byte, total)...)
	copy(dst[n+MgmtHeaderLen:], mad)
	if _, err := EncapMgmt(dst[n:], MgmtHeaderLen, len(mad), p); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// MgmtPacket is a parsed management packet; its slices alias the packet.
type MgmtPacket struct {
	Header  Header16B
	DestQPN uint32
	SrcQPN  uint32
	MAD     []byte
}

// MgmtPayload splits a packet whose framing Parse has validated and whose L4
// is 0x08 into its QPNs and MAD. The tail's pad count must be 3 (ErrTail).
func MgmtPayload(pkt []byte) (MgmtPacket, error) {
	n := len(pkt)
	if int(pkt[n-1]&tailPadMask) != mgmtPad || n < MgmtHeaderLen+mgmtPad+TrailerLen {
		return MgmtPacket{}, ErrTail
	}
	return MgmtPacket{
		Header:  Header16B(pkt[:HeaderLen]),
		DestQPN: binary.BigEndian.Uint32(pkt[16:]) & qpnMask,
		SrcQPN:  binary.BigEndian.Uint32(pkt[20:]) & qpnMask,
		MAD:     pkt[MgmtHeaderLen : n-TrailerLen-mgmtPad],
	}, nil
}

// ParseMgmt is the validating entry point for a management packet: length,
// L2, ICRC, L4 (must be 0x08) and tail, in that order.
func ParseMgmt(pkt []byte) (MgmtPacket, error) {
	h, err := Parse(pkt, true)
	if err != nil {
		return MgmtPacket{}, err
	}
	if h.L4() != L4FabricMgt {
		return MgmtPacket{}, ErrL4
	}
	return MgmtPayload(pkt)
}
