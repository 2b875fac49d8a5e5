package tap

import (
	"bytes"
	"encoding/binary"
	"fmt"
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

// TestCsumCopy checks csumCopy (copySumWords where the CPU has AVX2)
// against copy and csumAdd for every length to 4 KiB at every alignment of
// source and destination within 32 bytes, for frame sizes and past
// csumChunk, and for all-ones input: the same sum, the bytes copied, and
// nothing written past len(src).
func TestCsumCopy(t *testing.T) {
	t.Logf("AVX2 word sums: %v", hasSumWords)
	rng := rand.New(rand.NewPCG(7, 8))
	src := make([]byte, 3*csumChunk+64)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	dst := make([]byte, len(src)+64)
	check := func(d, s []byte) {
		t.Helper()
		for i := range d {
			d[i] = 0xa5
		}
		got := csumCopy(d, s)
		if want := uint64(fold(csumAdd(0, s))); got != want {
			t.Fatalf("length %d: sum %#x, want %#x", len(s), got, want)
		}
		if !bytes.Equal(d[:len(s)], s) {
			t.Fatalf("length %d: bytes not copied", len(s))
		}
		for i := len(s); i < len(d); i++ {
			if d[i] != 0xa5 {
				t.Fatalf("length %d: byte %d written past the end", len(s), i)
			}
		}
	}
	for n := 0; n <= 4096; n++ {
		check(dst[n%32:n%32+n+8], src[n/32%32:n/32%32+n])
	}
	for off := range 32 {
		for _, n := range []int{csumMinAVX2 - 1, csumMinAVX2, 1376, 8872, 65535, csumChunk, csumChunk + 33, 3 * csumChunk} {
			check(dst[31-off:31-off+n+8], src[off:off+n])
		}
	}
	for i := range src {
		src[i] = 0xff
	}
	check(dst[:2*csumChunk+9], src[:2*csumChunk+1])
}

// BenchmarkCsumCopy is csumCopy against copy then csumAdd, the two passes
// it replaces, over a segment's payload.
func BenchmarkCsumCopy(b *testing.B) {
	for _, n := range []int{64, 512, 1376, 8872} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("fused/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink16 = uint16(csumCopy(dst, src))
			}
		})
		b.Run(fmt.Sprintf("copy+sum/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
				sink16 = fold(csumAdd(0, dst))
			}
		})
	}
}

// TestFixedSums checks the fixed-length sums against csumAdd: addrSum
// (IPv4 and IPv6 addresses at odd and even offsets) exactly, and
// ipv4HdrValid against fold(csumAdd(0, h)) == 0xffff, on random headers,
// headers whose checksum was made to verify and then had a bit flipped or
// not, and all-zero and all-ones bytes.
func TestFixedSums(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	b := make([]byte, 128)
	valid := 0
	for i := range 200000 {
		for j := range b {
			switch i % 5 {
			case 0:
				b[j] = 0
			case 1:
				b[j] = 0xff
			default:
				b[j] = byte(r.Uint32())
				if r.IntN(3) == 0 {
					b[j] = 0xff
				}
			}
		}
		l3 := r.IntN(64)
		for _, v6 := range []bool{false, true} {
			addrs := b[l3+12 : l3+20]
			if v6 {
				addrs = b[l3+8 : l3+40]
			}
			if got, want := addrSum(b, l3, v6), uint64(fold(csumAdd(0, addrs))); got != want {
				t.Fatalf("addrSum v6 %v % x: %#x, want %#x", v6, addrs, got, want)
			}
		}
		h := b[l3 : l3+20]
		if i%5 > 2 {
			h[10], h[11] = 0, 0
			binary.BigEndian.PutUint16(h[10:], ^fold(csumAdd(0, h)))
			if r.IntN(2) == 0 {
				h[r.IntN(20)] ^= 1 << r.IntN(8)
			}
		}
		want := fold(csumAdd(0, h)) == 0xffff
		if want {
			valid++
		}
		if got := ipv4HdrValid(h); got != want {
			t.Fatalf("ipv4HdrValid(% x) = %v, want %v", h, got, want)
		}
	}
	if valid < 10000 {
		t.Fatalf("only %d headers verified: the test does not reach the true case", valid)
	}
}

var sinkBool bool

// BenchmarkFixedSums is the per-segment header work of a GRO checksum check
// with the fixed-length sums against csumAdd: an IPv4 header check and the
// pseudo-header addresses.
func BenchmarkFixedSums(b *testing.B) {
	f := make([]byte, 64)
	for i := range f {
		f[i] = byte(i*29 + 3)
	}
	binary.BigEndian.PutUint16(f[14+10:], 0)
	binary.BigEndian.PutUint16(f[14+10:], ^fold(csumAdd(0, f[14:34])))
	b.Run("ipv4/fixed", func(b *testing.B) {
		for b.Loop() {
			sinkBool = ipv4HdrValid(f[14:34])
		}
	})
	b.Run("ipv4/csumAdd", func(b *testing.B) {
		for b.Loop() {
			sinkBool = fold(csumAdd(0, f[14:34])) == 0xffff
		}
	})
	for _, v6 := range []bool{false, true} {
		n := 8
		if v6 {
			n = 32
		}
		b.Run(fmt.Sprintf("addrs%d/fixed", n), func(b *testing.B) {
			for b.Loop() {
				sink16 = uint16(addrSum(f, 14, v6))
			}
		})
		b.Run(fmt.Sprintf("addrs%d/csumAdd", n), func(b *testing.B) {
			for b.Loop() {
				sink16 = fold(csumAdd(0, f[22:22+n]))
			}
		})
	}
}
