package encap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// Byte-level editors that follow docs/wire.md §2 directly (they do not use the
// package's setters), so a mutated packet is what the spec says it is.

func setLEN(pkt []byte, qws uint32) {
	w := binary.LittleEndian.Uint32(pkt[0:])
	binary.LittleEndian.PutUint32(pkt[0:], w&^(0x7FF<<20)|(qws&0x7FF)<<20)
}

func setL2(pkt []byte, l2 uint32) {
	w := binary.LittleEndian.Uint32(pkt[4:])
	binary.LittleEndian.PutUint32(pkt[4:], w&^(3<<29)|(l2&3)<<29)
}

func setL4(pkt []byte, l4 byte) { pkt[8] = l4 }

func setTail(pkt []byte, tail byte) { pkt[len(pkt)-1] = tail }

// goldenVNIC returns a fresh copy of the minimum-size golden VNIC packet
// (pad 3, 88 bytes) and goldenMgmt of the 256-byte GSI packet (288 bytes).
func goldenVNIC() []byte {
	for _, v := range vnicVectors() {
		if v.name == "pad3/frame60-minimum" {
			return v.wirePacket()
		}
	}
	panic("no pad3 vector")
}

func goldenMgmt() []byte {
	v := mgmtVectors()[0]
	return v.wirePacket()
}

// tiny builds a hand-made packet of n bytes (n a multiple of 8, >= 24) with
// LEN = n/8, L2 = 2, the given L4 and tail, everything else 0, and a good
// ICRC.
func tiny(n int, l4, tail byte) []byte {
	pkt := make([]byte, n)
	setLEN(pkt, uint32(n/8))
	setL2(pkt, 2)
	setL4(pkt, l4)
	setTail(pkt, tail)
	storeRefICRC(pkt)
	return pkt
}

// variantBit reports whether header bit g (QW g/64, bit g%64) is one of the
// fields docs/wire.md §5 counts as ones: BECN (QW0 31), SC (QW0 52-56), FECN
// (QW0 60), Age (QW1 48-55).
func variantBit(g int) bool {
	return g == 31 || (g >= 52 && g <= 56) || g == 60 || (g >= 64+48 && g <= 64+55)
}

func TestICRCMatchesReference(t *testing.T) {
	for _, v := range vnicVectors() {
		pkt := v.wirePacket()
		if got, want := encap.ICRC(pkt), refICRC(pkt); got != want {
			t.Errorf("%s: ICRC %#08x, want %#08x", v.name, got, want)
		}
		if !encap.CheckICRC(pkt) {
			t.Errorf("%s: CheckICRC false", v.name)
		}
	}
	for _, v := range mgmtVectors() {
		pkt := v.wirePacket()
		if got, want := encap.ICRC(pkt), refICRC(pkt); got != want {
			t.Errorf("%s: ICRC %#08x, want %#08x", v.name, got, want)
		}
	}
}

// TestICRCVariantBits flips each of the 128 header bits in turn: the ICRC
// must not change for BECN, SC, FECN and Age (a switch may rewrite them) and
// must change for every other bit.
func TestICRCVariantBits(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkt  []byte
	}{{"vnic", goldenVNIC()}, {"mgmt", goldenMgmt()}} {
		t.Run(tc.name, func(t *testing.T) {
			orig := encap.ICRC(tc.pkt)
			nVariant := 0
			for g := range 128 {
				c := bytes.Clone(tc.pkt)
				c[g/8] ^= 1 << (g % 8)
				got := encap.ICRC(c)
				if ref := refICRC(c); got != ref {
					t.Errorf("bit %d flipped: ICRC %#08x, reference %#08x", g, got, ref)
				}
				switch {
				case variantBit(g):
					nVariant++
					if got != orig {
						t.Errorf("flipping variant bit %d changed the ICRC", g)
					}
					if !encap.CheckICRC(c) {
						t.Errorf("flipping variant bit %d fails CheckICRC", g)
					}
				case got == orig:
					t.Errorf("flipping bit %d did not change the ICRC", g)
				}
				if tc.name != "vnic" {
					continue
				}
				// What a receiver makes of it: variant bits pass, LEN and L2
				// bits fail their own checks, anything else fails the ICRC.
				_, _, _, err := encap.DecapVNIC(c)
				var want error
				switch {
				case variantBit(g):
				case g >= 20 && g <= 30:
					want = encap.ErrLength
				case g == 61 || g == 62:
					want = encap.ErrL2
				default:
					want = encap.ErrICRC
				}
				if !errors.Is(err, want) {
					t.Errorf("bit %d flipped: DecapVNIC err %v, want %v", g, err, want)
				}
			}
			if nVariant != 1+5+1+8 {
				t.Errorf("%d variant bits, want 15", nVariant)
			}
		})
	}
}

func TestICRCVariantFieldsInFlight(t *testing.T) {
	// A switch raises BECN and FECN, rewrites SC and ages the packet: the
	// packet still checks.
	pkt := goldenVNIC()
	h := encap.Header16B(pkt)
	h.SetBECN(true)
	h.SetFECN(true)
	h.SetSC(0x0A)
	h.SetAge(0x33)
	if !encap.CheckICRC(pkt) {
		t.Fatal("CheckICRC false after in-flight changes")
	}
	if _, h2, _, err := encap.DecapVNIC(pkt); err != nil || h2.SC() != 0x0A || !h2.BECN() || !h2.FECN() || h2.Age() != 0x33 {
		t.Fatalf("DecapVNIC after in-flight changes: %v", err)
	}
}

func TestICRCCoversBodyNotTrailer(t *testing.T) {
	pkt := goldenVNIC()
	orig := encap.ICRC(pkt)
	n := len(pkt)
	// Every byte after the header up to the ICRC counts, pad included.
	for i := 16; i < n-5; i++ {
		c := bytes.Clone(pkt)
		c[i] ^= 0x01
		if encap.ICRC(c) == orig {
			t.Errorf("byte %d not covered", i)
		}
	}
	// The ICRC and tail bytes are not read.
	for i := n - 5; i < n; i++ {
		c := bytes.Clone(pkt)
		c[i] ^= 0xFF
		if encap.ICRC(c) != orig {
			t.Errorf("byte %d (trailer) changed the ICRC", i)
		}
	}
	// ICRC stored little-endian in the 4 bytes before the tail.
	if got := uint32(pkt[n-5]) | uint32(pkt[n-4])<<8 | uint32(pkt[n-3])<<16 | uint32(pkt[n-2])<<24; got != orig {
		t.Errorf("stored %#08x, computed %#08x", got, orig)
	}
}

// TestDecapVNICErrors takes each sentinel of docs/wire.md §7 in order. Cases named
// "...+later" break a later check too, to show the earlier one is reported.
func TestDecapVNICErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkt  func() []byte
		want error
	}{
		{"short/nil", func() []byte { return nil }, encap.ErrShort},
		{"short/empty", func() []byte { return []byte{} }, encap.ErrShort},
		{"short/16", func() []byte { return goldenVNIC()[:16] }, encap.ErrShort},
		{"short/23", func() []byte { return goldenVNIC()[:23] }, encap.ErrShort},
		{"short/23+later", func() []byte { p := goldenVNIC()[:23]; setL2(p, 0); setL4(p, 0); return p }, encap.ErrShort},
		{"length/LEN0", func() []byte { p := goldenVNIC(); setLEN(p, 0); return p }, encap.ErrLength},
		{"length/truncated-80", func() []byte { return goldenVNIC()[:80] }, encap.ErrLength},
		{"length/87", func() []byte { return goldenVNIC()[:87] }, encap.ErrLength},
		{"length/24-of-88", func() []byte { return goldenVNIC()[:24] }, encap.ErrLength},
		{"length/8-extra", func() []byte { return append(goldenVNIC(), make([]byte, 8)...) }, encap.ErrLength},
		{"length/LEN12-on-88", func() []byte { p := goldenVNIC(); setLEN(p, 12); return p }, encap.ErrLength},
		{"length/LEN2047-on-88+later", func() []byte {
			p := goldenVNIC()
			setLEN(p, 2047)
			setL2(p, 1)
			setL4(p, 0)
			return p
		}, encap.ErrLength},
		{"L2/0", func() []byte { p := goldenVNIC(); setL2(p, 0); storeRefICRC(p); return p }, encap.ErrL2},
		{"L2/1-9B", func() []byte { p := goldenVNIC(); setL2(p, 1); storeRefICRC(p); return p }, encap.ErrL2},
		{"L2/3", func() []byte { p := goldenVNIC(); setL2(p, 3); storeRefICRC(p); return p }, encap.ErrL2},
		{"L2/1+later", func() []byte { p := goldenVNIC(); setL2(p, 1); setL4(p, 0); setTail(p, 0x47); return p }, encap.ErrL2},
		{"ICRC/frame-byte", func() []byte { p := goldenVNIC(); p[40] ^= 0x80; return p }, encap.ErrICRC},
		{"ICRC/pad-byte", func() []byte { p := goldenVNIC(); p[81] = 1; return p }, encap.ErrICRC},
		{"ICRC/vesw-byte", func() []byte { p := goldenVNIC(); p[18] ^= 1; return p }, encap.ErrICRC},
		{"ICRC/reserved-byte-16", func() []byte { p := goldenVNIC(); p[16] ^= 1; return p }, encap.ErrICRC},
		{"ICRC/stored-value", func() []byte { p := goldenVNIC(); p[len(p)-3] ^= 0x10; return p }, encap.ErrICRC},
		{"ICRC/PKEY-bit", func() []byte { p := goldenVNIC(); p[10] ^= 0x02; return p }, encap.ErrICRC},
		{"ICRC/zero", func() []byte { p := goldenVNIC(); copy(p[len(p)-5:], []byte{0, 0, 0, 0}); return p }, encap.ErrICRC},
		{"ICRC+later", func() []byte { p := goldenVNIC(); setL4(p, 0x08); return p }, encap.ErrICRC},
		{"L4/0x08-mgmt", func() []byte { p := goldenVNIC(); setL4(p, 0x08); storeRefICRC(p); return p }, encap.ErrL4},
		{"L4/0x00-9B", func() []byte { p := goldenVNIC(); setL4(p, 0x00); storeRefICRC(p); return p }, encap.ErrL4},
		{"L4/0x79", func() []byte { p := goldenVNIC(); setL4(p, 0x79); storeRefICRC(p); return p }, encap.ErrL4},
		{"L4/0x08+later", func() []byte { return tiny(24, 0x08, 0x47) }, encap.ErrL4},
		{"L4/real-mgmt-packet", goldenMgmt, encap.ErrL4},
		{"tail/24-pad0", func() []byte { return tiny(24, 0x78, 0x40) }, encap.ErrTail},
		{"tail/24-pad7", func() []byte { return tiny(24, 0x78, 0x47) }, encap.ErrTail},
		{"tail/24-LT0", func() []byte { return tiny(24, 0x78, 0x00) }, encap.ErrTail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, h, vesw, err := encap.DecapVNIC(tc.pkt())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if frame != nil || h != nil || vesw != 0 {
				t.Errorf("failed decap returned frame %d bytes, header %v, vesw %d", len(frame), h, vesw)
			}
		})
	}
}

// TestDecapVNICAccepts covers packets a receiver takes although they are not
// what EncapVNIC writes.
func TestDecapVNICAccepts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pkt      func() []byte
		frameLen int
		vesw     encap.VESWID
	}{
		{"golden", goldenVNIC, 60, 1},
		// docs/wire.md §3: receivers do not reject a tail byte whose LT bits are 0.
		{"tail-LT0", func() []byte { p := goldenVNIC(); setTail(p, 0x03); return p }, 60, 1},
		// Only tail & 7 counts.
		{"tail-high-bits", func() []byte { p := goldenVNIC(); setTail(p, 0xFB); return p }, 60, 1},
		// A pad count that disagrees with the sender's still frames the
		// packet; the port's runt check (docs/linux-compat.md §3) drops it.
		{"tail-pad7-on-pad3", func() []byte { p := goldenVNIC(); setTail(p, 0x47); return p }, 56, 1},
		{"tail-pad0-on-pad3", func() []byte { p := goldenVNIC(); setTail(p, 0x40); return p }, 63, 1},
		// 32 bytes with pad 7 leaves an empty frame, not an error.
		{"32-bytes-empty-frame", func() []byte { return tiny(32, 0x78, 0x47) }, 0, 0},
		{"32-bytes-pad0", func() []byte { return tiny(32, 0x78, 0x40) }, 7, 0},
		// vesw_id: a receiver uses the low 12 bits.
		{"vesw-high-bits", func() []byte { p := goldenVNIC(); p[18], p[19] = 0x34, 0xF2; storeRefICRC(p); return p }, 60, 0x234},
		// LT in lrh1 is not checked.
		{"LT0", func() []byte { p := goldenVNIC(); p[7] &^= 0x80; storeRefICRC(p); return p }, 60, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := tc.pkt()
			frame, h, vesw, err := encap.DecapVNIC(pkt)
			if err != nil {
				t.Fatalf("DecapVNIC: %v", err)
			}
			if len(frame) != tc.frameLen || vesw != tc.vesw {
				t.Errorf("frame %d bytes, vesw %#x; want %d, %#x", len(frame), vesw, tc.frameLen, tc.vesw)
			}
			if !bytes.Equal(frame, pkt[20:20+tc.frameLen]) || len(h) != 16 {
				t.Errorf("frame is not pkt[20:%d]", 20+tc.frameLen)
			}
		})
	}
}

func TestParseMgmtErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkt  func() []byte
		want error
	}{
		{"short/23", func() []byte { return goldenMgmt()[:23] }, encap.ErrShort},
		{"length/280", func() []byte { return goldenMgmt()[:280] }, encap.ErrLength},
		{"length/LEN35", func() []byte { p := goldenMgmt(); setLEN(p, 35); return p }, encap.ErrLength},
		{"L2/1", func() []byte { p := goldenMgmt(); setL2(p, 1); storeRefICRC(p); return p }, encap.ErrL2},
		{"L2/0+later", func() []byte { p := goldenMgmt(); setL2(p, 0); setL4(p, 0x78); return p }, encap.ErrL2},
		{"ICRC/MAD-byte", func() []byte { p := goldenMgmt(); p[100] ^= 4; return p }, encap.ErrICRC},
		{"ICRC/QPN-byte", func() []byte { p := goldenMgmt(); p[19] ^= 1; return p }, encap.ErrICRC},
		{"ICRC+later", func() []byte { p := goldenMgmt(); setL4(p, 0x78); return p }, encap.ErrICRC},
		{"L4/0x78", func() []byte { p := goldenMgmt(); setL4(p, 0x78); storeRefICRC(p); return p }, encap.ErrL4},
		{"L4/0x09", func() []byte { p := goldenMgmt(); setL4(p, 0x09); storeRefICRC(p); return p }, encap.ErrL4},
		{"L4/vnic-packet", goldenVNIC, encap.ErrL4},
		{"L4+later", func() []byte { return tiny(24, 0x78, 0x40) }, encap.ErrL4},
		{"tail/pad0", func() []byte { p := goldenMgmt(); setTail(p, 0x40); return p }, encap.ErrTail},
		{"tail/pad7", func() []byte { p := goldenMgmt(); setTail(p, 0x47); return p }, encap.ErrTail},
		{"tail/24-bytes-pad3", func() []byte { return tiny(24, 0x08, 0x43) }, encap.ErrTail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := encap.ParseMgmt(tc.pkt())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if m.Header != nil || m.MAD != nil || m.DestQPN != 0 || m.SrcQPN != 0 {
				t.Errorf("failed parse returned %+v", m)
			}
		})
	}
	// Accepted: tail LT bits 0, and the smallest packet (empty MAD).
	p := goldenMgmt()
	setTail(p, 0x03)
	if m, err := encap.ParseMgmt(p); err != nil || len(m.MAD) != 256 {
		t.Errorf("tail 0x03: %v", err)
	}
	if m, err := encap.ParseMgmt(tiny(32, 0x08, 0x43)); err != nil || len(m.MAD) != 0 {
		t.Errorf("32-byte packet: %v, MAD %d bytes", err, len(m.MAD))
	}
	// QPNs: the reserved top byte is ignored.
	p = goldenMgmt()
	p[16], p[20] = 0xFF, 0x80
	storeRefICRC(p)
	if m, err := encap.ParseMgmt(p); err != nil || m.DestQPN != 1 || m.SrcQPN != 0xABCDEF {
		t.Errorf("QPN top byte: %+v %v", m, err)
	}
}

func TestParse(t *testing.T) {
	// Parse checks framing only: L4 is left to DecapVNIC and ParseMgmt.
	for _, pkt := range [][]byte{goldenVNIC(), goldenMgmt(), tiny(24, 0x42, 0)} {
		h, err := encap.Parse(pkt, true)
		if err != nil {
			t.Fatalf("Parse(L4 %#x): %v", pkt[8], err)
		}
		if len(h) != 16 || &h[0] != &pkt[0] {
			t.Errorf("header view is not pkt[:16]")
		}
	}
	// With verify false a bad ICRC passes; with verify true it does not.
	pkt := goldenVNIC()
	pkt[50] ^= 1
	if _, err := encap.Parse(pkt, false); err != nil {
		t.Errorf("Parse(verify=false) on bad ICRC: %v", err)
	}
	if _, err := encap.Parse(pkt, true); !errors.Is(err, encap.ErrICRC) {
		t.Errorf("Parse(verify=true) on bad ICRC: %v", err)
	}
	// The other checks hold with verify false.
	pkt = goldenVNIC()
	setL2(pkt, 1)
	if _, err := encap.Parse(pkt, false); !errors.Is(err, encap.ErrL2) {
		t.Errorf("Parse(verify=false) on L2 1: %v", err)
	}
	if _, err := encap.Parse(goldenVNIC()[:80], false); !errors.Is(err, encap.ErrLength) {
		t.Errorf("Parse(verify=false) on short datagram: %v", err)
	}
	if _, err := encap.Parse(make([]byte, 10), false); !errors.Is(err, encap.ErrShort) {
		t.Errorf("Parse(10 bytes): %v", err)
	}
}

func TestSentinelsDistinct(t *testing.T) {
	errs := []error{encap.ErrShort, encap.ErrLength, encap.ErrL2, encap.ErrICRC, encap.ErrL4,
		encap.ErrTail, encap.ErrNoHeadroom, encap.ErrNoTailroom, encap.ErrFrameTooLong,
		encap.ErrMADLength, encap.ErrBadLID}
	for i, a := range errs {
		if len(a.Error()) < 7 || a.Error()[:7] != "encap: " {
			t.Errorf("%q lacks the package prefix", a)
		}
		for j, b := range errs {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v is %v", a, b)
			}
		}
	}
}
