package vema

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Run one target at a time on the shared machine, for example
//
//	go test -run='^$' -fuzz='^FuzzSMP$' -fuzztime=60s -parallel 1 -fuzzminimizetime=3s ./vema
//
// The list decoders (VESWPortMACEntries, IfaceMACs) and SMP take inputs up to
// 2 KiB; without a short -fuzzminimizetime the fuzzer spends most of its time
// minimizing each new input. Crashers land in testdata/fuzz/ and stay there
// as regression inputs.

// fuzzDecoder is the property every decoder holds for any input: it either
// fails with one of the package's errors, or what it decoded encodes back to
// the bytes it read and decodes again to the same value. It is seeded with the
// named golden vectors and a few edge inputs.
func fuzzDecoder[T any, P interface {
	*T
	codec
}](f *testing.F, seeds ...string) {
	byName := map[string]golden{}
	for _, g := range goldens() {
		byName[g.name] = g
	}
	for _, s := range seeds {
		g, ok := byName[s]
		if !ok {
			f.Fatalf("no golden %q", s)
		}
		f.Add(g.want)
		f.Add(append(bytes.Clone(g.want), 0xFF, 0x00))
		if len(g.want) > 0 {
			f.Add(g.want[:len(g.want)-1])
		}
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xFF}, MADSize))
	f.Add(make([]byte, MADSize+8))
	f.Fuzz(func(t *testing.T, b []byte) {
		x := P(new(T))
		if err := x.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrTooLong) && !errors.Is(err, ErrTooManyEntries) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out, err := x.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		if len(out) > len(b) || !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("re-encoding changed the bytes\n in %x\nout %x", b, out)
		}
		y := P(new(T))
		if err := y.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-encoded bytes do not decode: %v", err)
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("decode(encode(x)) != x\n got %+v\nwant %+v", y, x)
		}
	})
}

func FuzzMADHeader(f *testing.F)    { fuzzDecoder[MADHeader](f, "MADHeader") }
func FuzzRMPPHeader(f *testing.F)   { fuzzDecoder[RMPPHeader](f, "RMPPHeader") }
func FuzzVendorHeader(f *testing.F) { fuzzDecoder[VendorHeader](f, "VendorHeader") }
func FuzzMAD(f *testing.F)          { fuzzDecoder[MAD](f, "MAD") }
func FuzzTrapMAD(f *testing.F)      { fuzzDecoder[TrapMAD](f, "TrapMAD") }
func FuzzNotice(f *testing.F)       { fuzzDecoder[Notice](f, "Notice") }
func FuzzVESWPortTrap(f *testing.F) { fuzzDecoder[VESWPortTrap](f, "VESWPortTrap") }
func FuzzClassPortInfo(f *testing.F) {
	fuzzDecoder[ClassPortInfo](f, "ClassPortInfo")
}
func FuzzVESWInfo(f *testing.F) { fuzzDecoder[VESWInfo](f, "VESWInfo") }
func FuzzPerVESWPortInfo(f *testing.F) {
	fuzzDecoder[PerVESWPortInfo](f, "PerVESWPortInfo")
}
func FuzzVESWPortInfo(f *testing.F)   { fuzzDecoder[VESWPortInfo](f, "VESWPortInfo") }
func FuzzMACTableHeader(f *testing.F) { fuzzDecoder[MACTableHeader](f, "MACTableHeader") }
func FuzzMACTableEntry(f *testing.F)  { fuzzDecoder[MACTableEntry](f, "MACTableEntry") }
func FuzzVESWPortMACEntries(f *testing.F) {
	fuzzDecoder[VESWPortMACEntries](f, "VESWPortMACEntries", "MACTableHeader")
}
func FuzzIfaceMACsHeader(f *testing.F) { fuzzDecoder[IfaceMACsHeader](f, "IfaceMACsHeader") }
func FuzzIfaceMACs(f *testing.F)       { fuzzDecoder[IfaceMACs](f, "IfaceMACs", "IfaceMACsHeader") }
func FuzzSummaryCounters(f *testing.F) {
	fuzzDecoder[SummaryCounters](f, "SummaryCounters")
}
func FuzzErrorCounters(f *testing.F) { fuzzDecoder[ErrorCounters](f, "ErrorCounters") }
func FuzzSMPHeader(f *testing.F)     { fuzzDecoder[SMPHeader](f, "SMPHeader") }
func FuzzSMP(f *testing.F)           { fuzzDecoder[SMP](f, "SMP/LID", "SMP/DR", "SMPHeader") }
func FuzzNodeInfo(f *testing.F)      { fuzzDecoder[NodeInfo](f, "NodeInfo") }
func FuzzNodeDescription(f *testing.F) {
	fuzzDecoder[NodeDescription](f, "NodeDescription")
}
func FuzzPortInfo(f *testing.F)     { fuzzDecoder[PortInfo](f, "PortInfo") }
func FuzzSMPNotice(f *testing.F)    { fuzzDecoder[SMPNotice](f, "SMPNotice") }
func FuzzSAHeader(f *testing.F)     { fuzzDecoder[SAHeader](f, "SAHeader") }
func FuzzSAMAD(f *testing.F)        { fuzzDecoder[SAMAD](f, "SAMAD", "SAHeader") }
func FuzzPathRecord(f *testing.F)   { fuzzDecoder[PathRecord](f, "PathRecord") }
func FuzzIBPathRecord(f *testing.F) { fuzzDecoder[IBPathRecord](f, "IBPathRecord") }
