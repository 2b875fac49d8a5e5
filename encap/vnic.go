package encap

import "encoding/binary"

// VNIC packets, L4 0x78 (docs/wire.md §3):
//
//	bytes 0-15   16B header
//	bytes 16-17  reserved, 0
//	bytes 18-19  vesw_id, little-endian u16
//	bytes 20-    Ethernet frame, no FCS, zero-padded to at least 60 bytes
//	then         pad (0..7 zero bytes), ICRC (4), tail (0x40 | pad)

// VNICParams are the header fields a VNIC port chooses per packet. LIDs are in
// the 24-bit 16B form (LID.To16B).
type VNICParams struct {
	SLID, DLID uint32
	SC         uint8 // 5 bits
	RC         uint8 // 3 bits
	PKey       PKey
	Entropy    uint16 // VNIC fills the low 8 bits
	VESWID     VESWID // written in full, as the kernel does
}

// VNICPad returns the pad count for a frame of frameLen bytes (after padding
// to MinFrameLen): (-(20 + frameLen + 5)) & 7.
func VNICPad(frameLen int) int { return -(VNICHeaderLen + frameLen + TrailerLen) & MaxPad }

// VNICPacketLen returns the wire length of the VNIC packet carrying a frame of
// frameLen bytes, counting the padding of short frames to MinFrameLen.
func VNICPacketLen(frameLen int) int {
	frameLen = max(frameLen, MinFrameLen)
	return VNICHeaderLen + frameLen + VNICPad(frameLen) + TrailerLen
}

// EncapVNIC wraps, in place, the Ethernet frame at buf[off:off+frameLen] into
// a 16B VNIC packet and returns it as a sub-slice of buf. It writes the 20-byte
// header into buf[off-20:off], zero-pads a frame shorter than 60 bytes, and
// writes pad, ICRC and tail after the frame; so buf must have off >= Headroom
// and room for VNICPacketLen(frameLen) bytes from off-20. Nothing else in buf
// is touched and nothing is allocated.
func EncapVNIC(buf []byte, off, frameLen int, p *VNICParams) ([]byte, error) {
	if off < VNICHeaderLen {
		return nil, ErrNoHeadroom
	}
	if frameLen > MaxFrameLen || frameLen < 0 {
		return nil, ErrFrameTooLong
	}
	total := VNICPacketLen(frameLen)
	start := off - VNICHeaderLen
	if start+total > len(buf) {
		return nil, ErrNoTailroom
	}
	pkt := buf[start : start+total]
	// Zero the runt padding and the pad; both are part of the ICRC.
	clear(pkt[VNICHeaderLen+frameLen : total-TrailerLen])
	le := binary.LittleEndian
	le.PutUint32(pkt[0:], p.SLID&lidLowMask|uint32(total/8)<<lenShift)
	le.PutUint32(pkt[4:], p.DLID&lidLowMask|uint32(p.SC&scMask)<<scShift|
		uint32(p.RC&rcMask)<<rcShift|L2Type16B<<l2Shift|ltBit)
	le.PutUint32(pkt[8:], L4Ethernet|(p.SLID>>20&lidHiMask)<<slidHiShift|
		(p.DLID>>20&lidHiMask)<<dlidHiShift|uint32(p.PKey)<<pkeyShift)
	le.PutUint32(pkt[12:], uint32(p.Entropy))
	le.PutUint32(pkt[16:], uint32(p.VESWID)<<16)
	pad := VNICPad(max(frameLen, MinFrameLen))
	pkt[total-1] = tailLT | byte(pad)
	putICRC(pkt)
	return pkt, nil
}

// VNICFrame returns the Ethernet frame (padding included, as the kernel
// passed it up) and the vesw_id (low 12 bits) of a packet whose framing Parse
// has validated and whose L4 is 0x78. The tail's pad count (tail & 7) decides
// where the frame ends; a pad count that leaves no room fails with ErrTail.
// The frame aliases pkt.
func VNICFrame(pkt []byte) ([]byte, VESWID, error) {
	n := len(pkt)
	end := n - TrailerLen - int(pkt[n-1]&tailPadMask)
	if end < VNICHeaderLen {
		return nil, 0, ErrTail
	}
	vesw := VESWID(binary.LittleEndian.Uint16(pkt[18:])) & VESWIDMask
	return pkt[VNICHeaderLen:end], vesw, nil
}

// DecapVNIC is the validating entry point for a VNIC packet: it checks, in
// the order of docs/wire.md §7, length against LEN, L2, ICRC, L4 (must be 0x78) and
// the tail, then returns the frame (a sub-slice of pkt), the header view and
// the vesw_id. The error is one of the package's sentinels.
func DecapVNIC(pkt []byte) (frame []byte, h Header16B, vesw VESWID, err error) {
	h, err = Parse(pkt, true)
	if err != nil {
		return nil, nil, 0, err
	}
	if h.L4() != L4Ethernet {
		return nil, nil, 0, ErrL4
	}
	frame, vesw, err = VNICFrame(pkt)
	if err != nil {
		return nil, nil, 0, err
	}
	return frame, h, vesw, nil
}
