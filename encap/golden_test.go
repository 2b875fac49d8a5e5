package encap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// This file holds the golden vectors: packets whose every header and trailer
// byte is written out by hand from docs/wire.md §2-§4 (and docs/linux-compat.md
// §1.2-§1.3, §12.1), with the field each byte carries named beside it. The
// expected bytes never come from the encoder. The one value not written out
// is the ICRC, which refICRC computes from the spec's definition (docs/wire.md §5)
// with crc32.ChecksumIEEE; a few vectors also pin it as a literal computed
// outside Go (Python's zlib.crc32 over the same bytes with the variant bits
// forced to one).

// refICRC is the ICRC of docs/wire.md §5, computed from the spec's words and not
// from the package: crc32.ChecksumIEEE over a copy of every byte before the
// ICRC, with BECN (lrh0 bit 31), SC (lrh1 bits 20-24), FECN (lrh1 bit 28) and
// Age (lrh3 bits 16-23) forced to one.
func refICRC(pkt []byte) uint32 {
	c := bytes.Clone(pkt[:len(pkt)-5])
	le := binary.LittleEndian
	le.PutUint32(c[0:], le.Uint32(c[0:])|1<<31)          // BECN
	le.PutUint32(c[4:], le.Uint32(c[4:])|0x1F<<20|1<<28) // SC, FECN
	le.PutUint32(c[12:], le.Uint32(c[12:])|0xFF<<16)     // Age
	return crc32.ChecksumIEEE(c)
}

// storeRefICRC writes refICRC into the ICRC bytes (the 4 before the tail).
func storeRefICRC(pkt []byte) {
	binary.LittleEndian.PutUint32(pkt[len(pkt)-5:], refICRC(pkt))
}

// patFrame returns an n-byte Ethernet frame with a documented content:
//
//	bytes 0-5   destination 02:00:01:02:00:00 (locally administered unicast;
//	            bytes 3-5 carry LID 0x000002, docs/linux-compat.md §2.3)
//	bytes 6-11  source      02:00:01:01:00:00 (LID 0x000001)
//	bytes 12-13 EtherType 0x88B5 (IEEE local experimental)
//	bytes 14-   byte i holds byte(i) (i mod 256)
//
// A frame shorter than 14 bytes is the prefix of that.
func patFrame(n int) []byte {
	hdr := []byte{
		0x02, 0x00, 0x01, 0x02, 0x00, 0x00, // dst
		0x02, 0x00, 0x01, 0x01, 0x00, 0x00, // src
		0x88, 0xB5, // EtherType
	}
	f := make([]byte, n)
	for i := range f {
		if i < len(hdr) {
			f[i] = hdr[i]
		} else {
			f[i] = byte(i)
		}
	}
	return f
}

// withDst returns f with its destination MAC replaced.
func withDst(f []byte, dst ...byte) []byte {
	copy(f, dst)
	return f
}

// arpRequest is a 42-byte frame (a runt: the sender zero-pads it to 60).
var arpRequest = []byte{
	0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // dst broadcast
	0x02, 0x00, 0x01, 0x01, 0x00, 0x00, // src
	0x08, 0x06, // EtherType ARP
	0x00, 0x01, // htype Ethernet
	0x08, 0x00, // ptype IPv4
	0x06, 0x04, // hlen, plen
	0x00, 0x01, // op request
	0x02, 0x00, 0x01, 0x01, 0x00, 0x00, // sender MAC
	0x0A, 0x00, 0x00, 0x01, // sender IP 10.0.0.1
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // target MAC
	0x0A, 0x00, 0x00, 0x02, // target IP 10.0.0.2
}

// vlanUDP is a 64-byte 802.1Q-tagged IPv4 UDP frame, PCP 5, VID 100.
var vlanUDP = []byte{
	0x02, 0x00, 0x01, 0x02, 0x00, 0x00, // dst
	0x02, 0x00, 0x01, 0x01, 0x00, 0x00, // src
	0x81, 0x00, // TPID 802.1Q
	0xA0, 0x64, // TCI: PCP 5 (bits 15-13), DEI 0, VID 100
	0x08, 0x00, // EtherType IPv4
	0x45, 0x00, 0x00, 0x2E, // version 4, IHL 5, TOS 0, total length 46
	0x00, 0x01, 0x00, 0x00, // ID 1, flags 0, fragment offset 0
	0x40, 0x11, 0x00, 0x00, // TTL 64, protocol UDP, checksum (not read, left 0)
	0x0A, 0x00, 0x00, 0x01, // source 10.0.0.1
	0x0A, 0x00, 0x00, 0x02, // destination 10.0.0.2
	0x13, 0x88, 0x17, 0x70, // UDP ports 5000 -> 6000
	0x00, 0x1A, 0x00, 0x00, // UDP length 26, checksum 0
	'g', 'o', 'l', 'd', 'e', 'n', ' ', 'v', 'l', 'a', 'n', ' ', 'f', 'r', 'a', 'm', 'e', '!', // 18 bytes
}

// vnicVector is one VNIC golden vector.
type vnicVector struct {
	name  string
	p     encap.VNICParams
	frame []byte   // what EncapVNIC gets
	hdr   [20]byte // bytes 0-19, written out field by field
	pad   int      // pad bytes after the frame (after padding it to 60)
	size  int      // datagram length, LEN*8
	tail  byte     // 0x40 | pad
	icrc  uint32   // if not 0, the ICRC pinned as a literal (see the file comment)
}

// base is the parameter set most vectors share.
var base = encap.VNICParams{SLID: 0x000001, DLID: 0x000002, PKey: 0x8001, Entropy: 0x00A5, VESWID: 0x001}

func with(f func(*encap.VNICParams)) encap.VNICParams {
	p := base
	f(&p)
	return p
}

// Header words of the base parameters (only lrh0 changes with LEN):
//
//	lrh1 = DLID[19:0] 0x00002 | SC 0<<20 | RC 0<<25 | FECN 0 | L2 2<<29 | LT 1<<31 = 0xC0000002
//	lrh2 = L4 0x78 | SLID[23:20] 0<<8 | DLID[23:20] 0<<12 | PKEY 0x8001<<16       = 0x80010078
//	lrh3 = Entropy 0x00A5 | Age 0<<16 | reserved 0                                = 0x000000A5
//	h4   = reserved 0x0000 | vesw_id 0x0001<<16                                   = 0x00010000
//
// lrh0 = SLID[19:0] 0x00001 | LEN<<20 | BECN 0:
//
//	LEN 11   (88 bytes)    0x00B00001 -> 01 00 B0 00
//	LEN 12   (96 bytes)    0x00C00001 -> 01 00 C0 00
//	LEN 191  (1528 bytes)  0x0BF00001 -> 01 00 F0 0B
//	LEN 193  (1544 bytes)  0x0C100001 -> 01 00 10 0C
//	LEN 1129 (9032 bytes)  0x46900001 -> 01 00 90 46
//	LEN 2047 (16376 bytes) 0x7FF00001 -> 01 00 F0 7F
//
// pad = (-(20 + frameLen + 5)) & 7, so a frame of 63, 62, 61, 60, 67, 66, 65
// and 64 bytes gives pad 0, 1, ... 7 (docs/wire.md §3).
func vnicVectors() []vnicVector {
	return []vnicVector{
		{
			name: "pad0/frame63", p: base, frame: patFrame(63), pad: 0, size: 88, tail: 0x40,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11, BECN 0
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, SC 0, RC 0, FECN 0, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, SLID/DLID[23:20] 0, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5, age 0, reserved 0
				0x00, 0x00, 0x01, 0x00, // reserved 0, vesw_id 0x0001 (LE)
			},
		},
		{
			name: "pad1/frame62", p: base, frame: patFrame(62), pad: 1, size: 88, tail: 0x41,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			name: "pad2/frame61", p: base, frame: patFrame(61), pad: 2, size: 88, tail: 0x42,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// The smallest VNIC packet: 20 + 60 + 3 + 5 = 88 bytes, 11 QWs.
			name: "pad3/frame60-minimum", p: base, frame: patFrame(60), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
			icrc: 0xE8447D2D,
		},
		{
			name: "pad4/frame67", p: base, frame: patFrame(67), pad: 4, size: 96, tail: 0x44,
			hdr: [20]byte{
				0x01, 0x00, 0xC0, 0x00, // lrh0: SLID 0x00001, LEN 12
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			name: "pad5/frame66", p: base, frame: patFrame(66), pad: 5, size: 96, tail: 0x45,
			hdr: [20]byte{
				0x01, 0x00, 0xC0, 0x00, // lrh0: SLID 0x00001, LEN 12
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			name: "pad6/frame65", p: base, frame: patFrame(65), pad: 6, size: 96, tail: 0x46,
			hdr: [20]byte{
				0x01, 0x00, 0xC0, 0x00, // lrh0: SLID 0x00001, LEN 12
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			name: "pad7/frame64", p: base, frame: patFrame(64), pad: 7, size: 96, tail: 0x47,
			hdr: [20]byte{
				0x01, 0x00, 0xC0, 0x00, // lrh0: SLID 0x00001, LEN 12
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// A 42-byte ARP request is zero-padded to 60: 20 + 60 + 3 + 5 = 88.
			name: "runt42/ARP-padded-to-60", p: base, frame: arpRequest, pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// An empty frame becomes 60 zero bytes.
			name: "runt0/empty-padded-to-60", p: base, frame: []byte{}, pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// docs/wire.md §3: a 1500-byte frame gives pad 3, LEN 191 (1528 bytes).
			name: "frame1500", p: base, frame: patFrame(1500), pad: 3, size: 1528, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xF0, 0x0B, // lrh0: SLID 0x00001, LEN 191 (0xBF)
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// docs/wire.md §3: a 1514-byte frame gives pad 5, LEN 193 (1544 bytes).
			name: "frame1514", p: base, frame: patFrame(1514), pad: 5, size: 1544, tail: 0x45,
			hdr: [20]byte{
				0x01, 0x00, 0x10, 0x0C, // lrh0: SLID 0x00001, LEN 193 (0xC1)
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// 20 + 9000 + 7 + 5 = 9032 bytes, LEN 1129.
			name: "frame9000", p: base, frame: patFrame(9000), pad: 7, size: 9032, tail: 0x47,
			hdr: [20]byte{
				0x01, 0x00, 0x90, 0x46, // lrh0: SLID 0x00001, LEN 1129 (0x469)
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// The largest frame LEN allows: 20 + 16351 + 0 + 5 = 16376 = 2047 QWs.
			name: "frame16351-max", p: base, frame: patFrame(16351), pad: 0, size: 16376, tail: 0x40,
			hdr: [20]byte{
				0x01, 0x00, 0xF0, 0x7F, // lrh0: SLID 0x00001, LEN 2047 (0x7FF)
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// lrh0 = 0x0C000 | 11<<20 = 0x00B0C000; lrh1 = 0xABCDE | 0xC0000000 = 0xC00ABCDE.
			name:  "extended-SLID-0x0C000-DLID-0xABCDE",
			p:     with(func(p *encap.VNICParams) { p.SLID, p.DLID = 0x0C000, 0xABCDE }),
			frame: patFrame(60), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x00, 0xC0, 0xB0, 0x00, // lrh0: SLID[19:0] 0x0C000, LEN 11
				0xDE, 0xBC, 0x0A, 0xC0, // lrh1: DLID[19:0] 0xABCDE, SC 0, RC 0, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0, DLID[23:20] 0, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// lrh1 = 0xFFFFF | 0xC0000000 = 0xC00FFFFF; lrh2 = 0x78 | 0xE<<12 | 0x8001<<16 = 0x8001E078.
			name:  "max-unicast-DLID-0xEFFFFF",
			p:     with(func(p *encap.VNICParams) { p.DLID = 0xEFFFFF }),
			frame: patFrame(60), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0xFF, 0xFF, 0x0F, 0xC0, // lrh1: DLID[19:0] 0xFFFFF, SC 0, RC 0, L2 2, LT 1
				0x78, 0xE0, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0, DLID[23:20] 0xE, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// lrh0 = 0xFFFFF | 11<<20 = 0x00BFFFFF; lrh2 = 0x78 | 0xE<<8 | 0x8001<<16 = 0x80010E78.
			name:  "max-unicast-SLID-0xEFFFFF",
			p:     with(func(p *encap.VNICParams) { p.SLID = 0xEFFFFF }),
			frame: patFrame(60), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0xFF, 0xFF, 0xBF, 0x00, // lrh0: SLID[19:0] 0xFFFFF, LEN 11
				0x02, 0x00, 0x00, 0xC0, // lrh1: DLID 0x00002, L2 2, LT 1
				0x78, 0x0E, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0xE, DLID[23:20] 0, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// A multicast frame (01:00:5E:00:00:01) to the 16B multicast LID
			// 0xF00001: lrh1 = 0x00001 | 0xC0000000; lrh2 = 0x78 | 0xF<<12 | 0x8001<<16.
			name:  "multicast-DLID-0xF00001",
			p:     with(func(p *encap.VNICParams) { p.DLID = 0xF00001 }),
			frame: withDst(patFrame(60), 0x01, 0x00, 0x5E, 0x00, 0x00, 0x01), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0x01, 0x00, 0xB0, 0x00, // lrh0: SLID 0x00001, LEN 11
				0x01, 0x00, 0x00, 0xC0, // lrh1: DLID[19:0] 0x00001, SC 0, RC 0, L2 2, LT 1
				0x78, 0xF0, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0, DLID[23:20] 0xF, PKEY 0x8001
				0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
				0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
			},
		},
		{
			// A 64-byte 802.1Q frame (PCP 5) sent with SC 0x15, RC 5, entropy
			// 0x5A, vesw 0x123: lrh1 = 0x00002 | 0x15<<20 | 5<<25 | 2<<29 | 1<<31
			// = 0xCB500002 (byte 6 = SC[3:0]<<4, byte 7 = LT|L2|FECN|RC|SC[4]).
			name: "VLAN-802.1Q-PCP5-SC0x15-RC5",
			p: with(func(p *encap.VNICParams) {
				p.SC, p.RC, p.Entropy, p.VESWID = 0x15, 5, 0x5A, 0x123
			}),
			frame: vlanUDP, pad: 7, size: 96, tail: 0x47,
			hdr: [20]byte{
				0x01, 0x00, 0xC0, 0x00, // lrh0: SLID 0x00001, LEN 12
				0x02, 0x00, 0x50, 0xCB, // lrh1: DLID 0x00002, SC 0x15, RC 5, FECN 0, L2 2, LT 1
				0x78, 0x00, 0x01, 0x80, // lrh2: L4 0x78, PKEY 0x8001
				0x5A, 0x00, 0x00, 0x00, // lrh3: entropy 0x005A, age 0
				0x00, 0x00, 0x23, 0x01, // reserved 0, vesw_id 0x0123 (LE)
			},
		},
		{
			// Every field at its widest: SLID 0xEFFFFF, DLID 0xFFFFFF
			// (permissive), SC 31, RC 7, PKEY 0xFFFF, entropy 0xFFFF, vesw_id
			// 0xFFFF (written in full; a receiver sees 0xFFF).
			// lrh1 = 0xFFFFF | 0x1F<<20 | 7<<25 | 2<<29 | 1<<31 = 0xCFFFFFFF (FECN stays 0).
			// lrh2 = 0x78 | 0xE<<8 | 0xF<<12 | 0xFFFF<<16 = 0xFFFFFE78.
			name: "all-fields-widest",
			p: encap.VNICParams{SLID: 0xEFFFFF, DLID: 0xFFFFFF, SC: 31, RC: 7,
				PKey: 0xFFFF, Entropy: 0xFFFF, VESWID: 0xFFFF},
			frame: patFrame(60), pad: 3, size: 88, tail: 0x43,
			hdr: [20]byte{
				0xFF, 0xFF, 0xBF, 0x00, // lrh0: SLID[19:0] 0xFFFFF, LEN 11, BECN 0
				0xFF, 0xFF, 0xFF, 0xCF, // lrh1: DLID[19:0] 0xFFFFF, SC 31, RC 7, FECN 0, L2 2, LT 1
				0x78, 0xFE, 0xFF, 0xFF, // lrh2: L4 0x78, SLID[23:20] 0xE, DLID[23:20] 0xF, PKEY 0xFFFF
				0xFF, 0xFF, 0x00, 0x00, // lrh3: entropy 0xFFFF, age 0, reserved 0
				0x00, 0x00, 0xFF, 0xFF, // reserved 0, vesw_id 0xFFFF
			},
			icrc: 0xAF2ABE17,
		},
	}
}

// wirePacket assembles v's expected datagram from its hand-written parts:
// header, frame zero-padded to 60, pad zeros, ICRC (refICRC), tail.
func (v *vnicVector) wirePacket() []byte {
	pkt := append([]byte(nil), v.hdr[:]...)
	pkt = append(pkt, v.frame...)
	for len(pkt) < 20+60 {
		pkt = append(pkt, 0) // runt padding
	}
	pkt = append(pkt, make([]byte, v.pad)...)
	pkt = append(pkt, 0, 0, 0, 0, v.tail)
	storeRefICRC(pkt)
	return pkt
}

// paddedFrame is v's frame as a receiver gets it back: zero-padded to 60.
func (v *vnicVector) paddedFrame() []byte {
	f := append([]byte(nil), v.frame...)
	for len(f) < 60 {
		f = append(f, 0)
	}
	return f
}

func TestGoldenVectorsSelfConsistent(t *testing.T) {
	pads := map[int]bool{}
	for _, v := range vnicVectors() {
		pkt := v.wirePacket()
		if len(pkt) != v.size || v.size%8 != 0 {
			t.Errorf("%s: assembled %d bytes, vector says %d", v.name, len(pkt), v.size)
		}
		if got := int(binary.LittleEndian.Uint32(v.hdr[0:]) >> 20 & 0x7FF); got*8 != v.size {
			t.Errorf("%s: LEN in the written header is %d, size is %d", v.name, got, v.size)
		}
		if v.tail != 0x40|byte(v.pad) {
			t.Errorf("%s: tail %#x for pad %d", v.name, v.tail, v.pad)
		}
		if v.icrc != 0 && refICRC(pkt) != v.icrc {
			t.Errorf("%s: refICRC %#08x, pinned %#08x", v.name, refICRC(pkt), v.icrc)
		}
		pads[v.pad] = true
	}
	for pad := range 8 {
		if !pads[pad] {
			t.Errorf("no vector with pad %d", pad)
		}
	}
}

// fillByte marks the parts of a buffer the encoder must not touch.
const fillByte = 0xEE

func TestEncapVNICGolden(t *testing.T) {
	for _, v := range vnicVectors() {
		t.Run(v.name, func(t *testing.T) {
			want := v.wirePacket()
			// Headroom larger than needed, garbage everywhere: the encoder
			// must zero the runt padding and the pad itself.
			const lead = 37
			buf := bytes.Repeat([]byte{fillByte}, lead+len(want)+29)
			off := lead + encap.Headroom
			copy(buf[off:], v.frame)
			p := v.p
			pkt, err := encap.EncapVNIC(buf, off, len(v.frame), &p)
			if err != nil {
				t.Fatalf("EncapVNIC: %v", err)
			}
			if &pkt[0] != &buf[lead] {
				t.Errorf("packet does not start 20 bytes before the frame in buf")
			}
			if !bytes.Equal(pkt, want) {
				t.Errorf("packet differs from the golden bytes")
				diffBytes(t, pkt, want)
			}
			if got := binary.LittleEndian.Uint32(pkt[len(pkt)-5:]); got != refICRC(want) {
				t.Errorf("ICRC %#08x, want %#08x", got, refICRC(want))
			}
			for i, b := range buf {
				if (i < lead || i >= lead+len(want)) && b != fillByte {
					t.Fatalf("byte %d outside the packet was written (%#x)", i, b)
				}
			}
			if n := encap.VNICPacketLen(len(v.frame)); n != v.size {
				t.Errorf("VNICPacketLen(%d) = %d, want %d", len(v.frame), n, v.size)
			}
			if pad := encap.VNICPad(len(v.paddedFrame())); pad != v.pad {
				t.Errorf("VNICPad(%d) = %d, want %d", len(v.paddedFrame()), pad, v.pad)
			}
		})
	}
}

func TestDecapVNICGolden(t *testing.T) {
	for _, v := range vnicVectors() {
		t.Run(v.name, func(t *testing.T) {
			pkt := v.wirePacket()
			frame, h, vesw, err := encap.DecapVNIC(pkt)
			if err != nil {
				t.Fatalf("DecapVNIC: %v", err)
			}
			if !bytes.Equal(frame, v.paddedFrame()) {
				t.Errorf("frame differs (len %d, want %d)", len(frame), len(v.paddedFrame()))
			}
			if &frame[0] != &pkt[20] {
				t.Errorf("frame does not alias the packet at byte 20")
			}
			if len(h) != 16 || &h[0] != &pkt[0] {
				t.Errorf("header view is not pkt[:16]")
			}
			checkVNICHeader(t, h, &v.p, v.size)
			if vesw != v.p.VESWID&0xFFF {
				t.Errorf("vesw %#x, want %#x", vesw, v.p.VESWID&0xFFF)
			}
			// VNICFrame on a parsed packet agrees.
			f2, vesw2, err := encap.VNICFrame(pkt)
			if err != nil || !bytes.Equal(f2, frame) || vesw2 != vesw {
				t.Errorf("VNICFrame = %d bytes, %#x, %v", len(f2), vesw2, err)
			}
		})
	}
}

// checkVNICHeader checks every field of a VNIC header against the params it
// was built from.
func checkVNICHeader(t *testing.T, h encap.Header16B, p *encap.VNICParams, size int) {
	t.Helper()
	type fv struct {
		name      string
		got, want uint64
	}
	b2u := func(b bool) uint64 {
		if b {
			return 1
		}
		return 0
	}
	for _, f := range []fv{
		{"SLID", uint64(h.SLID()), uint64(p.SLID & 0xFFFFFF)},
		{"DLID", uint64(h.DLID()), uint64(p.DLID & 0xFFFFFF)},
		{"LEN", uint64(h.Len()), uint64(size / 8)},
		{"BECN", b2u(h.BECN()), 0},
		{"SC", uint64(h.SC()), uint64(p.SC & 31)},
		{"RC", uint64(h.RC()), uint64(p.RC & 7)},
		{"FECN", b2u(h.FECN()), 0},
		{"L2", uint64(h.L2()), 2},
		{"LT", b2u(h.LT()), 1},
		{"L4", uint64(h.L4()), 0x78},
		{"PKEY", uint64(h.PKey()), uint64(p.PKey)},
		{"Entropy", uint64(h.Entropy()), uint64(p.Entropy)},
		{"Age", uint64(h.Age()), 0},
	} {
		if f.got != f.want {
			t.Errorf("%s = %#x, want %#x", f.name, f.got, f.want)
		}
	}
}

func diffBytes(t *testing.T, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("length %d, want %d", len(got), len(want))
	}
	n := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("byte %d: %#02x, want %#02x", i, got[i], want[i])
			if n++; n == 8 {
				t.Errorf("...")
				return
			}
		}
	}
}

// Management golden vectors (docs/wire.md §4, docs/linux-compat.md §12.1).
type mgmtVector struct {
	name string
	p    encap.MgmtParams
	mad  []byte
	hdr  [24]byte // bytes 0-23, written out field by field
	size int      // LEN*8
	icrc uint32   // pinned literal when not 0
}

// patMAD returns an n-byte MAD: a VEMA Get common header start
// (base version 0x80, class 0x34, class version 0x80, method 0x01), then
// byte i holds byte(i).
func patMAD(n int) []byte {
	m := make([]byte, n)
	for i := range m {
		m[i] = byte(i)
	}
	copy(m, []byte{0x80, 0x34, 0x80, 0x01})
	return m
}

func mgmtVectors() []mgmtVector {
	return []mgmtVector{
		{
			// A 256-byte GSI MAD: 24 + 256 + 3 + 5 = 288 bytes, LEN 36
			// (docs/linux-compat.md §12.2). LT = 0 (lrh1 constant bits 0x40000000).
			// lrh0 = 0x0C001 | 36<<20 = 0x0240C001
			// lrh1 = 0x00001 | SC 0<<20 | 2<<29 = 0x40000001
			// lrh2 = 0x08 | 0<<8 | 0<<12 | 0xFFFF<<16 = 0xFFFF0008
			name: "GSI-256",
			p: encap.MgmtParams{SLID: 0x0C001, DLID: 0x00001, SC: 0, PKey: 0xFFFF,
				DestQPN: encap.QPNGSI, SrcQPN: 0xABCDEF},
			mad: patMAD(256), size: 288,
			hdr: [24]byte{
				0x01, 0xC0, 0x40, 0x02, // lrh0: SLID[19:0] 0x0C001, LEN 36, BECN 0
				0x01, 0x00, 0x00, 0x40, // lrh1: DLID 0x00001, SC 0, RC 0, FECN 0, L2 2, LT 0
				0x08, 0x00, 0xFF, 0xFF, // lrh2: L4 0x08, SLID/DLID[23:20] 0, PKEY 0xFFFF
				0x00, 0x00, 0x00, 0x00, // lrh3: entropy 0, age 0
				0x00, 0x00, 0x00, 0x01, // destination QPN 1 (GSI), big-endian
				0x00, 0xAB, 0xCD, 0xEF, // source QPN 0xABCDEF, big-endian
			},
			icrc: 0x0FC920AE,
		},
		{
			// A directed-route SMP to QP0, 2048-byte OPA MAD, SC 15, permissive
			// LIDs: 24 + 2048 + 3 + 5 = 2080 bytes, LEN 260 (0x104).
			// lrh0 = 0xFFFFF | 0x104<<20 = 0x104FFFFF
			// lrh1 = 0xFFFFF | 15<<20 | 2<<29 = 0x40FFFFFF
			// lrh2 = 0x08 | 0xF<<8 | 0xF<<12 | 0xFFFF<<16 = 0xFFFFFF08
			name: "SMI-2048-permissive",
			p: encap.MgmtParams{SLID: 0xFFFFFF, DLID: 0xFFFFFF, SC: 15, PKey: 0xFFFF,
				DestQPN: encap.QPNSMI, SrcQPN: encap.QPNSMI},
			mad: patMAD(2048), size: 2080,
			hdr: [24]byte{
				0xFF, 0xFF, 0x4F, 0x10, // lrh0: SLID[19:0] 0xFFFFF, LEN 260
				0xFF, 0xFF, 0xFF, 0x40, // lrh1: DLID[19:0] 0xFFFFF, SC 15, RC 0, L2 2, LT 0
				0x08, 0xFF, 0xFF, 0xFF, // lrh2: L4 0x08, SLID[23:20] 0xF, DLID[23:20] 0xF, PKEY 0xFFFF
				0x00, 0x00, 0x00, 0x00, // lrh3: 0
				0x00, 0x00, 0x00, 0x00, // destination QPN 0 (SMI)
				0x00, 0x00, 0x00, 0x00, // source QPN 0
			},
		},
	}
}

// wirePacket assembles the expected datagram: header, MAD, pad 3 zeros,
// ICRC, tail 0x43.
func (v *mgmtVector) wirePacket() []byte {
	pkt := append([]byte(nil), v.hdr[:]...)
	pkt = append(pkt, v.mad...)
	pkt = append(pkt, 0, 0, 0) // pad 3
	pkt = append(pkt, 0, 0, 0, 0, 0x43)
	storeRefICRC(pkt)
	return pkt
}

func TestMgmtGolden(t *testing.T) {
	for _, v := range mgmtVectors() {
		t.Run(v.name, func(t *testing.T) {
			want := v.wirePacket()
			if len(want) != v.size || encap.MgmtPacketLen(len(v.mad)) != v.size {
				t.Fatalf("sizes: assembled %d, MgmtPacketLen %d, vector %d",
					len(want), encap.MgmtPacketLen(len(v.mad)), v.size)
			}
			if v.icrc != 0 && refICRC(want) != v.icrc {
				t.Errorf("refICRC %#08x, pinned %#08x", refICRC(want), v.icrc)
			}
			const lead = 11
			buf := bytes.Repeat([]byte{fillByte}, lead+len(want)+13)
			off := lead + encap.MgmtHeaderLen
			copy(buf[off:], v.mad)
			p := v.p
			pkt, err := encap.EncapMgmt(buf, off, len(v.mad), &p)
			if err != nil {
				t.Fatalf("EncapMgmt: %v", err)
			}
			if !bytes.Equal(pkt, want) {
				t.Errorf("packet differs from the golden bytes")
				diffBytes(t, pkt, want)
			}
			for i, b := range buf {
				if (i < lead || i >= lead+len(want)) && b != fillByte {
					t.Fatalf("byte %d outside the packet was written", i)
				}
			}

			app, err := encap.AppendMgmt([]byte{0xAA}, &p, v.mad)
			if err != nil || app[0] != 0xAA || !bytes.Equal(app[1:], want) {
				t.Errorf("AppendMgmt differs (err %v)", err)
			}

			m, err := encap.ParseMgmt(want)
			if err != nil {
				t.Fatalf("ParseMgmt: %v", err)
			}
			if m.DestQPN != v.p.DestQPN || m.SrcQPN != v.p.SrcQPN {
				t.Errorf("QPNs %#x %#x, want %#x %#x", m.DestQPN, m.SrcQPN, v.p.DestQPN, v.p.SrcQPN)
			}
			if !bytes.Equal(m.MAD, v.mad) || &m.MAD[0] != &want[24] {
				t.Errorf("MAD differs or does not alias the packet")
			}
			h := m.Header
			if h.SLID() != v.p.SLID || h.DLID() != v.p.DLID || h.SC() != v.p.SC ||
				h.PKey() != v.p.PKey || h.L4() != 0x08 || h.LT() || h.L2() != 2 ||
				h.Len() != v.size/8 || h.RC() != 0 || h.Entropy() != 0 {
				t.Errorf("header fields differ")
			}
		})
	}
}

func TestEncapMgmtQPNMask(t *testing.T) {
	// QPNs are 24 bits; the top byte of each big-endian word is reserved.
	p := encap.MgmtParams{SLID: 1, DLID: 2, PKey: 0xFFFF, DestQPN: 0xFF000001, SrcQPN: 0x12345678}
	pkt, err := encap.AppendMgmt(nil, &p, make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x00, 0x00, 0x00, 0x01, 0x00, 0x34, 0x56, 0x78}; !bytes.Equal(pkt[16:24], want) {
		t.Errorf("QPN bytes % x, want % x", pkt[16:24], want)
	}
}

// TestEncapVNICMasksParams gives EncapVNIC parameters wider than their
// fields: each is cut to its width and nothing spills into a neighbour (the
// kernel let an SC above 31 spill into RC; VNICParams documents SC as 5 bits).
func TestEncapVNICMasksParams(t *testing.T) {
	p := encap.VNICParams{
		SLID: 0xFF0C000A, // 24 bits kept: 0x0C000A
		DLID: 0x12F00001, // 24 bits kept: 0xF00001
		SC:   0xE5,       // 5 bits kept: 0x05
		RC:   0xFA,       // 3 bits kept: 0x2
		PKey: 0x8001, Entropy: 0x00A5, VESWID: 0x001,
	}
	// lrh0 = 0xC000A | 11<<20 = 0x00BC000A; lrh1 = 0x00001 | 5<<20 | 2<<25 |
	// 2<<29 | 1<<31 = 0xC4500001; lrh2 = 0x78 | 0<<8 | 0xF<<12 | 0x8001<<16
	// = 0x8001F078.
	want := []byte{
		0x0A, 0x00, 0xBC, 0x00, // lrh0: SLID[19:0] 0xC000A, LEN 11
		0x01, 0x00, 0x50, 0xC4, // lrh1: DLID[19:0] 0x00001, SC 5, RC 2, FECN 0, L2 2, LT 1
		0x78, 0xF0, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0, DLID[23:20] 0xF, PKEY 0x8001
		0xA5, 0x00, 0x00, 0x00, // lrh3: entropy 0x00A5
		0x00, 0x00, 0x01, 0x00, // vesw_id 0x0001
	}
	buf := make([]byte, 88)
	pkt, err := encap.EncapVNIC(buf, 20, 60, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pkt[:20], want) {
		diffBytes(t, pkt[:20], want)
	}
}

func TestEncapErrors(t *testing.T) {
	p := base
	mp := encap.MgmtParams{SLID: 1, DLID: 2, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}
	for _, tc := range []struct {
		name string
		fn   func(buf []byte) error
		buf  int
		want error
	}{
		{"vnic/no-headroom", func(b []byte) error { _, err := encap.EncapVNIC(b, 19, 60, &p); return err }, 200, encap.ErrNoHeadroom},
		{"vnic/negative-offset", func(b []byte) error { _, err := encap.EncapVNIC(b, -1, 60, &p); return err }, 200, encap.ErrNoHeadroom},
		{"vnic/too-long", func(b []byte) error {
			_, err := encap.EncapVNIC(b, 20, encap.MaxFrameLen+1, &p)
			return err
		}, 20000, encap.ErrFrameTooLong},
		{"vnic/negative-length", func(b []byte) error { _, err := encap.EncapVNIC(b, 20, -1, &p); return err }, 200, encap.ErrFrameTooLong},
		{"vnic/no-tailroom", func(b []byte) error { _, err := encap.EncapVNIC(b, 20, 60, &p); return err }, 87, encap.ErrNoTailroom},
		{"vnic/exact-room", func(b []byte) error { _, err := encap.EncapVNIC(b, 20, 60, &p); return err }, 88, nil},
		// A runt needs room up to 60 bytes even though it is shorter.
		{"vnic/runt-no-tailroom", func(b []byte) error { _, err := encap.EncapVNIC(b, 20, 10, &p); return err }, 87, encap.ErrNoTailroom},
		{"vnic/max-frame-exact-room", func(b []byte) error {
			_, err := encap.EncapVNIC(b, 20, encap.MaxFrameLen, &p)
			return err
		}, 16376, nil},
		{"mgmt/no-headroom", func(b []byte) error { _, err := encap.EncapMgmt(b, 23, 256, &mp); return err }, 400, encap.ErrNoHeadroom},
		{"mgmt/odd-length", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, 255, &mp); return err }, 400, encap.ErrMADLength},
		{"mgmt/negative-length", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, -8, &mp); return err }, 400, encap.ErrMADLength},
		{"mgmt/no-tailroom", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, 256, &mp); return err }, 287, encap.ErrNoTailroom},
		{"mgmt/exact-room", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, 256, &mp); return err }, 288, nil},
		{"mgmt/too-long", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, 16344+8, &mp); return err }, 20000, encap.ErrFrameTooLong},
		{"mgmt/longest", func(b []byte) error { _, err := encap.EncapMgmt(b, 24, 16344, &mp); return err }, 16376, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.Repeat([]byte{fillByte}, tc.buf)
			err := tc.fn(buf)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && !bytes.Equal(buf, bytes.Repeat([]byte{fillByte}, tc.buf)) {
				t.Errorf("a failed encap wrote into the buffer")
			}
		})
	}
	if _, err := encap.AppendMgmt(nil, &mp, make([]byte, 7)); !errors.Is(err, encap.ErrMADLength) {
		t.Errorf("AppendMgmt(7 bytes) = %v", err)
	}
	// A failed append leaves dst as it was.
	dst := []byte{1, 2, 3}
	if got, err := encap.AppendMgmt(dst, &mp, make([]byte, 16344+8)); !errors.Is(err, encap.ErrFrameTooLong) ||
		!bytes.Equal(got, []byte{1, 2, 3}) {
		t.Errorf("AppendMgmt(too long) = %d bytes, %v", len(got), err)
	}
}

func TestLengthHelpers(t *testing.T) {
	for _, tc := range []struct{ frame, pad, size int }{
		{0, 3, 88}, {1, 3, 88}, {59, 3, 88}, {60, 3, 88}, {61, 2, 88}, {63, 0, 88}, {64, 7, 96},
		{1500, 3, 1528}, {1514, 5, 1544}, {9000, 7, 9032}, {16351, 0, 16376},
	} {
		if got := encap.VNICPacketLen(tc.frame); got != tc.size {
			t.Errorf("VNICPacketLen(%d) = %d, want %d", tc.frame, got, tc.size)
		}
		if got := encap.VNICPad(max(tc.frame, 60)); got != tc.pad {
			t.Errorf("VNICPad(%d) = %d, want %d", max(tc.frame, 60), got, tc.pad)
		}
	}
	for _, tc := range []struct{ mad, size int }{{0, 32}, {256, 288}, {272, 304}, {2048, 2080}} {
		if got := encap.MgmtPacketLen(tc.mad); got != tc.size {
			t.Errorf("MgmtPacketLen(%d) = %d, want %d", tc.mad, got, tc.size)
		}
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"MaxFrameLen", encap.MaxFrameLen, 16351},
		{"MaxPacketLen", encap.MaxPacketLen, 2047 * 8},
		{"Headroom", encap.Headroom, 20},
		{"Tailroom", encap.Tailroom, 12},
		{"MinPacketLen", encap.MinPacketLen, 24},
		{"MinFrameLen", encap.MinFrameLen, 60},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
