package encap_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// TestLID32 classifies 32-bit LIDs (docs/linux-compat.md §7, docs/wire.md §6) and
// converts them to the 24-bit form: unicast lid & 0xFFFFFF, multicast
// lid - 0xF0000000 + 0xF00000.
func TestLID32(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		lid                             encap.LID
		valid, uni, mc, perm, ext, fits bool
		to16B                           uint32
	}{
		{"invalid-0", 0, false, false, false, false, false, false, 0},
		{"unicast-1", 1, true, true, false, false, false, true, 1},
		{"last-9B-0xBFFF", 0xBFFF, true, true, false, false, false, true, 0xBFFF},
		{"first-extended-0xC000", 0xC000, true, true, false, false, true, true, 0xC000},
		{"extended-0xABCDE", 0xABCDE, true, true, false, false, true, true, 0xABCDE},
		{"max-16B-unicast-0xEFFFFF", 0xEFFFFF, true, true, false, false, true, true, 0xEFFFFF},
		// 32-bit unicast above 0xEFFFFF: a 16B header cannot carry it.
		{"unicast-0xF00000", 0xF00000, true, true, false, false, true, false, 0xF00000},
		{"unicast-0x1000000-truncates-to-0", 0x1000000, true, true, false, false, true, false, 0},
		{"max-32-unicast-0xEFFFFFFF", 0xEFFFFFFF, true, true, false, false, true, false, 0xFFFFFF},
		{"first-multicast", 0xF0000000, true, false, true, false, false, true, 0xF00000},
		{"multicast-1", 0xF0000001, true, false, true, false, false, true, 0xF00001},
		{"last-16B-multicast", 0xF007FFFF, true, false, true, false, false, true, 0xF7FFFF},
		{"first-16B-collective", 0xF0080000, true, false, true, false, false, true, 0xF80000},
		{"last-16B-collective", 0xF00FFFFE, true, false, true, false, false, true, 0xFFFFFE},
		// Multicast LIDs cannot be extended beyond the 16B range.
		{"multicast-0xF00FFFFF-aliases-permissive", 0xF00FFFFF, true, false, true, false, false, false, 0xFFFFFF},
		{"multicast-0xF0100000-wraps", 0xF0100000, true, false, true, false, false, false, 0},
		{"last-32-multicast", 0xFFFFFFFE, true, false, true, false, false, false, 0xEFFFFE},
		{"permissive", 0xFFFFFFFF, true, false, false, true, false, true, 0xFFFFFF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lid
			if l.IsValid() != tc.valid || l.IsUnicast() != tc.uni || l.IsMulticast() != tc.mc ||
				l.IsPermissive() != tc.perm || l.IsExtended() != tc.ext || l.Fits16B() != tc.fits {
				t.Errorf("valid %v unicast %v multicast %v permissive %v extended %v fits16B %v",
					l.IsValid(), l.IsUnicast(), l.IsMulticast(), l.IsPermissive(), l.IsExtended(), l.Fits16B())
			}
			if got := l.To16B(); got != tc.to16B {
				t.Errorf("To16B = %#x, want %#x", got, tc.to16B)
			}
			if back := encap.LIDFrom16B(l.To16B()); tc.fits && back != l {
				t.Errorf("fits but LIDFrom16B(To16B) = %#x", back)
			}
		})
	}
	for _, c := range []struct {
		got, want encap.LID
	}{
		{encap.LIDPermissive, 0xFFFFFFFF}, {encap.LIDMulticastBase, 0xF0000000},
		{encap.LIDExtendedBase, 0xC000}, {encap.LIDMaxUnicast16B, 0xEFFFFF},
	} {
		if c.got != c.want {
			t.Errorf("constant %#x, want %#x", c.got, c.want)
		}
	}
}

// TestFits16BIsRoundTrip checks Fits16B against its definition (the LID
// survives To16B and LIDFrom16B) around every range edge and at random.
func TestFits16BIsRoundTrip(t *testing.T) {
	var lids []encap.LID
	for _, edge := range []uint32{0, 0xBFFF, 0xC000, 0xEFFFFF, 0xF00000, 0xFFFFFF, 0x1000000,
		0xEFFFFFFF, 0xF0000000, 0xF007FFFF, 0xF0080000, 0xF00FFFFE, 0xF00FFFFF, 0xF0100000, 0xFFFFFFFF} {
		for d := uint32(0); d < 5; d++ {
			lids = append(lids, encap.LID(edge+d), encap.LID(edge-d))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		lids = append(lids, encap.LID(rng.Uint32()))
	}
	for _, l := range lids {
		want := l != 0 && encap.LIDFrom16B(l.To16B()) == l
		if l.Fits16B() != want {
			t.Errorf("%v: Fits16B %v, round trip %v", l, l.Fits16B(), want)
		}
	}
}

// class16B classifies a 24-bit LID by docs/wire.md §6's ranges.
func class16B(v uint32) string {
	switch {
	case v == 0:
		return "invalid"
	case v <= 0xEFFFFF:
		return "unicast"
	case v <= 0xF7FFFF:
		return "multicast"
	case v <= 0xFFFFFE:
		return "collective"
	default:
		return "permissive"
	}
}

func TestLID16B(t *testing.T) {
	for _, tc := range []struct {
		v     uint32
		class string
		to32  encap.LID
	}{
		{0, "invalid", 0},
		{1, "unicast", 1},
		{0xBFFF, "unicast", 0xBFFF},
		{0xC000, "unicast", 0xC000},
		{0xEFFFFF, "unicast", 0xEFFFFF},
		{0xF00000, "multicast", 0xF0000000},
		{0xF00001, "multicast", 0xF0000001},
		{0xF7FFFF, "multicast", 0xF007FFFF},
		{0xF80000, "collective", 0xF0080000},
		{0xFFFFFE, "collective", 0xF00FFFFE},
		{0xFFFFFF, "permissive", 0xFFFFFFFF},
	} {
		if got := class16B(tc.v); got != tc.class {
			t.Fatalf("test table: %#x is %s", tc.v, got)
		}
		if got := encap.LIDFrom16B(tc.v); got != tc.to32 {
			t.Errorf("LIDFrom16B(%#x) = %#x, want %#x", tc.v, got, tc.to32)
		}
		// Bits above 23 are not part of a 16B LID.
		if got := encap.LIDFrom16B(tc.v | 0x5F000000); got != tc.to32 {
			t.Errorf("LIDFrom16B(%#x) = %#x, want %#x", tc.v|0x5F000000, got, tc.to32)
		}
		if got := encap.LIDFrom16B(tc.v).To16B(); got != tc.v {
			t.Errorf("To16B(LIDFrom16B(%#x)) = %#x", tc.v, got)
		}
	}
	// Every 24-bit value: the predicates agree with the ranges.
	for v := uint32(0); v <= 0xFFFFFF; v++ {
		c := class16B(v)
		if encap.Is16BUnicast(v) != (c == "unicast") ||
			encap.Is16BMulticast(v) != (c == "multicast" || c == "collective") {
			t.Fatalf("%#x (%s): Is16BUnicast %v Is16BMulticast %v", v, c, encap.Is16BUnicast(v), encap.Is16BMulticast(v))
		}
		if (v >= encap.LID16BCollective && v < encap.LID16BPermissive) != (c == "collective") {
			t.Fatalf("%#x: collective range constant disagrees", v)
		}
	}
	if encap.LID16BMask != 0xFFFFFF || encap.LID16BMulticast != 0xF00000 ||
		encap.LID16BCollective != 0xF80000 || encap.LID16BPermissive != 0xFFFFFF {
		t.Errorf("16B LID constants")
	}
}

func TestLIDString(t *testing.T) {
	for _, tc := range []struct {
		l    encap.LID
		want string
	}{{0, "0x0"}, {1, "0x1"}, {0xC000, "0xC000"}, {0xabcde, "0xABCDE"}, {0xFFFFFFFF, "0xFFFFFFFF"}} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", uint32(tc.l), got, tc.want)
		}
	}
}

func TestParseLID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want encap.LID
		ok   bool
	}{
		{"1", 1, true},
		{"49152", 0xC000, true},
		{" 49152\n", 0xC000, true},
		{"0xC000", 0xC000, true},
		{"0XabCDe", 0xABCDE, true},
		{"0xFFFFFFFF", 0xFFFFFFFF, true},
		{"4294967295", 0xFFFFFFFF, true},
		// Decimal means decimal: a leading zero is not octal.
		{"010", 10, true},
		{"0049152", 0xC000, true},
		{"0", 0, false},
		{"0x0", 0, false},
		{"", 0, false},
		{"  ", 0, false},
		{"0x", 0, false},
		{"4294967296", 0, false},
		{"0x100000000", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"12ab", 0, false},
		{"0xC000 1", 0, false},
		{"0b101", 0, false},
		{"0o17", 0, false},
		{"1_000", 0, false},
		{"0x_C000", 0, false},
	} {
		got, err := encap.ParseLID(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseLID(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, encap.ErrBadLID) || got != 0 {
			t.Errorf("ParseLID(%q) = %v, %v; want ErrBadLID", tc.in, got, err)
		}
	}
	// String and ParseLID round trip.
	for _, l := range []encap.LID{1, 0xBFFF, 0xC000, 0xEFFFFF, 0xF0000001, 0xFFFFFFFF} {
		if got, err := encap.ParseLID(l.String()); err != nil || got != l {
			t.Errorf("ParseLID(%q) = %v, %v", l.String(), got, err)
		}
	}
}

func TestSpecialGID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix uint64
		lid    encap.LID
		want   encap.GID
		str    string
	}{
		{
			name: "fe80-0xC000", prefix: encap.DefaultSubnetPrefix, lid: 0xC000,
			want: encap.GID{
				0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // subnet prefix fe80::
				0x00, 0x06, 0x6A, 0x00, // OUI 00:06:6A, then 00
				0x00, 0x00, 0xC0, 0x00, // LID 0x0000C000, big-endian
			},
			str: "fe80::6:6a00:0:c000",
		},
		{
			name: "site-prefix-permissive", prefix: 0x20010DB800000001, lid: encap.LIDPermissive,
			want: encap.GID{
				0x20, 0x01, 0x0D, 0xB8, 0x00, 0x00, 0x00, 0x01, // prefix 2001:db8:0:1::
				0x00, 0x06, 0x6A, 0x00, // OUI, 00
				0xFF, 0xFF, 0xFF, 0xFF, // LID 0xFFFFFFFF
			},
			str: "2001:db8:0:1:6:6a00:ffff:ffff",
		},
		{
			name: "fe80-0xEFFFFF", prefix: encap.DefaultSubnetPrefix, lid: 0xEFFFFF,
			want: encap.GID{
				0xFE, 0x80, 0, 0, 0, 0, 0, 0,
				0x00, 0x06, 0x6A, 0x00,
				0x00, 0xEF, 0xFF, 0xFF,
			},
			str: "fe80::6:6a00:ef:ffff",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := encap.SpecialGID(tc.prefix, tc.lid)
			if g != tc.want {
				t.Errorf("SpecialGID = % x, want % x", g[:], tc.want[:])
			}
			if !g.IsOPA() || g.LID() != tc.lid || g.Prefix() != tc.prefix ||
				g.InterfaceID() != 0x00066A0000000000|uint64(tc.lid) {
				t.Errorf("IsOPA %v LID %v prefix %#x iid %#x", g.IsOPA(), g.LID(), g.Prefix(), g.InterfaceID())
			}
			if g.String() != tc.str {
				t.Errorf("String = %q, want %q", g.String(), tc.str)
			}
		})
	}
	for _, tc := range []struct {
		name string
		iid  [8]byte
		opa  bool
		lid  encap.LID
	}{
		{"port-GUID", [8]byte{0x02, 0x11, 0x75, 0x01, 0x01, 0x79, 0xA2, 0xB0}, false, 0},
		{"zero", [8]byte{}, false, 0},
		{"OUI-off-by-one", [8]byte{0x00, 0x06, 0x6B, 0x00, 0x00, 0x00, 0xC0, 0x00}, false, 0},
		{"OUI-shifted", [8]byte{0x06, 0x6A, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x00}, false, 0},
		{"OUI-high-byte", [8]byte{0x01, 0x06, 0x6A, 0x00, 0x00, 0x00, 0xC0, 0x00}, false, 0},
		// Only the top 24 bits decide; the LID is the low 32 bits.
		{"OUI-byte-3-set", [8]byte{0x00, 0x06, 0x6A, 0x5A, 0x00, 0x00, 0xC0, 0x01}, true, 0xC001},
		{"OUI-LID-0", [8]byte{0x00, 0x06, 0x6A, 0x00, 0x00, 0x00, 0x00, 0x00}, true, 0},
	} {
		var g encap.GID
		copy(g[:8], []byte{0xFE, 0x80})
		copy(g[8:], tc.iid[:])
		if g.IsOPA() != tc.opa || g.LID() != tc.lid {
			t.Errorf("%s: IsOPA %v LID %v; want %v %v", tc.name, g.IsOPA(), g.LID(), tc.opa, tc.lid)
		}
	}
}

// TestSubnetPrefix parses and formats GID subnet prefixes: an IPv6 address
// whose interface half is zero, with or without "/64".
func TestSubnetPrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string // a part of the error; "" for none
	}{
		{"fe80::", encap.DefaultSubnetPrefix, ""},
		{"fe80::/64", encap.DefaultSubnetPrefix, ""},
		{"fec0:0:0:1::", 0xFEC0000000000001, ""},
		{"2001:db8:ffff:ffff::/64", 0x20010DB8FFFFFFFF, ""},
		{"::", 0, ""},
		{"fe80::1", 0, "interface ID half"},
		{"fe80::1/64", 0, "interface ID half"},
		{"fe80::/48", 0, "must be 64"},
		{"fe80::/128", 0, "must be 64"},
		{"fe80::%eth0", 0, "not an IPv6 prefix"},
		{"10.0.0.0", 0, "not an IPv6 prefix"},
		{"::ffff:10.0.0.0", 0, "not an IPv6 prefix"},
		{"10.0.0.0/64", 0, "not an IPv6 prefix"},
		{"", 0, "not an IPv6 prefix"},
		{"fe80::/", 0, "not an IPv6 prefix"},
		{"fe80::/x", 0, "not an IPv6 prefix"},
		{"nope", 0, "not an IPv6 prefix"},
	} {
		got, err := encap.ParseSubnetPrefix(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSubnetPrefix(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSubnetPrefix(%q) = %#x, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
	// Formatting gives back what parsing takes, for any prefix.
	r := rand.New(rand.NewPCG(5, 7))
	for _, p := range []uint64{0, encap.DefaultSubnetPrefix, 0xFEC0000000000001, ^uint64(0), r.Uint64(), r.Uint64()} {
		s := encap.FormatSubnetPrefix(p)
		if got, err := encap.ParseSubnetPrefix(s); err != nil || got != p {
			t.Errorf("%#x: formatted %q, parsed back %#x, %v", p, s, got, err)
		}
	}
	if s := encap.FormatSubnetPrefix(encap.DefaultSubnetPrefix); s != "fe80::" {
		t.Errorf("FormatSubnetPrefix(default) = %q, want fe80::", s)
	}
}

func TestPKeyVESWID(t *testing.T) {
	for _, tc := range []struct {
		p     encap.PKey
		base  encap.PKey
		valid bool
		str   string
	}{
		{0, 0, false, "0x0000"}, {0x8000, 0, false, "0x8000"}, {0x7FFF, 0x7FFF, true, "0x7FFF"},
		{0xFFFF, 0x7FFF, true, "0xFFFF"}, {0x8001, 1, true, "0x8001"}, {0x0001, 1, true, "0x0001"},
	} {
		if tc.p.Base() != tc.base || tc.p.IsValid() != tc.valid || tc.p.String() != tc.str {
			t.Errorf("PKey %#x: base %#x valid %v %q", uint16(tc.p), tc.p.Base(), tc.p.IsValid(), tc.p.String())
		}
	}
	if encap.PKeyDefault != 0xFFFF || encap.PKeyLimited != 0x7FFF {
		t.Errorf("PKey constants")
	}
	for _, tc := range []struct {
		v     encap.VESWID
		valid bool
	}{{0, false}, {1, true}, {0xFFF, true}, {0x1000, false}, {0xFFFF, false}} {
		if tc.v.IsValid() != tc.valid {
			t.Errorf("VESWID %#x: IsValid %v", uint16(tc.v), tc.v.IsValid())
		}
	}
}

func TestLIDAndGUIDText(t *testing.T) {
	b, _ := encap.LID(0xC000).MarshalText()
	var l encap.LID
	if string(b) != "0xC000" || l.UnmarshalText(b) != nil || l != 0xC000 {
		t.Fatalf("LID text round trip: %q -> %v", b, l)
	}
	if l.UnmarshalText([]byte("x")) == nil {
		t.Fatal("bad LID text accepted")
	}
	if g, _ := encap.GUID(0x66a01).MarshalText(); string(g) != "0x0000000000066a01" {
		t.Fatalf("GUID text %q", g)
	}
}
