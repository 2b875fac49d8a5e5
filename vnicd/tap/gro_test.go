package tap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/opavnic/opavnic/internal/race"
)

// segments cuts a super-frame (superFrame's layout, TCP options made a
// timestamp option) into finished frames of mss payload bytes, the way a
// sender's TSO does, and tags them with vlans VLAN tags.
func segments(t testing.TB, v6 bool, payload, mss, vlans int, flags byte) [][]byte {
	t.Helper()
	f := superFrame(v6, payload, flags)
	l4 := 34
	gso := uint8(vnetGSOTCPv4)
	if v6 {
		l4, gso = 54, vnetGSOTCPv6
	}
	// NOP, NOP, timestamps (kind 8, length 10): TSval, TSecr.
	copy(f[l4+20:], []byte{1, 1, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0x56, 0x78})
	var s gsoSegmenter
	if err := s.start(f, vnetHdr{flags: vnetFNeedsCsum, gsoType: gso, gsoSize: uint16(mss), csumStart: uint16(l4), csumOffset: 16}, 1<<16); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for !s.done() {
		b := make([]byte, 70000)
		seg := b[:s.next(b)]
		for v := range vlans {
			tag := []byte{0x81, 0x00, 0x00, byte(10 + v)}
			if v == 0 && vlans == 2 {
				tag[0], tag[1] = 0x88, 0xa8
			}
			seg = append(append(append([]byte{}, seg[:12]...), tag...), seg[12:]...)
		}
		out = append(out, seg)
	}
	return out
}

// withHeadroom copies frames behind off bytes of headroom.
func withHeadroom(frames [][]byte, off int) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = append(make([]byte, off, off+len(f)), f...)
	}
	return out
}

// runs is what Write does with frames: the length of each run.
func runs(frames [][]byte, off int) []int {
	var hdr [groMaxHdr]byte
	var out []int
	for i := 0; i < len(frames); {
		n, _ := groRun(frames[i:], off, &hdr, true)
		out = append(out, n)
		i += n
	}
	return out
}

// resegment checks one coalesced run of frames (at offset off) byte for byte:
// the super-frame is built as the TAP writes it, checked with its checksum
// finished as the kernel would finish it whole, then cut again with the
// transmit path's segmenter (which cuts as the kernel does); the result must
// be the original frames. The run is of TCP segments or of UDP datagrams.
func resegment(t *testing.T, frames [][]byte, off int) {
	t.Helper()
	var hdr [groMaxHdr]byte
	n, hl := groRun(frames, off, &hdr, true)
	if n != len(frames) {
		t.Fatalf("run of %d frames, want %d", n, len(frames))
	}
	var ts tcpSeg
	var ud udpDgram
	l3, l4, v6, hdrLen, wantGSO, csumOff := 0, 0, false, 0, uint8(vnetGSOUDPL4), uint16(6)
	switch {
	case ts.parse(frames[0][off:]):
		l3, l4, v6, hdrLen, wantGSO, csumOff = ts.l3, ts.l4, ts.v6, ts.hdrLen, vnetGSOTCPv4, 16
		if v6 {
			wantGSO = vnetGSOTCPv6
		}
	case ud.parse(frames[0][off:]):
		l3, l4, v6, hdrLen = ud.l3, ud.l4, ud.v6, ud.l4+8
	default:
		t.Fatal("first frame parses as neither TCP nor UDP")
	}
	size := len(frames[0]) - off - hdrLen
	h := parseVnetHdr(hdr[:])
	if h.flags != vnetFNeedsCsum || h.gsoType != wantGSO || int(h.gsoSize) != size ||
		int(h.csumStart) != l4 || h.csumOffset != csumOff || int(binary.LittleEndian.Uint16(hdr[2:])) != hdrLen {
		t.Fatalf("virtio_net_hdr % x (size %d, l4 %d, headers %d)", hdr[:vnetHdrLen], size, l4, hdrLen)
	}
	super := append([]byte{}, hdr[vnetHdrLen:hl]...)
	for _, f := range frames {
		super = append(super, f[off+hl-vnetHdrLen:]...)
	}
	fin := append([]byte{}, super...)
	if err := finishCsum(fin, h); err != nil {
		t.Fatal(err)
	}
	if wantGSO == vnetGSOUDPL4 {
		udpValid(t, fin, l3, l4, v6)
	} else {
		l4Valid(t, fin, l3, l4, v6, ipProtoTCP)
	}
	var s gsoSegmenter
	if err := s.start(super, h, 1<<16); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 70000)
	for i := 0; !s.done(); i++ {
		seg := dst[:s.next(dst)]
		if i >= len(frames) {
			t.Fatal("more segments than frames")
		}
		if want := frames[i][off:]; !bytes.Equal(seg, want) {
			t.Fatalf("segment %d differs:\n got % x\nwant % x", i, seg[:min(len(seg), 80)], want[:min(len(want), 80)])
		}
	}
}

func TestGROCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v6           bool
		payload, mss int
		vlans        int
		flags        byte
	}{
		{"v4 even", false, 1376 * 8, 1376, 0, tcpFlagACK},
		{"v4 short tail with PSH", false, 1376*5 + 99, 1376, 0, tcpFlagACK | tcpFlagPSH},
		{"v4 odd mss", false, 1001*3 + 1, 1001, 0, tcpFlagACK},
		{"v4 one VLAN tag", false, 1372 * 6, 1372, 1, tcpFlagACK | tcpFlagPSH},
		{"v4 QinQ", false, 1368*4 + 7, 1368, 2, tcpFlagACK},
		{"v6", true, 1356 * 7, 1356, 0, tcpFlagACK},
		{"v6 VLAN tail", true, 1352*3 + 3, 1352, 1, tcpFlagACK | tcpFlagPSH},
		{"v4 jumbo", false, 8872 * 7, 8872, 0, tcpFlagACK},
		{"v6 up to 64K", true, 1376 * 48, 1376, 0, tcpFlagACK},
		{"two segments", false, 1376 + 1, 1376, 0, tcpFlagACK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := segments(t, tc.v6, tc.payload, tc.mss, tc.vlans, tc.flags)
			fr := withHeadroom(frames, 20)
			// The IP length caps a run: resegment each run.
			for i := 0; i < len(fr); {
				var hdr [groMaxHdr]byte
				n, _ := groRun(fr[i:], 20, &hdr, true)
				if n < 2 && len(fr)-i > 1 {
					t.Fatalf("frame %d of %d: not coalesced", i, len(fr))
				}
				if n > 1 {
					resegment(t, fr[i:i+n], 20)
				}
				i += n
			}
			if tc.payload > 65000 {
				if r := runs(fr, 20); len(r) != 2 || r[0] != 47 {
					t.Fatalf("runs %v: want the first cut at 64 KB (47 segments)", r)
				}
			}
		})
	}
}

func TestGROPassThrough(t *testing.T) {
	tcp := segments(t, false, 1376*4, 1376, 0, tcpFlagACK)
	arp := make([]byte, 60)
	copy(arp[12:], []byte{0x08, 0x06})
	udp := make([]byte, 14+20+8+1400)
	binary.BigEndian.PutUint16(udp[12:], etherTypeIPv4)
	udp[14], udp[14+9] = 0x45, 17
	binary.BigEndian.PutUint16(udp[16:], uint16(len(udp)-14))
	udp2 := append([]byte{}, udp...)
	// UDP without a checksum (an IPv4 zero) is never coalesced.
	frames := [][]byte{arp, tcp[0], tcp[1], udp, udp2, tcp[2], arp, tcp[3]}
	got := runs(withHeadroom(frames, 0), 0)
	if fmt.Sprint(got) != "[1 2 1 1 1 1 1]" {
		t.Fatalf("runs %v, want [1 2 1 1 1 1 1]", got)
	}
}

func TestGRORefuses(t *testing.T) {
	type edit func(f [][]byte)
	const l3, l4 = 14, 34
	fixIP := func(f []byte) { // recompute the IPv4 header checksum
		f[l3+10], f[l3+11] = 0, 0
		binary.BigEndian.PutUint16(f[l3+10:], ^fold(csumAdd(0, f[l3:l4])))
	}
	fixTCP := func(f []byte) {
		f[l4+16], f[l4+17] = 0, 0
		binary.BigEndian.PutUint16(f[l4+16:], ^fold(csumAdd(tcpPseudoSum(f, l3, l4, false), f[l4:])))
	}
	fix := func(f []byte) { fixIP(f); fixTCP(f) }
	for _, tc := range []struct {
		name string
		want string
		edit edit
	}{
		{"unchanged", "[3]", func([][]byte) {}},
		{"timestamp differs", "[1 2]", func(f [][]byte) {
			for _, g := range f[1:] {
				g[l4+31]++
				fix(g)
			}
		}},
		{"sequence gap", "[1 2]", func(f [][]byte) {
			for _, g := range f[1:] {
				binary.BigEndian.PutUint32(g[l4+4:], binary.BigEndian.Uint32(g[l4+4:])+1)
				fix(g)
			}
		}},
		{"other port", "[1 1 1]", func(f [][]byte) { f[1][l4+1]++; fix(f[1]) }},
		{"ACK number differs", "[1 1 1]", func(f [][]byte) { f[1][l4+11]++; fix(f[1]) }},
		{"window differs", "[1 1 1]", func(f [][]byte) { f[1][l4+15]++; fix(f[1]) }},
		{"PSH on the first", "[1 2]", func(f [][]byte) { f[0][l4+13] |= tcpFlagPSH; fix(f[0]) }},
		{"PSH on the second ends the run", "[2 1]", func(f [][]byte) { f[1][l4+13] |= tcpFlagPSH; fix(f[1]) }},
		{"FIN", "[1 2]", func(f [][]byte) { f[0][l4+13] |= tcpFlagFIN; fix(f[0]) }},
		{"SYN", "[1 1 1]", func(f [][]byte) { f[1][l4+13] |= 0x02; fix(f[1]) }},
		{"CWR", "[1 2]", func(f [][]byte) { f[0][l4+13] |= tcpFlagCWR; fix(f[0]) }},
		{"bad TCP checksum on the first", "[1 2]", func(f [][]byte) { f[0][l4+16]++ }},
		{"bad TCP checksum on the second", "[1 1 1]", func(f [][]byte) { f[1][len(f[1])-1]++ }},
		{"bad IP checksum", "[1 1 1]", func(f [][]byte) { f[1][l3+10]++ }},
		{"TOS differs", "[1 1 1]", func(f [][]byte) { f[1][l3+1] = 0x02; fix(f[1]) }},
		{"TTL differs", "[1 1 1]", func(f [][]byte) { f[1][l3+8]--; fix(f[1]) }},
		{"no DF, IDs not incrementing", "[1 1 1]", func(f [][]byte) {
			for _, g := range f {
				g[l3+6] = 0
				fixIP(g)
			}
			f[1][l3+5] += 7
			fixIP(f[1])
		}},
		{"no DF, IDs incrementing", "[3]", func(f [][]byte) {
			for _, g := range f {
				g[l3+6] = 0
				fixIP(g)
			}
		}},
		{"fragment", "[1 1 1]", func(f [][]byte) { f[1][l3+6] |= 0x20; fix(f[1]) }},
		{"MAC differs", "[1 1 1]", func(f [][]byte) { f[1][5]++ }},
		{"shorter middle segment", "[2 1]", func(f [][]byte) {
			g := f[1][:len(f[1])-10]
			binary.BigEndian.PutUint16(g[l3+2:], uint16(len(g)-l3))
			fix(g)
			f[1] = g
		}},
		{"Ethernet padding", "[1 1 1]", func(f [][]byte) { f[1] = append(f[1], 0, 0) }},
		{"IPv4 options", "[1 1 1]", func(f [][]byte) {
			g := append(append(append([]byte{}, f[1][:l4]...), 1, 1, 1, 1), f[1][l4:]...)
			g[l3] = 0x46
			binary.BigEndian.PutUint16(g[l3+2:], uint16(len(g)-l3))
			f[1] = g
		}},
		{"pure ACK first", "[1 2]", func(f [][]byte) {
			g := f[0][:l4+32]
			binary.BigEndian.PutUint16(g[l3+2:], uint16(len(g)-l3))
			fix(g)
			f[0] = g
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := segments(t, false, 1376*3, 1376, 0, tcpFlagACK)
			tc.edit(frames)
			if got := fmt.Sprint(runs(frames, 0)); got != tc.want {
				t.Fatalf("runs %s, want %s", got, tc.want)
			}
		})
	}
}

func TestGRONoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	fr := withHeadroom(segments(t, false, 1376*40, 1376, 1, tcpFlagACK), 20)
	fr = append(fr, withHeadroom(datagrams(t, true, 1, 1000*40, 1000), 20)...)
	var hdr [groMaxHdr]byte
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < len(fr); {
			n, _ := groRun(fr[i:], 20, &hdr, true)
			i += n
		}
	})
	if allocs != 0 {
		t.Fatalf("groRun allocates %v times per batch, want 0", allocs)
	}
}

func BenchmarkGRORun(b *testing.B) {
	for _, mss := range []int{512, 1376, 8872} {
		b.Run(fmt.Sprint(mss), func(b *testing.B) {
			fr := withHeadroom(segments(b, false, mss*32, mss, 0, tcpFlagACK), 20)
			var hdr [groMaxHdr]byte
			b.ReportAllocs()
			b.SetBytes(int64(mss * 32))
			for b.Loop() {
				for i := 0; i < len(fr); {
					n, _ := groRun(fr[i:], 20, &hdr, true)
					i += n
				}
			}
		})
	}
}

func FuzzGRORun(f *testing.F) {
	fr := segments(f, false, 1376*2, 1376, 1, tcpFlagACK)
	f.Add(fr[0], fr[1])
	v6 := segments(f, true, 100*2, 100, 0, tcpFlagACK)
	f.Add(v6[0], v6[1])
	u := datagrams(f, false, 1, 700*2, 700)
	f.Add(u[0], u[1])
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var hdr [groMaxHdr]byte
		n, hl := groRun([][]byte{a, b}, 0, &hdr, true)
		if n < 1 || n > 2 || (n == 2) != (hl > vnetHdrLen) {
			t.Fatalf("groRun = %d, %d", n, hl)
		}
	})
}

// datagrams cuts a UDP super-frame (udpSuperFrame's layout) into datagrams
// of size payload bytes, the way a sender's UDP GSO does.
func datagrams(t testing.TB, v6 bool, tags, payload, size int) [][]byte {
	t.Helper()
	f, _, l4 := udpSuperFrame(v6, tags, payload)
	var s gsoSegmenter
	if err := s.start(f, vnetHdr{flags: vnetFNeedsCsum, gsoType: vnetGSOUDPL4, gsoSize: uint16(size), csumStart: uint16(l4), csumOffset: 6}, 1<<16); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for !s.done() {
		b := make([]byte, 70000)
		out = append(out, b[:s.next(b)])
	}
	return out
}

// TestGROCoalescesUDP: runs of UDP datagrams of one flow become one
// GSO_UDP_L4 super-frame that cuts back into the same datagrams, byte for
// byte, over IPv4 and IPv6, with and without VLAN tags, and a run ends at a
// shorter datagram, at 64 datagrams and at 64 KB of IP packet.
func TestGROCoalescesUDP(t *testing.T) {
	for _, tc := range []struct {
		name          string
		v6            bool
		tags          int
		payload, size int
		want          string
	}{
		{"v4 even", false, 0, 1400 * 8, 1400, "[8]"},
		{"v4 short tail", false, 0, 1400*5 + 99, 1400, "[6]"},
		{"v4 VLAN", false, 1, 1000 * 4, 1000, "[4]"},
		{"v4 QinQ tail", false, 2, 900*3 + 1, 900, "[4]"},
		{"v6", true, 0, 1232 * 6, 1232, "[6]"},
		{"v6 VLAN tail", true, 1, 1232*2 + 7, 1232, "[3]"},
		{"v4 jumbo", false, 0, 8900 * 7, 8900, "[7]"},
		{"at most 64 datagrams", false, 0, 100 * 100, 100, "[64 36]"},
		{"at most 64 KB", false, 0, 1472 * 46, 1472, "[44 2]"},
		{"two datagrams", true, 0, 600 + 1, 600, "[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := withHeadroom(datagrams(t, tc.v6, tc.tags, tc.payload, tc.size), 20)
			got := runs(fr, 20)
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("runs %v, want %s", got, tc.want)
			}
			for i, k := 0, 0; k < len(got); i, k = i+got[k], k+1 {
				resegment(t, fr[i:i+got[k]], 20)
			}
		})
	}
}

// TestGRORefusesUDP: a datagram that breaks a rule ends the run (or, the
// first of a run, stands alone) and is written as it came.
func TestGRORefusesUDP(t *testing.T) {
	const l3, l4 = 14, 34
	fixIP := func(f []byte) {
		f[l3+10], f[l3+11] = 0, 0
		binary.BigEndian.PutUint16(f[l3+10:], ^fold(csumAdd(0, f[l3:l4])))
	}
	fixUDP := func(f []byte) {
		f[l4+6], f[l4+7] = 0, 0
		binary.BigEndian.PutUint16(f[l4+6:], ^fold(csumAdd(pseudoSum(f, l3, l4, false, ipProtoUDP), f[l4:])))
	}
	for _, tc := range []struct {
		name string
		edit func(f [][]byte)
		want string
	}{
		{"as they come", func([][]byte) {}, "[4]"},
		{"other source port", func(f [][]byte) { f[2][l4+1]++; fixUDP(f[2]) }, "[2 1 1]"},
		{"IPv4 ID not the next", func(f [][]byte) { f[1][l3+5] += 2; fixIP(f[1]) }, "[1 1 2]"},
		{"bad UDP checksum", func(f [][]byte) { f[2][l4+8]++ }, "[2 1 1]"},
		{"bad first checksum", func(f [][]byte) { f[0][l4+8]++ }, "[1 3]"},
		{"no UDP checksum", func(f [][]byte) { f[1][l4+6], f[1][l4+7] = 0, 0 }, "[1 1 2]"},
		{"bad IPv4 header checksum", func(f [][]byte) { f[3][l3+10]++ }, "[3 1]"},
		{"TTL differs", func(f [][]byte) { f[2][l3+8]--; fixIP(f[2]) }, "[2 1 1]"},
		{"DSCP differs", func(f [][]byte) { f[1][l3+1] = 0x28; fixIP(f[1]) }, "[1 1 2]"},
		{"fragment", func(f [][]byte) { f[1][l3+6] |= 0x20; fixIP(f[1]) }, "[1 1 2]"},
		{"longer than the first", func(f [][]byte) {
			f[0] = f[0][:len(f[0])-10]
			binary.BigEndian.PutUint16(f[0][l3+2:], uint16(len(f[0])-l3))
			binary.BigEndian.PutUint16(f[0][l4+4:], uint16(len(f[0])-l4))
			fixIP(f[0])
			fixUDP(f[0])
		}, "[1 3]"},
		{"Ethernet padding", func(f [][]byte) { f[2] = append(f[2], 0) }, "[2 1 1]"},
		{"UDP length wrong", func(f [][]byte) { f[1][l4+5]--; fixUDP(f[1]) }, "[1 1 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := datagrams(t, false, 0, 1000*4, 1000)
			tc.edit(frames)
			if got := fmt.Sprint(runs(frames, 0)); got != tc.want {
				t.Fatalf("runs %s, want %s", got, tc.want)
			}
		})
	}
}

// TestGROPassesIPv6ExtHeaders: IPv6 TCP segments and UDP datagrams with
// extension headers (valid frames, cut from a super-frame by the segmenter)
// are never coalesced: each is written as it came, for the kernel to judge.
// The same flow without them coalesces.
func TestGROPassesIPv6ExtHeaders(t *testing.T) {
	const mss = 1000
	for _, udp := range []bool{false, true} {
		for _, c := range ipv6Chains {
			t.Run(fmt.Sprintf("udp %v, %s", udp, c.name), func(t *testing.T) {
				f, h, _, _, hdrLen := extSuperFrame(udp, 4*mss, mss, c.chain)
				var s gsoSegmenter
				if err := s.start(f, h, hdrLen+mss); err != nil {
					t.Fatal(err)
				}
				var frames [][]byte
				for !s.done() {
					b := make([]byte, hdrLen+mss)
					frames = append(frames, b[:s.next(b)])
				}
				fr := withHeadroom(frames, 20)
				if got := fmt.Sprint(runs(fr, 20)); got != "[1 1 1 1]" {
					t.Fatalf("runs %s, want [1 1 1 1]", got)
				}
				for i := range frames {
					if !bytes.Equal(fr[i][20:], frames[i]) {
						t.Fatalf("frame %d changed", i)
					}
				}
			})
		}
	}
	if got := fmt.Sprint(runs(withHeadroom(datagrams(t, true, 1, 4*mss, mss), 20), 20)); got != "[4]" {
		t.Fatalf("without extension headers: runs %s, want [4]", got)
	}
}
