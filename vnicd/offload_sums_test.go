package vnicd

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// refNext is gsoSegmenter.next as it was before the header sums were taken
// once per super-frame: every segment's IPv4 header and whole transport
// segment summed from scratch (setIPLen, pseudoSum, csumAdd).
func refNext(s *gsoSegmenter, dst []byte) int {
	f := s.frame
	end := min(s.off+s.mss, len(f))
	last := end == len(f)
	n := copy(dst, f[:s.hdrLen])
	n += copy(dst[n:], f[s.off:end])
	seg := dst[:n]
	l3, l4 := s.l3, s.l4
	if !s.v6 {
		binary.BigEndian.PutUint16(seg[l3+4:], s.id+uint16(s.segment))
	}
	setIPLen(seg, l3, l4, s.v6, n-l3)
	if s.udp {
		binary.BigEndian.PutUint16(seg[l4+4:], uint16(n-l4))
		seg[l4+6], seg[l4+7] = 0, 0
		binary.BigEndian.PutUint16(seg[l4+6:], csumOnes(csumAdd(pseudoSum(seg, l3, l4, s.v6, ipProtoUDP), seg[l4:])))
		s.advance(end, last)
		return n
	}
	binary.BigEndian.PutUint32(seg[l4+4:], s.seq+uint32(s.off-s.hdrLen))
	fl := s.flags
	if !last {
		fl &^= tcpFlagFIN | tcpFlagPSH
	}
	if s.segment > 0 {
		fl &^= tcpFlagCWR
	}
	seg[l4+13] = fl
	seg[l4+16], seg[l4+17] = 0, 0
	binary.BigEndian.PutUint16(seg[l4+16:], ^fold(csumAdd(tcpPseudoSum(seg, l3, l4, s.v6), seg[l4:])))
	s.advance(end, last)
	return n
}

// randSuperFrame builds a random super-frame the segmenter takes: TCP or
// UDP, IPv4 (random options) or IPv6 (random Hop-by-Hop and Destination
// Options headers), 0 to 2 VLAN tags, random addresses, IDs, sequence
// numbers, TCP options and reserved bits, flags, and a payload of any
// length, odd ones included. Every header byte the segmenter does not parse
// is random, and one in four is 0xFF (the sums' carries).
func randSuperFrame(r *rand.Rand) (f []byte, h vnetHdr, maxFrame int) {
	rb := func() byte {
		if r.IntN(4) == 0 {
			return 0xff
		}
		return byte(r.Uint32())
	}
	udp, v6, tags := r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(3)
	l3 := 14 + 4*tags
	ext := 0
	if v6 && r.IntN(2) == 0 {
		ext = 8 * (1 + r.IntN(3))
	}
	ipLen := 20 + 4*r.IntN(11)
	if v6 {
		ipLen = 40 + ext
	}
	l4 := l3 + ipLen
	l4Hdr := 8
	if !udp {
		l4Hdr = 20 + 4*r.IntN(11)
	}
	mss := 1 + r.IntN(2000)
	if r.IntN(4) == 0 {
		mss = 1 + r.IntN(9000)
	}
	payload := 1 + r.IntN(65535-ipLen-l4Hdr)
	f = make([]byte, l4+l4Hdr+payload)
	for i := range f {
		f[i] = rb()
	}
	et := 12
	for range tags {
		binary.BigEndian.PutUint16(f[et:], 0x8100)
		et += 4
	}
	proto := byte(ipProtoTCP)
	if udp {
		proto = ipProtoUDP
	}
	h = vnetHdr{flags: vnetFNeedsCsum, gsoSize: uint16(mss), csumStart: uint16(l4), csumOffset: 16}
	if v6 {
		binary.BigEndian.PutUint16(f[et:], etherTypeIPv6)
		f[l3] = 0x60 | f[l3]&0xf
		f[l3+6] = proto
		if ext > 0 {
			f[l3+6] = ipv6HopByHop
			f[l3+40], f[l3+41] = proto, byte(ext/8-1)
		}
		h.gsoType = vnetGSOTCPv6
	} else {
		binary.BigEndian.PutUint16(f[et:], etherTypeIPv4)
		f[l3] = 0x40 | byte(ipLen/4)
		f[l3+9] = proto
		h.gsoType = vnetGSOTCPv4
	}
	if udp {
		h.gsoType, h.csumOffset = vnetGSOUDPL4, 6
	} else {
		f[l4+12] = byte(l4Hdr/4)<<4 | f[l4+12]&0xf
	}
	return f, h, l4 + l4Hdr + mss
}

// TestSegmenterMatchesFullSums cuts random super-frames (randSuperFrame)
// with next and with refNext, which sums every segment from scratch, and
// requires the same bytes, checksums included, and checksums that verify
// from scratch (l4Valid).
func TestSegmenterMatchesFullSums(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	dst, want := make([]byte, 70000), make([]byte, 70000)
	segs := 0
	for i := range 400 {
		f, h, maxFrame := randSuperFrame(r)
		var s, ref gsoSegmenter
		if err := s.start(f, h, maxFrame); err != nil {
			t.Fatalf("frame %d: %v (vnet %+v)", i, err, h)
		}
		ref = s
		for k := 0; !s.done(); k++ {
			n, m := s.next(dst), refNext(&ref, want)
			if !bytes.Equal(dst[:n], want[:m]) {
				t.Fatalf("frame %d (udp %v v6 %v l3 %d l4 %d hdrLen %d), segment %d differs:\n got % x\nwant % x",
					i, s.udp, s.v6, s.l3, s.l4, s.hdrLen, k, dst[:min(n, s.hdrLen)], want[:min(m, s.hdrLen)])
			}
			proto := byte(ipProtoTCP)
			if s.udp {
				proto = ipProtoUDP
			}
			l4Valid(t, dst[:n], s.l3, s.l4, s.v6, proto)
			segs++
		}
		if !ref.done() {
			t.Fatalf("frame %d: the reference has segments left", i)
		}
	}
	t.Logf("%d segments", segs)
}
