package tap

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// refSameIP, refTCPFollows and refUDPFollows are sameIP and the follows
// methods as they were, with bytes.Equal over each range.
func refSameIP(f, head []byte, l3, l4 int, v6 bool) bool {
	if !bytes.Equal(f[:l3], head[:l3]) {
		return false
	}
	if v6 {
		return bytes.Equal(f[l3:l3+4], head[l3:l3+4]) && bytes.Equal(f[l3+6:l4], head[l3+6:l4])
	}
	return bytes.Equal(f[l3:l3+2], head[l3:l3+2]) && bytes.Equal(f[l3+6:l3+10], head[l3+6:l3+10]) &&
		bytes.Equal(f[l3+12:l4], head[l3+12:l4])
}

func refTCPFollows(s *tcpSeg, f []byte, h *tcpSeg, head []byte, k int) bool {
	l3, l4 := s.l3, s.l4
	if s.v6 != h.v6 || s.hdrLen != h.hdrLen || s.l3 != h.l3 || s.l4 != h.l4 || !refSameIP(f, head, l3, l4, s.v6) ||
		!s.v6 && f[l3+6]&ipv4DF == 0 && !nextID(f, head, l3, k) {
		return false
	}
	return bytes.Equal(f[l4:l4+4], head[l4:l4+4]) && bytes.Equal(f[l4+8:l4+13], head[l4+8:l4+13]) &&
		bytes.Equal(f[l4+14:l4+16], head[l4+14:l4+16]) && bytes.Equal(f[l4+18:s.hdrLen], head[l4+18:h.hdrLen])
}

func refUDPFollows(d *udpDgram, f []byte, h *udpDgram, head []byte, k int) bool {
	l3, l4 := d.l3, d.l4
	return d.v6 == h.v6 && d.l3 == h.l3 && d.l4 == h.l4 && refSameIP(f, head, l3, l4, d.v6) &&
		(d.v6 || nextID(f, head, l3, k)) && bytes.Equal(f[l4:l4+4], head[l4:l4+4])
}

// TestGROCompareMatchesBytesEqual checks sameIP and the TCP and UDP follows,
// which compare fixed ranges a word at a time, against the bytes.Equal
// versions: random headers (0 to 2 VLAN tags, IPv4 and IPv6, TCP options 0
// to 40 bytes), and a second frame equal to the first but for 0 to 2
// flipped bytes anywhere in the headers, or a random ID, so that every
// range, and every byte the rules let differ, is hit. Both outcomes must be
// reached often.
func TestGROCompareMatchesBytesEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var same, differ int
	for i := range 300000 {
		tags, v6 := r.IntN(3), r.IntN(2) == 0
		l3 := 14 + 4*tags
		l4 := l3 + 20
		if v6 {
			l4 = l3 + 40
		}
		hdrLen := l4 + 20 + 4*r.IntN(11)
		head := make([]byte, hdrLen+16)
		for j := range head {
			head[j] = byte(r.Uint32())
		}
		f := bytes.Clone(head)
		for range r.IntN(3) {
			f[r.IntN(hdrLen)] ^= byte(1 + r.IntN(255))
		}
		k := 1 + r.IntN(3)
		if r.IntN(4) == 0 { // the ID the rule wants
			id := uint16(head[l3+4])<<8 | uint16(head[l3+5]) + uint16(k)
			f[l3+4], f[l3+5] = byte(id>>8), byte(id)
		}
		h := tcpSeg{l3: l3, l4: l4, hdrLen: hdrLen, v6: v6}
		s := h
		if got, want := sameIP(f, head, l3, l4, v6), refSameIP(f, head, l3, l4, v6); got != want {
			t.Fatalf("case %d: sameIP %v, want %v (l3 %d v6 %v)\n f % x\nhd % x", i, got, want, l3, v6, f[:l4], head[:l4])
		}
		got, want := s.follows(f, &h, head, k), refTCPFollows(&s, f, &h, head, k)
		if got != want {
			t.Fatalf("case %d: TCP follows %v, want %v (l3 %d v6 %v hdrLen %d)\n f % x\nhd % x",
				i, got, want, l3, v6, hdrLen, f[:hdrLen], head[:hdrLen])
		}
		if want {
			same++
		} else {
			differ++
		}
		d := udpDgram{l3: l3, l4: l4, v6: v6}
		e := d
		if got, want := e.follows(f, &d, head, k), refUDPFollows(&e, f, &d, head, k); got != want {
			t.Fatalf("case %d: UDP follows %v, want %v", i, got, want)
		}
	}
	if same < 10000 || differ < 10000 {
		t.Fatalf("follows true %d times, false %d times: the cases do not reach both", same, differ)
	}
}

var sinkFollows bool

// BenchmarkGROFollows is the per-segment header comparison of a TCP run
// (IPv4, timestamps, as Linux sends) with the word compares and with the
// bytes.Equal versions.
func BenchmarkGROFollows(b *testing.B) {
	fr := segments(b, false, 1376*2, 1376, 0, tcpFlagACK)
	var h, s tcpSeg
	if !h.parse(fr[0]) || !s.parse(fr[1]) {
		b.Fatal("segments do not parse")
	}
	if !s.follows(fr[1], &h, fr[0], 1) {
		b.Fatal("the second segment does not follow the first")
	}
	b.Run("words", func(b *testing.B) {
		for b.Loop() {
			sinkFollows = s.follows(fr[1], &h, fr[0], 1)
		}
	})
	b.Run("bytes.Equal", func(b *testing.B) {
		for b.Loop() {
			sinkFollows = refTCPFollows(&s, fr[1], &h, fr[0], 1)
		}
	})
}
