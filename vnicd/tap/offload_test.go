package tap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/opavnic/opavnic/internal/race"
)

// refCsum is the RFC 1071 sum, 16 bits at a time (in 64 bits: 2^48 words
// before it could overflow).
func refCsum(b []byte) uint16 {
	var s uint64
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// canon maps the one's-complement zero 0xFFFF to 0.
func canon(v uint16) uint16 {
	if v == 0xFFFF {
		return 0
	}
	return v
}

// TestCsumAddLengths checks csumAdd (AVX2 word sums for long inputs where
// the CPU has them, the scalar loop for short ones and tails) against
// refCsum for every length to 4 KiB at every alignment within 32 bytes, for
// frame sizes and past csumChunk, from random starting sums (the start is
// one more big-endian word in front for the reference), and for all-ones
// input, where every lane is at its largest for a whole chunk.
func TestCsumAddLengths(t *testing.T) {
	t.Logf("AVX2 word sums: %v", hasSumWords)
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 3*csumChunk+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	check := func(b []byte) {
		t.Helper()
		s := uint16(rng.Uint32())
		ref := append([]byte{byte(s >> 8), byte(s)}, b...)
		if got, want := canon(fold(csumAdd(uint64(s), b))), canon(refCsum(ref)); got != want {
			t.Fatalf("length %d from %#04x: %#04x, want %#04x", len(b), s, got, want)
		}
	}
	for n := 0; n <= 4096; n++ {
		check(buf[n%32 : n%32+n])
	}
	for off := range 32 {
		for _, n := range []int{csumMinAVX2, 1428, 8924, 65535, csumChunk, csumChunk + 33, 3 * csumChunk} {
			check(buf[off : off+n])
		}
	}
	for i := range buf {
		buf[i] = 0xFF
	}
	check(buf[:2*csumChunk+1])
}

func TestCsumAddMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 8, 31, 32, 33, 63, 64, 65, 1427, 1428, 1500, 9000} {
		for range 50 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
				if r.IntN(4) == 0 {
					b[i] = 0xff
				}
			}
			if got, want := fold(csumAdd(0, b)), refCsum(b); got != want {
				t.Fatalf("len %d: csum %#04x, want %#04x", n, got, want)
			}
		}
	}
}

// superFrame builds an Ethernet+IPv4/IPv6+TCP super-frame with payload
// bytes, its TCP checksum field holding the pseudo-header sum (as the kernel
// leaves it for CHECKSUM_PARTIAL).
func superFrame(v6 bool, payload int, flags byte) []byte {
	l3 := 14
	ipLen := 20
	if v6 {
		ipLen = 40
	}
	f := make([]byte, l3+ipLen+32+payload)
	if v6 {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv6)
		f[l3] = 0x60
		binary.BigEndian.PutUint16(f[l3+4:], uint16(len(f)-l3-40))
		f[l3+6], f[l3+7] = ipProtoTCP, 64
		for i := range 32 {
			f[l3+8+i] = byte(i*7 + 1)
		}
	} else {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
		f[l3] = 0x45
		binary.BigEndian.PutUint16(f[l3+2:], uint16(len(f)-l3))
		binary.BigEndian.PutUint16(f[l3+4:], 0xfff0)
		f[l3+6], f[l3+8], f[l3+9] = 0x40, 64, ipProtoTCP
		copy(f[l3+12:], []byte{10, 203, 0, 1, 10, 203, 0, 2})
	}
	l4 := l3 + ipLen
	binary.BigEndian.PutUint16(f[l4:], 40066)
	binary.BigEndian.PutUint16(f[l4+2:], 5201)
	binary.BigEndian.PutUint32(f[l4+4:], 0xfffff000) // wraps during the run
	f[l4+12], f[l4+13] = 8<<4, flags
	for i := l4 + 20; i < len(f); i++ {
		f[i] = byte(i*13 + i>>8)
	}
	return f
}

// tcpValid checks a finished segment's IP and TCP checksums from scratch.
func tcpValid(t *testing.T, seg []byte, v6 bool) {
	t.Helper()
	l4 := 34
	if v6 {
		l4 = 54
	}
	l4Valid(t, seg, 14, l4, v6, ipProtoTCP)
}

// l4Valid checks a finished frame from scratch: its IP length and (IPv4)
// header checksum, and its TCP or UDP (proto) checksum.
func l4Valid(t *testing.T, seg []byte, l3, l4 int, v6 bool, proto byte) {
	t.Helper()
	var pseudo []byte
	if v6 { // the payload length counts any extension headers, l3+40 to l4
		if int(binary.BigEndian.Uint16(seg[l3+4:])) != len(seg)-l3-40 {
			t.Fatalf("IPv6 payload length %d, want %d", binary.BigEndian.Uint16(seg[l3+4:]), len(seg)-l3-40)
		}
		pseudo = append(pseudo, seg[l3+8:l3+40]...)
	} else {
		if refCsum(seg[l3:l4]) != 0xffff {
			t.Fatalf("IPv4 header checksum wrong: % x", seg[l3:l4])
		}
		if int(binary.BigEndian.Uint16(seg[l3+2:])) != len(seg)-l3 {
			t.Fatalf("IPv4 total length %d, want %d", binary.BigEndian.Uint16(seg[l3+2:]), len(seg)-l3)
		}
		pseudo = append(pseudo, seg[l3+12:l3+20]...)
	}
	pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(proto))
	pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(seg)-l4))
	if got := refCsum(append(pseudo, seg[l4:]...)); got != 0xffff {
		t.Fatalf("protocol %d checksum does not verify (sum %#04x)", proto, got)
	}
}

func TestTSOSegments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v6      bool
		payload int
		mss     int
	}{
		{"v4 even", false, 1388 * 4, 1388},
		{"v4 odd tail", false, 1388*3 + 77, 1388},
		{"v4 odd mss", false, 1001*5 + 3, 1001},
		{"v4 64K", false, 65535 - 20 - 32, 1388},
		{"v4 one byte", false, 1, 1388},
		{"v6 tail", true, 1368*2 + 5, 1368},
		{"v6 jumbo mss", true, 8872*3 + 1, 8872},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const flags = tcpFlagFIN | tcpFlagPSH | tcpFlagCWR | 0x10
			f := superFrame(tc.v6, tc.payload, flags)
			gso := uint8(vnetGSOTCPv4)
			if tc.v6 {
				gso = vnetGSOTCPv6
			}
			l4 := 34
			if tc.v6 {
				l4 = 54
			}
			h := vnetHdr{flags: vnetFNeedsCsum, gsoType: gso, gsoSize: uint16(tc.mss), csumStart: uint16(l4), csumOffset: 16}
			var s gsoSegmenter
			if err := s.start(f, h, l4+32+tc.mss); err != nil {
				t.Fatal(err)
			}
			var payload []byte
			want := (tc.payload + tc.mss - 1) / tc.mss
			dst := make([]byte, 70000)
			for i := 0; !s.done(); i++ {
				n := s.next(dst)
				seg := dst[:n]
				if n > l4+32+tc.mss {
					t.Fatalf("segment %d is %d bytes, longer than headers+mss", i, n)
				}
				tcpValid(t, seg, tc.v6)
				if got := binary.BigEndian.Uint32(seg[l4+4:]); got != 0xfffff000+uint32(len(payload)) {
					t.Fatalf("segment %d seq %#x", i, got)
				}
				fl := seg[l4+13]
				if last := s.done(); (fl&tcpFlagFIN != 0) != last || (fl&tcpFlagPSH != 0) != last || (fl&tcpFlagCWR != 0) != (i == 0) {
					t.Fatalf("segment %d (last %v) flags %#x", i, last, fl)
				}
				payload = append(payload, seg[l4+32:]...)
				if i+1 > want {
					t.Fatalf("more than %d segments", want)
				}
			}
			if string(payload) != string(f[l4+32:]) {
				t.Fatal("payload of the segments differs from the super-frame's")
			}
		})
	}
}

// TestGSORejects: TCP and UDP super-frames the segmenter must refuse.
func TestGSORejects(t *testing.T) {
	f := superFrame(false, 4000, 0x10)
	ok := vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOTCPv4, gsoSize: 1388, csumStart: 34, csumOffset: 16}
	u, _, l4 := udpSuperFrame(false, 0, 3000)
	uok := vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOUDPL4, gsoSize: 1000, csumStart: uint16(l4), csumOffset: 6}
	u6, _, l46 := udpSuperFrame(true, 0, 3000)
	for _, tc := range []struct {
		name     string
		h        vnetHdr
		frame    []byte
		maxFrame int
	}{
		{"segment over the MTU", ok, f, 34 + 32 + 1387},
		{"ECN gso type", vnetHdr{gsoType: vnetGSOTCPv4 | 0x80, gsoSize: 1388, csumStart: 34, csumOffset: 16}, f, 9000},
		{"UDP gso type", vnetHdr{gsoType: 3, gsoSize: 1388, csumStart: 34, csumOffset: 6}, f, 9000},
		{"v6 type on v4", vnetHdr{gsoType: vnetGSOTCPv6, gsoSize: 1388, csumStart: 34, csumOffset: 16}, f, 9000},
		{"zero mss", vnetHdr{gsoType: vnetGSOTCPv4, csumStart: 34, csumOffset: 16}, f, 9000},
		{"short", ok, f[:40], 9000},
		{"csum start off", vnetHdr{gsoType: vnetGSOTCPv4, gsoSize: 1388, csumStart: 38, csumOffset: 16}, f, 9000},
		{"TCP data offset 4", ok, withByte(f, 34+12, 4<<4), 9000},
		{"TCP data offset 0", ok, withByte(f, 34+12, 0), 9000},
		{"IPv4 IHL 4", vnetHdr{gsoType: vnetGSOTCPv4, gsoSize: 1388, csumStart: 30, csumOffset: 16}, withByte(f, 14, 0x44), 9000},
		{"no payload", ok, f[:34+32], 9000},
		{"UDP: datagram over the MTU", uok, u, l4 + 8 + 999},
		{"UDP: TCP checksum offset", vnetHdr{gsoType: vnetGSOUDPL4, gsoSize: 1000, csumStart: uint16(l4), csumOffset: 16}, u, 9000},
		{"UDP: TCP in the IP header", uok, withByte(u, 14+9, ipProtoTCP), 9000},
		{"UDP: UDP in a TSO frame", vnetHdr{gsoType: vnetGSOTCPv4, gsoSize: 1000, csumStart: uint16(l4), csumOffset: 16}, u, 9000},
		{"UDP: no payload", uok, u[:l4+8], 9000},
		{"UDP: short UDP header", uok, u[:l4+4], 9000},
		{"UDP: zero gso_size", vnetHdr{gsoType: vnetGSOUDPL4, csumStart: uint16(l4), csumOffset: 6}, u, 9000},
		{"UDP: v6 extension header", vnetHdr{gsoType: vnetGSOUDPL4, gsoSize: 1000, csumStart: uint16(l46 + 8), csumOffset: 6}, u6, 9000},
		{"UDP: v6 next header TCP", vnetHdr{gsoType: vnetGSOUDPL4, gsoSize: 1000, csumStart: uint16(l46), csumOffset: 6}, withByte(u6, 14+6, ipProtoTCP), 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s gsoSegmenter
			if err := s.start(tc.frame, tc.h, tc.maxFrame); err == nil {
				t.Fatal("start accepted it")
			}
			if !s.done() {
				t.Fatal("segmenter not idle after a refusal")
			}
		})
	}
}

// withByte returns a copy of b with b[i] = v.
func withByte(b []byte, i int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[i] = v
	return c
}

func TestFinishCsum(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, n := range []int{0, 1, 100, 1001} {
			f := superFrame(v6, n, 0x18)
			l3, l4 := 14, 34
			var ps uint64
			if v6 {
				l4 = 54
				ps = csumAdd(0, f[l3+8:l3+40])
			} else {
				ps = csumAdd(0, f[l3+12:l3+20])
				binary.BigEndian.PutUint16(f[l3+10:], ^fold(csumAdd(0, f[l3:l4])))
			}
			binary.BigEndian.PutUint16(f[l4+16:], fold(uint64(fold(ps))+ipProtoTCP+uint64(len(f)-l4)))
			if err := finishCsum(f, vnetHdr{flags: vnetFNeedsCsum, csumStart: uint16(l4), csumOffset: 16}); err != nil {
				t.Fatal(err)
			}
			tcpValid(t, f, v6)
		}
	}
	if finishCsum(make([]byte, 40), vnetHdr{csumStart: 34, csumOffset: 16}) == nil {
		t.Fatal("a checksum field past the end was accepted")
	}
}

func BenchmarkCsumAdd(b *testing.B) {
	for _, n := range []int{40, 1428, 8924, 65535} {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink16 = fold(csumAdd(0, buf))
			}
		})
	}
}

var sink16 uint16

// BenchmarkTSO cuts a 64 KB IPv4 super-frame into eth_mtu 1428 and 8924
// frames (MSS 1376 and 8872): copies, headers, IPv4 and TCP checksums.
func BenchmarkTSO(b *testing.B) {
	for _, mss := range []int{1376, 8872} {
		f := superFrame(false, 65535-20-32, tcpFlagPSH|0x10)
		h := vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOTCPv4, gsoSize: uint16(mss), csumStart: 34, csumOffset: 16}
		dst := make([]byte, 34+32+mss)
		b.Run(strconv.Itoa(mss), func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			var s gsoSegmenter
			for b.Loop() {
				if err := s.start(f, h, len(dst)); err != nil {
					b.Fatal(err)
				}
				for !s.done() {
					s.next(dst)
				}
			}
		})
	}
}

// FuzzGSOSegment feeds the segmenter (TSO and USO) and finishCsum any frame
// with any virtio_net_hdr. The kernel fills the header, and a packet socket's
// malformed GSO frames were dropped before the TAP when tried, but the reader
// trusts neither: it must refuse or cut, never panic; every frame it cuts must fit maxFrame and its
// buffer of hdrLen+mss bytes, the cut frames must carry the super-frame's
// payload exactly once, in order, and each must be, checksums included, the
// frame refNext makes by summing it from scratch.
func FuzzGSOSegment(f *testing.F) {
	for _, v6 := range []bool{false, true} {
		l4 := uint16(34)
		gso := uint8(vnetGSOTCPv4)
		if v6 {
			l4, gso = 54, vnetGSOTCPv6
		}
		f.Add(superFrame(v6, 3000, 0x19), uint8(vnetFNeedsCsum), gso, uint16(1388), l4, uint16(16), uint16(1500))
		f.Add(superFrame(v6, 7, 0x10), uint8(vnetFNeedsCsum), gso, uint16(3), l4, uint16(16), uint16(9000))
	}
	for _, v6 := range []bool{false, true} {
		u, _, l4 := udpSuperFrame(v6, 1, 2500)
		f.Add(u, uint8(vnetFNeedsCsum), uint8(vnetGSOUDPL4), uint16(1000), uint16(l4), uint16(6), uint16(1500))
	}
	for _, udp := range []bool{false, true} {
		for _, c := range ipv6Chains {
			u, h, _, _, _ := extSuperFrame(udp, 2500, 1000, c.chain)
			f.Add(u, h.flags, h.gsoType, h.gsoSize, h.csumStart, h.csumOffset, uint16(1500))
		}
	}
	f.Add(make([]byte, 60), uint8(0), uint8(1), uint16(1), uint16(34), uint16(16), uint16(100))
	f.Fuzz(func(t *testing.T, frame []byte, flags, gsoType uint8, gsoSize, csumStart, csumOffset, maxFrame uint16) {
		h := vnetHdr{flags: flags, gsoType: gsoType, gsoSize: gsoSize, csumStart: csumStart, csumOffset: csumOffset}
		_ = finishCsum(append([]byte(nil), frame...), h)
		var s gsoSegmenter
		if s.start(frame, h, int(maxFrame)) != nil {
			if !s.done() {
				t.Fatal("segmenter not idle after a refusal")
			}
			return
		}
		want := s.count()
		hdrLen, mss := s.hdrLen, s.mss
		ref := s // refNext: every segment summed from scratch
		var payload []byte
		for i := 0; !s.done(); i++ {
			if i >= want {
				t.Fatalf("more than the %d segments count promised", want)
			}
			dst, refDst := make([]byte, hdrLen+mss), make([]byte, hdrLen+mss)
			n := s.next(dst)
			if n > int(maxFrame) || n > len(dst) || n <= hdrLen {
				t.Fatalf("segment %d is %d bytes: headers %d, mss %d, max frame %d", i, n, hdrLen, mss, maxFrame)
			}
			if m := refNext(&ref, refDst); string(dst[:n]) != string(refDst[:m]) {
				t.Fatalf("segment %d differs from the one summed from scratch", i)
			}
			payload = append(payload, dst[hdrLen:n]...)
		}
		if string(payload) != string(frame[hdrLen:]) {
			t.Fatal("the segments' payload differs from the super-frame's")
		}
	})
}

// udpSuperFrame builds a UDP super-frame as the kernel hands a TAP with USO:
// Ethernet with tags VLAN tags (802.1ad outer, 802.1Q inner), IPv4 or IPv6,
// a UDP header, payload bytes, and a checksum field holding the
// pseudo-header sum. It returns the frame and its IP and UDP offsets.
func udpSuperFrame(v6 bool, tags, payload int) (f []byte, l3, l4 int) {
	l3 = 14 + 4*tags
	ipLen := 20
	if v6 {
		ipLen = 40
	}
	l4 = l3 + ipLen
	f = make([]byte, l4+8+payload)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1})
	et := 12
	for i := range tags {
		tpid := uint16(0x8100)
		if i == 0 && tags > 1 {
			tpid = 0x88a8
		}
		binary.BigEndian.PutUint16(f[et:], tpid)
		binary.BigEndian.PutUint16(f[et+2:], uint16(100+i))
		et += 4
	}
	if v6 {
		binary.BigEndian.PutUint16(f[et:], etherTypeIPv6)
		f[l3] = 0x60
		binary.BigEndian.PutUint16(f[l3+4:], uint16(len(f)-l4))
		f[l3+6], f[l3+7] = ipProtoUDP, 64
		for i := range 32 {
			f[l3+8+i] = byte(i*5 + 3)
		}
	} else {
		binary.BigEndian.PutUint16(f[et:], etherTypeIPv4)
		f[l3] = 0x45
		binary.BigEndian.PutUint16(f[l3+2:], uint16(len(f)-l3))
		binary.BigEndian.PutUint16(f[l3+4:], 0xfffe) // wraps during the run
		f[l3+6], f[l3+8], f[l3+9] = 0x40, 64, ipProtoUDP
		copy(f[l3+12:], []byte{10, 203, 0, 1, 10, 203, 0, 2})
	}
	binary.BigEndian.PutUint16(f[l4:], 40001)
	binary.BigEndian.PutUint16(f[l4+2:], 443)
	binary.BigEndian.PutUint16(f[l4+4:], uint16(len(f)-l4))
	for i := l4 + 8; i < len(f); i++ {
		f[i] = byte(i*11 + i>>8)
	}
	binary.BigEndian.PutUint16(f[l4+6:], fold(pseudoSum(f, l3, l4, v6, ipProtoUDP)))
	return f, l3, l4
}

// udpValid checks a finished UDP frame from scratch: IP lengths and (IPv4)
// header checksum, UDP length, and a UDP checksum that verifies and is not
// the "no checksum" zero.
func udpValid(t *testing.T, seg []byte, l3, l4 int, v6 bool) {
	t.Helper()
	if got := int(binary.BigEndian.Uint16(seg[l4+4:])); got != len(seg)-l4 {
		t.Fatalf("UDP length %d, want %d", got, len(seg)-l4)
	}
	if binary.BigEndian.Uint16(seg[l4+6:]) == 0 {
		t.Fatal("UDP checksum is zero (none)")
	}
	l4Valid(t, seg, l3, l4, v6, ipProtoUDP)
}

// TestUSOSegments cuts UDP super-frames (IPv4 and IPv6, untagged, VLAN and
// QinQ) into datagrams and checks every one: headers and checksums from
// scratch, the IPv4 ID counting up, no frame longer than headers+gso_size,
// and the payload unchanged, in order.
func TestUSOSegments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v6      bool
		tags    int
		payload int
		mss     int
	}{
		{"v4 even", false, 0, 1400 * 4, 1400},
		{"v4 odd tail", false, 0, 1200*7 + 33, 1200},
		{"v4 one datagram", false, 0, 500, 1400},
		{"v4 one byte tail", false, 1, 1000*3 + 1, 1000},
		{"v4 QinQ", false, 2, 1372 * 5, 1372},
		{"v4 64K", false, 0, 65535 - 20 - 8, 1472},
		{"v6 tail", true, 0, 1232*3 + 17, 1232},
		{"v6 VLAN", true, 1, 1000 * 6, 1000},
		{"v6 jumbo gso_size", true, 0, 8900*2 + 1, 8900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, l3, l4 := udpSuperFrame(tc.v6, tc.tags, tc.payload)
			h := vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOUDPL4, gsoSize: uint16(tc.mss), csumStart: uint16(l4), csumOffset: 6}
			max := l4 + 8 + tc.mss
			var s gsoSegmenter
			if err := s.start(f, h, max); err != nil {
				t.Fatal(err)
			}
			if !s.udp {
				t.Fatal("segmenter took a UDP super-frame for TCP")
			}
			want := (tc.payload + tc.mss - 1) / tc.mss
			if s.count() != want {
				t.Fatalf("count %d, want %d", s.count(), want)
			}
			var payload []byte
			dst := make([]byte, 70000)
			for i := 0; !s.done(); i++ {
				if i >= want {
					t.Fatalf("more than %d datagrams", want)
				}
				seg := dst[:s.next(dst)]
				if len(seg) > max {
					t.Fatalf("datagram %d is %d bytes, longer than headers+gso_size", i, len(seg))
				}
				if string(seg[:l3]) != string(f[:l3]) {
					t.Fatalf("datagram %d: Ethernet header changed", i)
				}
				udpValid(t, seg, l3, l4, tc.v6)
				if !tc.v6 {
					if id := binary.BigEndian.Uint16(seg[l3+4:]); id != 0xfffe+uint16(i) {
						t.Fatalf("datagram %d: IPv4 ID %#x", i, id)
					}
				}
				payload = append(payload, seg[l4+8:]...)
			}
			if string(payload) != string(f[l4+8:]) {
				t.Fatal("payload of the datagrams differs from the super-frame's")
			}
		})
	}
}

// TestFinishCsumZero: a UDP checksum that comes out as zero is written as
// all ones, as the kernel does (zero is "no checksum" in IPv4 and invalid in
// IPv6), for a frame finished whole (no GSO) and for a datagram cut from a
// super-frame.
func TestFinishCsumZero(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		f, l3, l4 := udpSuperFrame(v6, 0, 100)
		// Make the sum over pseudo-header, header and payload 0xFFFF, so the
		// complement is zero: the last two payload bytes take up the rest.
		partial := binary.BigEndian.Uint16(f[l4+6:])
		f[len(f)-2], f[len(f)-1] = 0, 0
		s := refCsum(f[l4:])
		binary.BigEndian.PutUint16(f[len(f)-2:], 0xffff-s)
		if refCsum(f[l4:]) != 0xffff {
			t.Fatal("test frame does not sum to 0xffff")
		}
		seg := append([]byte(nil), f...)
		if !v6 {
			binary.BigEndian.PutUint16(f[l3+10:], ^refCsum(f[l3:l4]))
		}
		if err := finishCsum(f, vnetHdr{flags: vnetFNeedsCsum, csumStart: uint16(l4), csumOffset: 6}); err != nil {
			t.Fatal(err)
		}
		if got := binary.BigEndian.Uint16(f[l4+6:]); got != 0xffff {
			t.Errorf("v6 %v: finishCsum wrote %#04x, want 0xffff", v6, got)
		}
		udpValid(t, f, l3, l4, v6)

		var g gsoSegmenter
		binary.BigEndian.PutUint16(seg[l4+6:], partial)
		if err := g.start(seg, vnetHdr{gsoType: vnetGSOUDPL4, gsoSize: 100, csumStart: uint16(l4), csumOffset: 6}, 9000); err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 9000)
		out := dst[:g.next(dst)]
		if got := binary.BigEndian.Uint16(out[l4+6:]); got != 0xffff {
			t.Errorf("v6 %v: the segmenter wrote %#04x, want 0xffff", v6, got)
		}
		udpValid(t, out, l3, l4, v6)
	}
}

// withIPv4Options returns a copy of an untagged IPv4 frame with opts (a
// multiple of 4 bytes) inserted after the fixed IP header, the IHL and total
// length updated.
func withIPv4Options(f, opts []byte) []byte {
	const l3 = 14
	out := append(append(append([]byte{}, f[:l3+20]...), opts...), f[l3+20:]...)
	out[l3] = 0x40 | byte((20+len(opts))/4)
	binary.BigEndian.PutUint16(out[l3+2:], uint16(len(out)-l3))
	return out
}

// TestGSOSegmentsIPv4Options cuts TCP and UDP super-frames whose IPv4 header
// carries options (a router alert and padding): every frame keeps the
// options, and its lengths and checksums verify from scratch.
func TestGSOSegmentsIPv4Options(t *testing.T) {
	opts := []byte{0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00} // router alert; NOP, NOP, NOP, end
	const l3, l4 = 14, 14 + 28
	for _, udp := range []bool{false, true} {
		var f []byte
		h := vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOTCPv4, gsoSize: 1000, csumStart: l4, csumOffset: 16}
		hdrLen := l4 + 32
		if udp {
			u, _, _ := udpSuperFrame(false, 0, 3500)
			f = withIPv4Options(u, opts)
			h.gsoType, h.csumOffset, hdrLen = vnetGSOUDPL4, 6, l4+8
		} else {
			f = withIPv4Options(superFrame(false, 3500, 0x18), opts)
		}
		var s gsoSegmenter
		if err := s.start(f, h, hdrLen+1000); err != nil {
			t.Fatalf("udp %v: %v", udp, err)
		}
		var payload []byte
		dst := make([]byte, 9000)
		for i := 0; !s.done(); i++ {
			seg := dst[:s.next(dst)]
			if !bytes.Equal(seg[l3+20:l4], opts) {
				t.Fatalf("udp %v, segment %d: IP options % x", udp, i, seg[l3+20:l4])
			}
			if udp {
				udpValid(t, seg, l3, l4, false)
			} else {
				l4Valid(t, seg, l3, l4, false, ipProtoTCP)
			}
			payload = append(payload, seg[hdrLen:]...)
		}
		if !bytes.Equal(payload, f[hdrLen:]) {
			t.Fatalf("udp %v: payload of the segments differs from the super-frame's", udp)
		}
	}
}

// IPv6 extension headers for the tests (RFC 8200 4.3, 4.6), with next header
// nh: an 8-byte Destination Options header (PadN of 4), a 16-byte one (PadN
// of 12) and an 8-byte Hop-by-Hop header (router alert 0, PadN of 0).
func dstOpts8(nh byte) []byte  { return []byte{nh, 0, 1, 4, 0, 0, 0, 0} }
func dstOpts16(nh byte) []byte { return append([]byte{nh, 1, 1, 12}, make([]byte, 12)...) }
func hopByHop8(nh byte) []byte { return []byte{nh, 0, 5, 2, 0, 0, 1, 0} }

// withIPv6Ext returns a copy of an IPv6 frame (IP header at l3) with the
// extension headers exts inserted after the fixed header, the IPv6 next
// header set to first and the payload length updated.
func withIPv6Ext(f []byte, l3 int, first byte, exts ...[]byte) []byte {
	out := append([]byte{}, f[:l3+40]...)
	for _, e := range exts {
		out = append(out, e...)
	}
	out = append(out, f[l3+40:]...)
	out[l3+6] = first
	binary.BigEndian.PutUint16(out[l3+4:], uint16(len(out)-l3-40))
	return out
}

// extSuperFrame builds a TCP (superFrame) or UDP (udpSuperFrame, one VLAN
// tag) IPv6 super-frame with the extension headers chain makes for the
// transport protocol proto, and its virtio_net_hdr for gso_size mss.
func extSuperFrame(udp bool, payload, mss int, chain func(proto byte) (byte, [][]byte)) (f []byte, h vnetHdr, l3, l4, hdrLen int) {
	proto := byte(ipProtoTCP)
	h = vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOTCPv6, gsoSize: uint16(mss), csumOffset: 16}
	if udp {
		proto, h.gsoType, h.csumOffset = ipProtoUDP, vnetGSOUDPL4, 6
		f, l3, _ = udpSuperFrame(true, 1, payload)
	} else {
		f, l3 = superFrame(true, payload, tcpFlagACK|tcpFlagPSH|tcpFlagFIN), 14
	}
	first, exts := chain(proto)
	f = withIPv6Ext(f, l3, first, exts...)
	l4 = l3 + 40
	for _, e := range exts {
		l4 += len(e)
	}
	h.csumStart = uint16(l4)
	hdrLen = l4 + 8
	if !udp {
		hdrLen = l4 + 32
	}
	return f, h, l3, l4, hdrLen
}

// ipv6Chains are the extension header chains the segmenter cuts through.
var ipv6Chains = []struct {
	name  string
	chain func(proto byte) (byte, [][]byte)
}{
	{"destination options", func(p byte) (byte, [][]byte) { return ipv6DstOpts, [][]byte{dstOpts8(p)} }},
	{"hop-by-hop, destination options", func(p byte) (byte, [][]byte) {
		return ipv6HopByHop, [][]byte{hopByHop8(ipv6DstOpts), dstOpts16(p)}
	}},
}

// TestGSOSegmentsIPv6ExtHeaders cuts IPv6 TCP and UDP super-frames whose
// header is followed by a Destination Options header, or Hop-by-Hop and
// Destination Options (a socket with IPV6_HOPOPTS/IPV6_DSTOPTS, a CALIPSO
// label): every frame keeps the Ethernet header, the IPv6 header but for its
// payload length, and the extension headers byte for byte; its payload
// length counts the extension headers; its TCP or UDP checksum verifies from
// scratch; and the frames carry the payload once, in order.
func TestGSOSegmentsIPv6ExtHeaders(t *testing.T) {
	const mss = 1200
	for _, udp := range []bool{false, true} {
		for _, c := range ipv6Chains {
			t.Run(fmt.Sprintf("udp %v, %s", udp, c.name), func(t *testing.T) {
				f, h, l3, l4, hdrLen := extSuperFrame(udp, 3*mss+41, mss, c.chain)
				var s gsoSegmenter
				if err := s.start(f, h, hdrLen+mss); err != nil {
					t.Fatal(err)
				}
				if s.count() != 4 {
					t.Fatalf("count %d, want 4", s.count())
				}
				var payload []byte
				dst := make([]byte, hdrLen+mss)
				for i := 0; !s.done(); i++ {
					seg := dst[:s.next(dst)]
					if len(seg) > hdrLen+mss {
						t.Fatalf("segment %d is %d bytes, longer than headers+mss", i, len(seg))
					}
					if !bytes.Equal(seg[:l3+4], f[:l3+4]) || !bytes.Equal(seg[l3+6:l4], f[l3+6:l4]) {
						t.Fatalf("segment %d: headers before l4 changed:\n% x\nwant\n% x", i, seg[:l4], f[:l4])
					}
					if udp {
						udpValid(t, seg, l3, l4, true)
					} else {
						l4Valid(t, seg, l3, l4, true, ipProtoTCP)
						if got := binary.BigEndian.Uint32(seg[l4+4:]); got != 0xfffff000+uint32(len(payload)) {
							t.Fatalf("segment %d seq %#x", i, got)
						}
						if fin := seg[l4+13]&tcpFlagFIN != 0; fin != s.done() {
							t.Fatalf("segment %d: FIN %v", i, fin)
						}
					}
					payload = append(payload, seg[hdrLen:]...)
				}
				if !bytes.Equal(payload, f[hdrLen:]) {
					t.Fatal("payload of the segments differs from the super-frame's")
				}
			})
		}
	}
}

// TestGSORejectsIPv6ExtHeaders: IPv6 super-frames whose extension headers do
// not lead exactly to the TCP or UDP header at csum_start are refused.
func TestGSORejectsIPv6ExtHeaders(t *testing.T) {
	const l3, mss = 14, 1000
	chain := ipv6Chains[1].chain // hop-by-hop (8 bytes) at 54, destination options (16) at 62; TCP at 78
	f, h, _, l4, _ := extSuperFrame(false, 3000, mss, chain)
	u, uh, ul3, ul4, _ := extSuperFrame(true, 3000, mss, ipv6Chains[0].chain)
	at := func(h vnetHdr, start int) vnetHdr { h.csumStart = uint16(start); return h }
	for _, tc := range []struct {
		name  string
		h     vnetHdr
		frame []byte
	}{
		{"length past the frame", h, withByte(f[:l4+200], l3+41, 255)},
		{"length past csum_start", h, withByte(f, l3+49, 2)},
		{"csum_start inside the chain", at(h, l4-8), f},
		{"csum_start past the chain", at(h, l4+8), f},
		{"csum_start inside the IPv6 header", at(h, l3+32), f},
		{"csum_start past the frame", at(h, len(f)+8), f},
		{"chain ends in UDP in a TSO frame", h, withByte(f, l3+48, ipProtoUDP)},
		{"chain ends in another option header", h, withByte(f, l3+48, ipv6DstOpts)},
		{"hop-by-hop not first", h, withByte(withByte(f, l3+6, ipv6DstOpts), l3+40, ipv6HopByHop)},
		{"routing header", h, withByte(f, l3+40, 43)},
		{"fragment header", h, withByte(f, l3+40, 44)},
		{"no extension header, csum_start after one", at(h, l4), withByte(f, l3+6, ipProtoTCP)},
		{"UDP: chain ends in TCP", uh, withByte(u, ul3+40, ipProtoTCP)},
		{"UDP: csum_start at the fixed header", at(uh, ul3+40), u},
		{"UDP: length past csum_start", uh, withByte(u, ul3+41, 1)},
		{"UDP: truncated in the chain", at(uh, ul4), u[:ul3+44]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s gsoSegmenter
			if err := s.start(tc.frame, tc.h, 9000); err == nil {
				t.Fatal("start accepted it")
			}
			if !s.done() {
				t.Fatal("segmenter not idle after a refusal")
			}
		})
	}
}

// TestGSOIPv6ExtHeadersNoAllocs: cutting a super-frame with extension
// headers allocates nothing.
func TestGSOIPv6ExtHeadersNoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	f, h, _, _, hdrLen := extSuperFrame(false, 8*1200, 1200, ipv6Chains[1].chain)
	dst := make([]byte, hdrLen+1200)
	var s gsoSegmenter
	ok := true
	allocs := testing.AllocsPerRun(100, func() {
		ok = ok && s.start(f, h, len(dst)) == nil
		for !s.done() {
			s.next(dst)
		}
	})
	if !ok || allocs != 0 {
		t.Fatalf("start ok %v; start and next allocate %v times per super-frame, want 0", ok, allocs)
	}
}
