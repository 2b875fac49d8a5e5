package encap_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// hfield is one header field as docs/wire.md §2 places it. Header bit g is bit
// g%64 of QW g/64, that is bit g%8 of byte g/8 (each QW is little-endian).
// bits[i] is the header bit that holds bit i of the field's value.
type hfield struct {
	name string
	bits []int
	set  func(h encap.Header16B, v uint64)
	get  func(h encap.Header16B) uint64
}

func span(lo, hi int) []int {
	var s []int
	for g := lo; g <= hi; g++ {
		s = append(s, g)
	}
	return s
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// hfields lists every accessor pair. The table's bit positions are docs/wire.md
// §2's, written here independently of the package's constants.
var hfields = []hfield{
	{"SLID", append(span(0, 19), span(64+8, 64+11)...), // QW0 0-19, QW1 8-11
		func(h encap.Header16B, v uint64) { h.SetSLID(uint32(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.SLID()) }},
	{"LEN", span(20, 30),
		func(h encap.Header16B, v uint64) { h.SetLen(int(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.Len()) }},
	{"BECN", []int{31},
		func(h encap.Header16B, v uint64) { h.SetBECN(v&1 != 0) },
		func(h encap.Header16B) uint64 { return b2u(h.BECN()) }},
	{"DLID", append(span(32, 51), span(64+12, 64+15)...), // QW0 32-51, QW1 12-15
		func(h encap.Header16B, v uint64) { h.SetDLID(uint32(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.DLID()) }},
	{"SC", span(52, 56),
		func(h encap.Header16B, v uint64) { h.SetSC(uint8(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.SC()) }},
	{"RC", span(57, 59),
		func(h encap.Header16B, v uint64) { h.SetRC(uint8(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.RC()) }},
	{"FECN", []int{60},
		func(h encap.Header16B, v uint64) { h.SetFECN(v&1 != 0) },
		func(h encap.Header16B) uint64 { return b2u(h.FECN()) }},
	{"L2", span(61, 62),
		func(h encap.Header16B, v uint64) { h.SetL2(uint8(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.L2()) }},
	{"LT", []int{63},
		func(h encap.Header16B, v uint64) { h.SetLT(v&1 != 0) },
		func(h encap.Header16B) uint64 { return b2u(h.LT()) }},
	{"L4", span(64, 71),
		func(h encap.Header16B, v uint64) { h.SetL4(uint8(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.L4()) }},
	{"PKEY", span(64+16, 64+31),
		func(h encap.Header16B, v uint64) { h.SetPKey(encap.PKey(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.PKey()) }},
	{"Entropy", span(64+32, 64+47),
		func(h encap.Header16B, v uint64) { h.SetEntropy(uint16(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.Entropy()) }},
	{"Age", span(64+48, 64+55),
		func(h encap.Header16B, v uint64) { h.SetAge(uint8(v)) },
		func(h encap.Header16B) uint64 { return uint64(h.Age()) }},
}

func (f *hfield) mask() uint64 { return 1<<len(f.bits) - 1 }

func hbit(h []byte, g int) uint64 { return uint64(h[g/8] >> (g % 8) & 1) }

// TestHeaderFieldMap checks the test's own table: every header bit belongs to
// exactly one field except the reserved byte 15 (QW1 bits 56-63).
func TestHeaderFieldMap(t *testing.T) {
	owner := map[int]string{}
	for _, f := range hfields {
		for _, g := range f.bits {
			if o, ok := owner[g]; ok {
				t.Errorf("bit %d in %s and %s", g, o, f.name)
			}
			owner[g] = f.name
		}
	}
	for g := range 128 {
		if _, ok := owner[g]; ok == (g >= 120) {
			t.Errorf("bit %d: owned %v", g, ok)
		}
	}
}

// checkSet sets f to v on a copy of bg and checks the getter and every one
// of the 128 bits: the field's bits carry v (truncated to the field), all
// others keep the background. It also checks nothing past byte 15 is written.
func checkSet(t *testing.T, f *hfield, bg []byte, v uint64) {
	t.Helper()
	buf := append(bytes.Clone(bg[:16]), 0xC3, 0x3C, 0xC3, 0x3C)
	h := encap.Header16B(buf[:16])
	f.set(h, v)
	want := v & f.mask()
	if got := f.get(h); got != want {
		t.Errorf("%s: set %#x on % x, got %#x, want %#x", f.name, v, bg[:16], got, want)
		return
	}
	in := map[int]int{}
	for i, g := range f.bits {
		in[g] = i
	}
	for g := range 128 {
		exp := hbit(bg, g)
		if i, ok := in[g]; ok {
			exp = want >> i & 1
		}
		if hbit(buf, g) != exp {
			t.Errorf("%s: set %#x on % x: header bit %d is %d, want %d", f.name, v, bg[:16], g, hbit(buf, g), exp)
			return
		}
	}
	if !bytes.Equal(buf[16:], []byte{0xC3, 0x3C, 0xC3, 0x3C}) {
		t.Errorf("%s: setter wrote past the header", f.name)
	}
}

func TestHeaderAccessors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	backgrounds := map[string][]byte{
		"zeros": make([]byte, 16),
		"ones":  bytes.Repeat([]byte{0xFF}, 16),
		"0xA5":  bytes.Repeat([]byte{0xA5}, 16),
		"0x5A":  bytes.Repeat([]byte{0x5A}, 16),
	}
	for i := range 4 {
		b := make([]byte, 16)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		backgrounds[string(rune('a'+i))+"-random"] = b
	}
	for _, f := range hfields {
		t.Run(f.name, func(t *testing.T) {
			m := f.mask()
			values := []uint64{0, 1, m, m >> 1, m &^ 1, 0x5555555555555555 & m, 0xAAAAAAAAAAAAAAAA & m}
			if len(f.bits) > 1 {
				// Wider than the field: the setter drops the excess bits.
				values = append(values, m+1, 0xFFFFFFFF&(m<<1|m), 1<<len(f.bits)|0x2)
			}
			for range 32 {
				values = append(values, rng.Uint64()&m)
			}
			for _, bg := range backgrounds {
				for _, v := range values {
					checkSet(t, &f, bg, v)
				}
			}
		})
	}
}

// TestHeaderSetAllGetAll sets every field on an all-ones background, then
// reads each back: no setter disturbs a field set before it.
func TestHeaderSetAllGetAll(t *testing.T) {
	vals := map[string]uint64{
		"SLID": 0x0C0001, "LEN": 0x2AA, "BECN": 0, "DLID": 0xABCDE, "SC": 0x0A,
		"RC": 0x2, "FECN": 0, "L2": 1, "LT": 0, "L4": 0x3C, "PKEY": 0x1234,
		"Entropy": 0x8001, "Age": 0x42,
	}
	for _, order := range [][]int{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		{12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		{3, 0, 9, 1, 12, 4, 2, 10, 6, 5, 11, 8, 7},
	} {
		h := encap.Header16B(bytes.Repeat([]byte{0xFF}, 16))
		for _, i := range order {
			hfields[i].set(h, vals[hfields[i].name])
		}
		for _, f := range hfields {
			if got := f.get(h); got != vals[f.name] {
				t.Errorf("order %v: %s = %#x, want %#x", order, f.name, got, vals[f.name])
			}
		}
		if h[15] != 0xFF {
			t.Errorf("reserved byte 15 = %#x", h[15])
		}
	}
}

// TestHeaderGettersOnGolden reads the hand-written extended-LID vector.
func TestHeaderGettersOnGolden(t *testing.T) {
	h := encap.Header16B([]byte{
		0x00, 0xC0, 0xB0, 0x80, // lrh0: SLID 0x0C000, LEN 11, BECN 1
		0xDE, 0xBC, 0xFA, 0xDB, // lrh1: DLID[19:0] 0xABCDE, SC 0x1F, RC 5, FECN 1, L2 2, LT 1
		0x78, 0x5E, 0x01, 0x80, // lrh2: L4 0x78, SLID[23:20] 0xE, DLID[23:20] 5, PKEY 0x8001
		0xA5, 0x5A, 0x77, 0x00, // lrh3: entropy 0x5AA5, age 0x77
	})
	// byte 6 0xFA: DLID[19:16] = 0xA, SC[3:0] = 0xF; byte 7 0xDB = 1101 1011:
	// SC[4] 1, RC 101, FECN 1, L2 10, LT 1.
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"SLID", uint64(h.SLID()), 0xE0C000},
		{"LEN", uint64(h.Len()), 11},
		{"BECN", b2u(h.BECN()), 1},
		{"DLID", uint64(h.DLID()), 0x5ABCDE},
		{"SC", uint64(h.SC()), 0x1F},
		{"RC", uint64(h.RC()), 5},
		{"FECN", b2u(h.FECN()), 1},
		{"L2", uint64(h.L2()), 2},
		{"LT", b2u(h.LT()), 1},
		{"L4", uint64(h.L4()), 0x78},
		{"PKEY", uint64(h.PKey()), 0x8001},
		{"Entropy", uint64(h.Entropy()), 0x5AA5},
		{"Age", uint64(h.Age()), 0x77},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
