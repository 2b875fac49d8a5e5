package vema

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestGolden checks every hand-written vector both ways: the value encodes to
// exactly the bytes, AppendBinary keeps what is already in the buffer, the
// bytes decode to the value, and a fixed-size decoder ignores what follows.
func TestGolden(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			got, err := g.val.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary: %v", err)
			}
			if !bytes.Equal(got, g.want) {
				t.Fatalf("MarshalBinary mismatch\n got %x\nwant %x\nfirst difference at byte %d",
					got, g.want, firstDiff(got, g.want))
			}
			prefix := []byte{0xDE, 0xAD}
			app, err := g.val.AppendBinary(bytes.Clone(prefix))
			if err != nil || !bytes.Equal(app[:2], prefix) || !bytes.Equal(app[2:], g.want) {
				t.Fatalf("AppendBinary onto a prefix: %x, %v", app, err)
			}
			dec := g.zero()
			if err := dec.UnmarshalBinary(g.want); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			if !reflect.DeepEqual(dec, g.val) {
				t.Fatalf("UnmarshalBinary mismatch\n got %+v\nwant %+v", dec, g.val)
			}
			if g.variable {
				return
			}
			dec = g.zero()
			if err := dec.UnmarshalBinary(append(bytes.Clone(g.want), 0x5A, 0xA5, 0xFF)); err != nil {
				t.Fatalf("UnmarshalBinary with trailing bytes: %v", err)
			}
			if !reflect.DeepEqual(dec, g.val) {
				t.Fatalf("trailing bytes changed the value: %+v", dec)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSizes pins each fixed encoded size to the kernel's struct size.
func TestSizes(t *testing.T) {
	sizes := map[string]int{
		"MADHeader": 24, "RMPPHeader": 12, "VendorHeader": 40, "MAD": 2048, "TrapMAD": 272,
		"VESWPortTrap": 16, "Notice": 96, "ClassPortInfo": 80, "VESWInfo": 152,
		"PerVESWPortInfo": 128, "VESWPortInfo": 280, "MACTableHeader": 8, "MACTableEntry": 16,
		"IfaceMACsHeader": 8, "SummaryCounters": 360, "ErrorCounters": 304, "SMPHeader": 32,
		"NodeInfo": 44, "NodeDescription": 64, "PortInfo": 242, "SMPNotice": 96, "SAHeader": 56,
		"PathRecord": 64, "IBPathRecord": 64,
	}
	for _, g := range goldens() {
		want, ok := sizes[g.name]
		if !ok {
			continue
		}
		b, err := g.zero().MarshalBinary()
		if err != nil || len(b) != want {
			t.Errorf("%s: zero value encodes to %d bytes (%v), want %d", g.name, len(b), err, want)
		}
	}
	if VEMADataLen != 2008 || TrapMADLen != 272 || SADataLen != 1992 || drRouteLen != 144 ||
		MaxMACEntriesPerMAD != 125 || MaxIfaceMACsPerMAD != 333 {
		t.Error("derived size constants changed")
	}
}

// minLen is the shortest input a golden's decoder accepts.
func minLen(g golden) int {
	switch v := g.val.(type) {
	case *SMP:
		return v.HeaderLen()
	case *SAMAD:
		return SAHeaderLen
	}
	return len(g.want)
}

// TestShortInput truncates every golden vector at every length below what
// its decoder needs: the error wraps io.ErrUnexpectedEOF and ErrShort, and the
// receiver keeps its previous value.
func TestShortInput(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			for n := range minLen(g) {
				dec := g.zero()
				if err := dec.UnmarshalBinary(g.want); err != nil {
					t.Fatal(err)
				}
				err := dec.UnmarshalBinary(g.want[:n])
				if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrShort) {
					t.Fatalf("%d bytes: err = %v, want io.ErrUnexpectedEOF", n, err)
				}
				if !reflect.DeepEqual(dec, g.val) {
					t.Fatalf("%d bytes: failed decode changed the receiver", n)
				}
			}
		})
	}
}

// randomFill sets every settable field of v to random bits (integers are
// truncated to their width); slices are left to fixup.
func randomFill(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64())
	case reflect.Array:
		for i := range v.Len() {
			randomFill(v.Index(i), r)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			randomFill(v.Field(i), r)
		}
	}
}

func randomBytes(r *rand.Rand, n int) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fixup makes a random value encodable: counts match their lists, bit
// fields fit, an LID-routed SMP has no DR part.
func fixup(c codec, r *rand.Rand) {
	switch v := c.(type) {
	case *VESWPortMACEntries:
		v.Entries = make([]MACTableEntry, r.IntN(MaxMACEntriesPerMAD+1))
		for i := range v.Entries {
			randomFill(reflect.ValueOf(&v.Entries[i]).Elem(), r)
		}
		v.NumEntries = uint16(len(v.Entries))
		if len(v.Entries) == 0 {
			v.Entries = nil
		}
	case *IfaceMACs:
		v.MACs = make([][6]byte, r.IntN(MaxIfaceMACsPerMAD+1))
		for i := range v.MACs {
			randomFill(reflect.ValueOf(&v.MACs[i]).Elem(), r)
		}
		v.NumMACsInMsg = uint16(len(v.MACs))
		if len(v.MACs) == 0 {
			v.MACs = nil
		}
	case *SMP:
		if r.IntN(2) == 0 {
			v.MgmtClass, v.DR = ClassSubnLIDRouted, DRRoute{}
		} else {
			v.MgmtClass = ClassSubnDirectedRoute
		}
		v.Data = randomBytes(r, r.IntN(v.MaxDataLen()+1))
	case *SAMAD:
		v.Data = randomBytes(r, r.IntN(SADataLen+1))
	case *PathRecord:
		v.Reserved48 &= 7
		v.FlowLabel &= 0xFFFFF
		v.NumbPath &= 0x7F
		v.Reserved56 &= 3
		v.QOSType &= 3
		v.Reserved58 &= 7
		v.SL &= 0x1F
		v.MTUSelector, v.MTU = v.MTUSelector&3, v.MTU&0x3F
		v.RateSelector, v.Rate = v.RateSelector&3, v.Rate&0x3F
		v.PacketLifeTimeSelector, v.PacketLifeTime = v.PacketLifeTimeSelector&3, v.PacketLifeTime&0x3F
	case *IBPathRecord:
		v.Reserved44 &= 7
		v.FlowLabel &= 0xFFFFF
		v.NumbPath &= 0x7F
		v.QOSClass &= 0xFFF
		v.SL &= 0xF
		v.MTUSelector, v.MTU = v.MTUSelector&3, v.MTU&0x3F
		v.RateSelector, v.Rate = v.RateSelector&3, v.Rate&0x3F
		v.PacketLifeTimeSelector, v.PacketLifeTime = v.PacketLifeTimeSelector&3, v.PacketLifeTime&0x3F
	default:
		fixupSwitch(c, r)
	}
}

// TestRoundTripValues checks Unmarshal(Marshal(x)) == x for random values of
// every type.
func TestRoundTripValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			for range 200 {
				x := g.zero()
				randomFill(reflect.ValueOf(x).Elem(), r)
				fixup(x, r)
				b, err := x.MarshalBinary()
				if err != nil {
					t.Fatalf("MarshalBinary(%+v): %v", x, err)
				}
				y := g.zero()
				if err := y.UnmarshalBinary(b); err != nil {
					t.Fatalf("UnmarshalBinary: %v", err)
				}
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("round trip changed the value\n got %+v\nwant %+v", y, x)
				}
			}
		})
	}
}

// randomWire returns random bytes a decoder accepts: the golden's length for
// a fixed type, a random length for SMP and SAMAD, a header with a count in
// range for the lists.
func randomWire(g golden, r *rand.Rand) []byte {
	switch g.val.(type) {
	case *SMP:
		b := randomBytes(r, SMPLIDHeaderLen)
		if r.IntN(2) == 0 {
			b[1] = byte(ClassSubnDirectedRoute)
			return append(b, randomBytes(r, drRouteLen+r.IntN(SMPDRDataLen+1))...)
		}
		if b[1] == byte(ClassSubnDirectedRoute) {
			b[1] = byte(ClassSubnLIDRouted)
		}
		return append(b, randomBytes(r, r.IntN(SMPLIDDataLen+1))...)
	case *SAMAD:
		return randomBytes(r, SAHeaderLen+r.IntN(SADataLen+1))
	case *VESWPortMACEntries:
		n := r.IntN(MaxMACEntriesPerMAD + 1)
		b := randomBytes(r, MACTableHeaderLen+MACTableEntryLen*n)
		b[2], b[3] = byte(n>>8), byte(n)
		return b
	case *IfaceMACs:
		n := r.IntN(MaxIfaceMACsPerMAD + 1)
		b := randomBytes(r, IfaceMACsHeaderLen+6*n)
		b[2], b[3] = byte(n>>8), byte(n)
		return b
	}
	if b := randomSwitchWire(g, r); b != nil {
		return b
	}
	return randomBytes(r, len(g.want))
}

// TestRoundTripBytes checks Marshal(Unmarshal(b)) == b for random wire bytes
// and for all-ones bytes: reserved bytes and bits survive.
func TestRoundTripBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			inputs := [][]byte{bytes.Repeat([]byte{0xFF}, minLen(g))}
			switch g.val.(type) {
			case *VESWPortMACEntries, *IfaceMACs, *AggregateSegment:
				inputs = nil // all-ones announces more entries or payload than it holds; see TestListLimits
			}
			for range 200 {
				inputs = append(inputs, randomWire(g, r))
			}
			for _, b := range inputs {
				x := g.zero()
				if err := x.UnmarshalBinary(b); err != nil {
					t.Fatalf("UnmarshalBinary(%x): %v", b, err)
				}
				out, err := x.MarshalBinary()
				if err != nil {
					t.Fatalf("MarshalBinary: %v", err)
				}
				if !bytes.Equal(out, b) {
					t.Fatalf("round trip changed the bytes at %d\n got %x\nwant %x", firstDiff(out, b), out, b)
				}
			}
		})
	}
}
