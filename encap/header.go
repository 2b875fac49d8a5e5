package encap

import (
	"encoding/binary"
	"errors"
)

// The 16B header (docs/wire.md §2; docs/linux-compat.md §1.2). Four little-endian
// 32-bit words:
//
//	lrh0 (bytes 0-3)   SLID[19:0] | LEN<<20 | BECN<<31
//	lrh1 (bytes 4-7)   DLID[19:0] | SC<<20 | RC<<25 | FECN<<28 | L2<<29 | LT<<31
//	lrh2 (bytes 8-11)  L4 | SLID[23:20]<<8 | DLID[23:20]<<12 | PKEY<<16
//	lrh3 (bytes 12-15) Entropy | Age<<16 | reserved<<24
const (
	lidLowMask  = 0xFFFFF
	lenShift    = 20
	lenMask     = 0x7FF
	becnBit     = 1 << 31
	scShift     = 20
	scMask      = 0x1F
	rcShift     = 25
	rcMask      = 0x7
	fecnBit     = 1 << 28
	l2Shift     = 29
	l2Mask      = 0x3
	ltBit       = 1 << 31
	l4Mask      = 0xFF
	slidHiShift = 8 // SLID[23:20] at lrh2 bits 11:8
	dlidHiShift = 12
	lidHiMask   = 0xF
	pkeyShift   = 16
	ageShift    = 16
	ageMask     = 0xFF
	entropyMask = 0xFFFF
)

// Packet layout constants (docs/wire.md §3, §4).
const (
	HeaderLen     = 16    // the 16B LRH
	VNICHeaderLen = 20    // LRH + 2 reserved bytes + vesw_id
	MgmtHeaderLen = 24    // LRH + dest QPN + src QPN
	ICRCLen       = 4     // 16B ICRC
	TailLen       = 1     // tail byte
	TrailerLen    = 5     // ICRC + tail
	MaxPad        = 7     // largest pad
	MinFrameLen   = 60    // ETH_ZLEN: frames are zero-padded to this
	MaxLEN        = 2047  // largest LEN field (QWs)
	MaxPacketLen  = 16376 // MaxLEN * 8
	// MaxFrameLen is the longest Ethernet frame (no FCS) a VNIC packet can
	// carry: 20 + 16351 + 0 pad + 5 = 16376.
	MaxFrameLen = MaxPacketLen - VNICHeaderLen - TrailerLen
	// Headroom is what a transmit buffer must keep free before the frame.
	Headroom = VNICHeaderLen
	// Tailroom is what a transmit buffer must keep free after a frame of at
	// least MinFrameLen bytes: pad, ICRC and tail. A shorter frame also needs
	// the bytes up to MinFrameLen.
	Tailroom = MaxPad + TrailerLen
	// MinPacketLen is the smallest datagram a receiver considers at all.
	MinPacketLen = 24
)

// L2 and L4 type values.
const (
	L2Type16B   = 2    // L2 field for 16B
	L4Ethernet  = 0x78 // OPA_VNIC_L4_ETHR
	L4FabricMgt = 0x08 // OPA_16B_L4_FM
	tailLT      = 0x40 // tail byte LT=01 in bits 7:6
	tailPadMask = 0x7
)

// Header16B is a view over the first 16 bytes of a 16B packet. Accessors do
// not check the length: use Parse (or build the header yourself) first. A
// Header16B aliases the caller's buffer; setters write through.
type Header16B []byte

func (h Header16B) w(i int) uint32       { return binary.LittleEndian.Uint32(h[4*i:]) }
func (h Header16B) setW(i int, v uint32) { binary.LittleEndian.PutUint32(h[4*i:], v) }

func (h Header16B) setBits(i int, mask, shift, v uint32) {
	h.setW(i, h.w(i)&^(mask<<shift)|(v&mask)<<shift)
}

func (h Header16B) setFlag(i int, bit uint32, on bool) {
	if on {
		h.setW(i, h.w(i)|bit)
	} else {
		h.setW(i, h.w(i)&^bit)
	}
}

// SLID returns the 24-bit source LID.
func (h Header16B) SLID() uint32 {
	return h.w(0)&lidLowMask | (h.w(2)>>slidHiShift&lidHiMask)<<20
}

// SetSLID writes the 24-bit source LID (bits above 23 are dropped).
func (h Header16B) SetSLID(v uint32) {
	h.setBits(0, lidLowMask, 0, v)
	h.setBits(2, lidHiMask, slidHiShift, v>>20)
}

// DLID returns the 24-bit destination LID.
func (h Header16B) DLID() uint32 {
	return h.w(1)&lidLowMask | (h.w(2)>>dlidHiShift&lidHiMask)<<20
}

// SetDLID writes the 24-bit destination LID (bits above 23 are dropped).
func (h Header16B) SetDLID(v uint32) {
	h.setBits(1, lidLowMask, 0, v)
	h.setBits(2, lidHiMask, dlidHiShift, v>>20)
}

// Len returns the LEN field: the packet length in 8-byte flits.
func (h Header16B) Len() int { return int(h.w(0) >> lenShift & lenMask) }

// SetLen writes the LEN field (11 bits).
func (h Header16B) SetLen(flits int) { h.setBits(0, lenMask, lenShift, uint32(flits)) }

// BECN returns the backward congestion bit.
func (h Header16B) BECN() bool { return h.w(0)&becnBit != 0 }

// SetBECN writes the backward congestion bit.
func (h Header16B) SetBECN(on bool) { h.setFlag(0, becnBit, on) }

// SC returns the 5-bit service class.
func (h Header16B) SC() uint8 { return uint8(h.w(1) >> scShift & scMask) }

// SetSC writes the service class (5 bits; higher bits are dropped, unlike the
// kernel, which let an SC > 31 spill into RC).
func (h Header16B) SetSC(sc uint8) { h.setBits(1, scMask, scShift, uint32(sc)) }

// RC returns the 3-bit routing control.
func (h Header16B) RC() uint8 { return uint8(h.w(1) >> rcShift & rcMask) }

// SetRC writes the routing control (3 bits).
func (h Header16B) SetRC(rc uint8) { h.setBits(1, rcMask, rcShift, uint32(rc)) }

// FECN returns the forward congestion bit.
func (h Header16B) FECN() bool { return h.w(1)&fecnBit != 0 }

// SetFECN writes the forward congestion bit.
func (h Header16B) SetFECN(on bool) { h.setFlag(1, fecnBit, on) }

// L2 returns the 2-bit L2 type (2 for 16B).
func (h Header16B) L2() uint8 { return uint8(h.w(1) >> l2Shift & l2Mask) }

// SetL2 writes the L2 type.
func (h Header16B) SetL2(v uint8) { h.setBits(1, l2Mask, l2Shift, uint32(v)) }

// LT returns bit 31 of lrh1, set on VNIC packets.
func (h Header16B) LT() bool { return h.w(1)&ltBit != 0 }

// SetLT writes bit 31 of lrh1.
func (h Header16B) SetLT(on bool) { h.setFlag(1, ltBit, on) }

// L4 returns the L4 type.
func (h Header16B) L4() uint8 { return h[8] }

// SetL4 writes the L4 type.
func (h Header16B) SetL4(v uint8) { h[8] = v }

// PKey returns the partition key.
func (h Header16B) PKey() PKey { return PKey(h.w(2) >> pkeyShift) }

// SetPKey writes the partition key.
func (h Header16B) SetPKey(p PKey) { h.setBits(2, 0xFFFF, pkeyShift, uint32(p)) }

// Entropy returns the 16-bit entropy field.
func (h Header16B) Entropy() uint16 { return uint16(h.w(3) & entropyMask) }

// SetEntropy writes the entropy field.
func (h Header16B) SetEntropy(e uint16) { h.setBits(3, entropyMask, 0, uint32(e)) }

// Age returns the 8-bit age field.
func (h Header16B) Age() uint8 { return uint8(h.w(3) >> ageShift & ageMask) }

// SetAge writes the age field.
func (h Header16B) SetAge(a uint8) { h.setBits(3, ageMask, ageShift, uint32(a)) }

// Sentinel errors of the receive checks (docs/wire.md §7) and of encapsulation.
var (
	ErrShort        = errors.New("encap: packet shorter than 24 bytes")
	ErrLength       = errors.New("encap: datagram length is not LEN*8")
	ErrL2           = errors.New("encap: L2 type is not 16B")
	ErrICRC         = errors.New("encap: bad ICRC")
	ErrL4           = errors.New("encap: unexpected L4 type")
	ErrTail         = errors.New("encap: tail pad count leaves no payload")
	ErrNoHeadroom   = errors.New("encap: no headroom for the header")
	ErrNoTailroom   = errors.New("encap: no tailroom for pad, ICRC and tail")
	ErrFrameTooLong = errors.New("encap: frame too long for LEN")
	ErrMADLength    = errors.New("encap: MAD length is not a multiple of 8")
)

// Parse validates the framing of a 16B packet in the order of docs/wire.md §7
// (length, L2, ICRC when verify is set) and returns its header view. It does
// not look at L4; DecapVNIC and ParseMgmt do.
func Parse(pkt []byte, verify bool) (Header16B, error) {
	if len(pkt) < MinPacketLen {
		return nil, ErrShort
	}
	h := Header16B(pkt[:HeaderLen])
	if h.Len()*8 != len(pkt) {
		return nil, ErrLength
	}
	if h.L2() != L2Type16B {
		return nil, ErrL2
	}
	if verify && !CheckICRC(pkt) {
		return nil, ErrICRC
	}
	return h, nil
}
