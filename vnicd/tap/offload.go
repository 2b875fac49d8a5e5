package tap

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// TAP offloads (IFF_VNET_HDR with TUNSETOFFLOAD CSUM, TSO4, TSO6, and USO4
// and USO6 where the kernel has them, 6.2 on): the kernel hands the TAP TCP
// super-frames of up to 64 KB with a partial checksum, and UDP super-frames
// from sockets that send with UDP_SEGMENT (GSO). vnicd cuts each into frames
// the size the kernel asked for (gso_size: TCP derives it from the TAP's MTU,
// and the kernel refuses a UDP_SEGMENT size the MTU cannot carry), each with
// full IP and TCP or UDP checksums, before any of them is wrapped into a 16B
// packet. Nothing longer than a frame the MTU allows and nothing with a
// partial checksum ever reaches the fabric: a super-frame that cannot be cut
// that way is dropped.

// virtio_net_hdr (include/uapi/linux/virtio_net.h), in the host's byte order
// (little-endian here: legacy virtio on x86-64 and arm64):
//
//	byte 0     flags (VIRTIO_NET_HDR_F_NEEDS_CSUM = 1)
//	byte 1     gso_type (NONE 0, TCPV4 1, UDP 3 (UFO), TCPV6 4, UDP_L4 5, ECN 0x80)
//	bytes 2-3  hdr_len
//	bytes 4-5  gso_size
//	bytes 6-7  csum_start
//	bytes 8-9  csum_offset
const (
	vnetHdrLen       = 10
	vnetFNeedsCsum   = 1
	vnetGSONone      = 0
	vnetGSOTCPv4     = 1
	vnetGSOTCPv6     = 4
	vnetGSOUDPL4     = 5
	etherTypeIPv4    = 0x0800
	etherTypeIPv6    = 0x86dd
	ipProtoTCP       = 6
	ipProtoUDP       = 17
	tcpFlagFIN       = 0x01
	tcpFlagPSH       = 0x08
	tcpFlagCWR       = 0x80
	maxSuperFrameLen = 65535 + 18 // an IP packet of 64 KB in a tagged Ethernet header
)

// errOffload is why a frame from the TAP could not be finished.
var errOffload = errors.New("vnicd: TAP offload: frame cannot be segmented")

// vnetHdr is a decoded virtio_net_hdr.
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

func parseVnetHdr(b []byte) vnetHdr {
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1],
		gsoSize:    binary.LittleEndian.Uint16(b[4:]),
		csumStart:  binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

// finishCsum completes a CHECKSUM_PARTIAL frame in place: the 16-bit field
// at csumStart+csumOffset holds the pseudo-header sum; the checksum is the
// complement of the sum from csumStart to the end. As the kernel's
// skb_checksum_help, it writes a zero result as all ones: for UDP, zero
// would mean no checksum (IPv4) or a bad datagram (IPv6); for TCP the two
// are the same sum.
func finishCsum(frame []byte, h vnetHdr) error {
	start, field := int(h.csumStart), int(h.csumStart)+int(h.csumOffset)
	if start > len(frame) || field+2 > len(frame) {
		return errOffload
	}
	binary.BigEndian.PutUint16(frame[field:], csumOnes(csumAdd(0, frame[start:])))
	return nil
}

// csumOnes is the checksum field for the one's-complement sum s: its
// complement, with a zero written as all ones, as the kernel's
// skb_checksum_help writes it (for UDP zero means no checksum, or in IPv6 a
// bad datagram; for TCP the two are the same sum).
func csumOnes(s uint64) uint16 {
	if c := ^fold(s); c != 0 {
		return c
	}
	return 0xffff
}

// setIPLen gives the IP header at l3 (transport header at l4) the length of
// an IP packet of ipLen bytes and, for IPv4, a new header checksum (set the
// ID before).
func setIPLen(b []byte, l3, l4 int, v6 bool, ipLen int) {
	if v6 {
		binary.BigEndian.PutUint16(b[l3+4:], uint16(ipLen-40))
		return
	}
	binary.BigEndian.PutUint16(b[l3+2:], uint16(ipLen))
	b[l3+10], b[l3+11] = 0, 0
	binary.BigEndian.PutUint16(b[l3+10:], ^fold(csumAdd(0, b[l3:l4])))
}

// l3Offset returns where the IP header starts, after up to two VLAN tags.
func l3Offset(frame []byte) (int, uint16) {
	off := 12
	for range 3 {
		if off+2 > len(frame) {
			return 0, 0
		}
		et := binary.BigEndian.Uint16(frame[off:])
		if et != 0x8100 && et != 0x88a8 {
			return off + 2, et
		}
		off += 4
	}
	return 0, 0
}

// IPv6 extension headers a super-frame may carry (RFC 8200 4.3, 4.6): each
// starts with the next header and its length in 8-byte units, not counting
// the first 8.
const (
	ipv6HopByHop = 0
	ipv6DstOpts  = 60
)

// ipv6ExtChain reports whether the IPv6 header at frame[l3:] is followed by
// Hop-by-Hop (first only) and Destination Options headers that end exactly at
// l4 (csum_start, at most len(frame)) with proto as the last next header. The
// kernel keeps TSO6 and USO6 for sockets with IPV6_HOPOPTS or IPV6_DSTOPTS,
// and for CALIPSO labels (a hop-by-hop option), and hands such super-frames
// to the TAP; the segmenter copies the headers from l3+40 to l4 unchanged into
// every segment, and the payload length it writes counts them. Neither
// option header changes the pseudo-header.
//
// A Routing header is refused: with segments left, the pseudo-header takes
// the final destination, which sits where the routing type says (type 2 its
// one address, a segment routing header its segment list[0]); only sockets
// with IPV6_RTHDR send one, and their super-frames are dropped
// (offload_drops), as they always were.
func ipv6ExtChain(frame []byte, l3, l4 int, proto byte) bool {
	nh, off := frame[l3+6], l3+40
	for off < l4 {
		if nh != ipv6DstOpts && (nh != ipv6HopByHop || off != l3+40) || off+2 > l4 {
			return false
		}
		nh, off = frame[off], off+(int(frame[off+1])+1)*8
	}
	return off == l4 && nh == proto
}

// gsoSegmenter cuts one TCP (TSO) or UDP (USO) super-frame into frames; next
// writes them one at a time, so that the frames of one super-frame may spread
// over several Reads.
type gsoSegmenter struct {
	frame   []byte // the super-frame; nil when done
	l3, l4  int    // IP and TCP or UDP header offsets
	hdrLen  int    // Ethernet + IP + TCP or UDP headers
	mss     int    // payload bytes per frame (gso_size)
	v6      bool
	udp     bool
	seq     uint32
	id      uint16
	flags   byte
	off     int // payload offset of the next segment
	segment int // index of the next segment

	// Sums of the header words no segment changes, each folded to 16 bits
	// and so free of carries when a few are added with +: the IPv4 header
	// but for length, ID and checksum (ipSum); the pseudo-header's
	// addresses and protocol (pseudo); the TCP header but for the sequence
	// number, the data offset and flags word and the checksum, or the UDP
	// ports (l4Sum).
	ipSum, pseudo, l4Sum uint64
}

// start checks a TCP or UDP super-frame and prepares to cut it; maxFrame
// bounds the length of every frame it will write.
func (s *gsoSegmenter) start(frame []byte, h vnetHdr, maxFrame int) error {
	s.frame = nil
	l3, et := l3Offset(frame)
	l4 := int(h.csumStart)
	udp := h.gsoType == vnetGSOUDPL4
	proto := byte(ipProtoTCP)
	if udp {
		proto = ipProtoUDP
	}
	var id uint16
	switch {
	case (h.gsoType == vnetGSOTCPv4 || udp) && et == etherTypeIPv4:
		if l3+20 > len(frame) || frame[l3]>>4 != 4 || int(frame[l3]&0xf)*4 != l4-l3 || l4-l3 < 20 || frame[l3+9] != proto {
			return errOffload
		}
		id = binary.BigEndian.Uint16(frame[l3+4:])
	case (h.gsoType == vnetGSOTCPv6 || udp) && et == etherTypeIPv6:
		if l3+40 > l4 || l4 > len(frame) || frame[l3]>>4 != 6 || !ipv6ExtChain(frame, l3, l4, proto) {
			return errOffload
		}
	default:
		return errOffload
	}
	// A header shorter than its fixed part (IHL or TCP data offset under 5)
	// would have next write the header fields over the payload, and a
	// super-frame without payload would make one empty segment.
	hdrLen, csumOff := l4+8, 6
	if !udp {
		if l4+20 > len(frame) {
			return errOffload
		}
		hdrLen, csumOff = l4+int(frame[l4+12]>>4)*4, 16
		if hdrLen < l4+20 {
			return errOffload
		}
	}
	mss := int(h.gsoSize)
	if hdrLen >= len(frame) || mss == 0 || hdrLen+mss > maxFrame || int(h.csumOffset) != csumOff {
		return errOffload
	}
	*s = gsoSegmenter{
		frame: frame, l3: l3, l4: l4, hdrLen: hdrLen, mss: mss, v6: et == etherTypeIPv6, udp: udp, id: id,
		off: hdrLen,
	}
	if !udp {
		s.seq, s.flags = binary.BigEndian.Uint32(frame[l4+4:]), frame[l4+13]
	}
	s.headerSums()
	return nil
}

// headerSums sums, once per super-frame, the header words that are the
// same in every segment (the gsoSegmenter fields' comment). Every part is
// a sum of words as they are, with no word taken away, so the segment's
// checksum next adds up is the very number a sum over the whole segment
// gives: both are one's-complement sums of the same words, and neither can
// be the zero 0x0000 (the IPv4 version and the protocol are never zero),
// which leaves one representation (TestSegmenterMatchesFullSums).
func (s *gsoSegmenter) headerSums() {
	f, l3, l4 := s.frame, s.l3, s.l4
	proto := uint64(ipProtoTCP)
	if s.udp {
		proto = ipProtoUDP
	}
	if s.v6 {
		s.pseudo = uint64(fold(csumAdd(0, f[l3+8:l3+40]))) + proto
	} else {
		s.pseudo = uint64(fold(csumAdd(0, f[l3+12:l3+20]))) + proto
		s.ipSum = uint64(fold(csumAdd(csumAdd(csumAdd(0, f[l3:l3+2]), f[l3+6:l3+10]), f[l3+12:l4])))
	}
	if s.udp {
		s.l4Sum = uint64(fold(csumAdd(0, f[l4:l4+4])))
		return
	}
	s.l4Sum = uint64(fold(csumAdd(csumAdd(csumAdd(0, f[l4:l4+4]), f[l4+8:l4+12]), f[l4+14:l4+16])))
	s.l4Sum = uint64(fold(csumAdd(s.l4Sum, f[l4+18:s.hdrLen])))
}

// count is the number of segments the super-frame makes.
func (s *gsoSegmenter) count() int {
	return (len(s.frame) - s.hdrLen + s.mss - 1) / s.mss
}

// done reports whether every segment has been written.
func (s *gsoSegmenter) done() bool { return s.frame == nil }

// next writes the next segment, headers and checksums complete, into dst and
// returns its length; dst must hold hdrLen+mss bytes. Only the payload is
// summed per segment: the checksums add the words that change (lengths, ID,
// sequence number, flags) to the sums start took of the rest.
func (s *gsoSegmenter) next(dst []byte) int {
	f := s.frame
	end := min(s.off+s.mss, len(f))
	last := end == len(f)
	copy(dst, f[:s.hdrLen])
	// The payload is summed as it is copied. The transport header is a
	// multiple of 4 bytes long, so the payload's words are the segment's
	// from l4.
	sum := s.pseudo + s.l4Sum + csumCopy(dst[s.hdrLen:], f[s.off:end])
	n := s.hdrLen + end - s.off
	seg := dst[:n]
	l3, l4 := s.l3, s.l4
	sum += uint64(n - l4)
	if s.v6 {
		binary.BigEndian.PutUint16(seg[l3+4:], uint16(n-l3-40))
	} else {
		id, ipLen := s.id+uint16(s.segment), uint16(n-l3)
		binary.BigEndian.PutUint16(seg[l3+2:], ipLen)
		binary.BigEndian.PutUint16(seg[l3+4:], id)
		binary.BigEndian.PutUint16(seg[l3+10:], ^fold(s.ipSum+uint64(id)+uint64(ipLen)))
	}
	if s.udp {
		binary.BigEndian.PutUint16(seg[l4+4:], uint16(n-l4))
		binary.BigEndian.PutUint16(seg[l4+6:], csumOnes(sum+uint64(n-l4)))
		s.advance(end, last)
		return n
	}
	seq := s.seq + uint32(s.off-s.hdrLen)
	binary.BigEndian.PutUint32(seg[l4+4:], seq)
	fl := s.flags
	if !last {
		fl &^= tcpFlagFIN | tcpFlagPSH
	}
	if s.segment > 0 {
		fl &^= tcpFlagCWR
	}
	seg[l4+13] = fl
	sum += uint64(seq>>16) + uint64(seq&0xffff) + uint64(seg[l4+12])<<8 + uint64(fl)
	binary.BigEndian.PutUint16(seg[l4+16:], ^fold(sum))
	s.advance(end, last)
	return n
}

// advance moves past the segment that ends at end.
func (s *gsoSegmenter) advance(end int, last bool) {
	s.off, s.segment = end, s.segment+1
	if last {
		s.frame = nil
	}
}

// tcpPseudoSum is the sum of the TCP pseudo-header of seg, folded to 16 bits
// (a wider partial sum would lose its carry when added with +).
func tcpPseudoSum(seg []byte, l3, l4 int, v6 bool) uint64 {
	return pseudoSum(seg, l3, l4, v6, ipProtoTCP)
}

// pseudoSum is the sum of the pseudo-header of seg's transport protocol
// proto (TCP or UDP), folded to 16 bits.
func pseudoSum(seg []byte, l3, l4 int, v6 bool, proto byte) uint64 {
	return pseudoSumLen(seg, l3, v6, proto, len(seg)-l4)
}

// pseudoSumLen is the pseudo-header sum for the addresses of the IP header
// at b[l3:], proto and a transport length of l4Len bytes, folded to 16 bits.
func pseudoSumLen(b []byte, l3 int, v6 bool, proto byte, l4Len int) uint64 {
	return addrSum(b, l3, v6) + uint64(proto) + uint64(l4Len)
}

// addrSum is fold(csumAdd(0, addresses)) for the addresses of the IP header
// at b[l3:], with the fixed number of loads their length needs instead of
// csumAdd's loops.
func addrSum(b []byte, l3 int, v6 bool) uint64 {
	le := binary.LittleEndian
	if !v6 {
		return uint64(bits.ReverseBytes16(fold(le.Uint64(b[l3+12:]))))
	}
	a := b[l3+8 : l3+40]
	w, c := bits.Add64(le.Uint64(a), le.Uint64(a[8:]), 0)
	w, c = bits.Add64(w, le.Uint64(a[16:]), c)
	w, c = bits.Add64(w, le.Uint64(a[24:]), c)
	w, c = bits.Add64(w, 0, c)
	return uint64(bits.ReverseBytes16(fold(w + c)))
}

// ipv4HdrValid reports whether the 20-byte IPv4 header h (no options)
// has a checksum that verifies: fold(csumAdd(0, h)) == 0xffff, in three
// loads. The sum of the words as they lie in memory is the byte-swapped
// sum (csumAdd), and 0xffff swapped is itself.
func ipv4HdrValid(h []byte) bool {
	le := binary.LittleEndian
	h = h[:20]
	w, c := bits.Add64(le.Uint64(h), le.Uint64(h[8:]), 0)
	w, c = bits.Add64(w, uint64(le.Uint32(h[16:])), c)
	return fold(w+c) == 0xffff
}

// csumMinAVX2 is the shortest input csumAdd hands to sumWords (AVX2):
// shorter ones cost less in the scalar loop (BenchmarkCsumAdd).
const csumMinAVX2 = 128

// csumAdd adds b, as big-endian 16-bit words (a last odd byte padded with
// zero), to the one's-complement sum s, carries included; fold the result.
// Two such sums must be combined with csumAdd's carry, never with +.
//
// The words are summed as they lie in memory (little-endian, no byte swap
// per load) and the folded sum swapped once: a one's-complement sum of
// byte-swapped words is the byte-swapped sum (RFC 1071, 2.B).
func csumAdd(s uint64, b []byte) uint64 {
	var w, c uint64
	le := binary.LittleEndian
	for hasSumWords && len(b) >= csumMinAVX2 {
		n := min(len(b), csumChunk) &^ 31
		w, c = bits.Add64(w, sumWords(b[:n]), c)
		b = b[n:]
	}
	for len(b) >= 32 {
		w, c = bits.Add64(w, le.Uint64(b), c)
		w, c = bits.Add64(w, le.Uint64(b[8:]), c)
		w, c = bits.Add64(w, le.Uint64(b[16:]), c)
		w, c = bits.Add64(w, le.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		w, c = bits.Add64(w, le.Uint64(b), c)
		b = b[8:]
	}
	w, c = bits.Add64(w, 0, c)
	w += c
	var t uint64
	for len(b) >= 2 {
		t += uint64(le.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		t += uint64(b[0])
	}
	w, c = bits.Add64(w, t, 0)
	v := uint64(bits.ReverseBytes16(fold(w + c)))
	s, c = bits.Add64(s, v, 0)
	return s + c
}

// csumCopy copies src into dst, which must hold len(src) bytes and not
// overlap it, and returns csumAdd(0, src) folded to 16 bits. Where the CPU
// has AVX2 a long src is read once for both (copySumWords); elsewhere it is
// copy then csumAdd.
func csumCopy(dst, src []byte) uint64 {
	if !hasSumWords || len(src) < csumMinAVX2 {
		copy(dst, src)
		return uint64(fold(csumAdd(0, src)))
	}
	dst = dst[:len(src)]
	var w, c uint64
	for len(src) >= 32 {
		n := min(len(src), csumChunk) &^ 31
		w, c = bits.Add64(w, copySumWords(dst[:n], src[:n]), c)
		dst, src = dst[n:], src[n:]
	}
	w, c = bits.Add64(w, 0, c)
	w += c
	// The rest starts at an even offset (a multiple of 32), so its words are
	// src's words; its sum is added as csumAdd adds a start.
	copy(dst, src)
	return uint64(fold(csumAdd(uint64(bits.ReverseBytes16(fold(w))), src)))
}

// fold folds a 64-bit one's-complement sum to 16 bits.
func fold(s uint64) uint16 {
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return uint16(s)
}
