package vema

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzSwitchInfo(f *testing.F)    { fuzzDecoder[SwitchInfo](f, "SwitchInfo") }
func FuzzLFTBlock(f *testing.F)      { fuzzDecoder[LFTBlock](f, "LFTBlock") }
func FuzzMFTBlock(f *testing.F)      { fuzzDecoder[MFTBlock](f, "MFTBlock") }
func FuzzPortStateInfo(f *testing.F) { fuzzDecoder[PortStateInfo](f, "PortStateInfo") }
func FuzzAggregateHeader(f *testing.F) {
	fuzzDecoder[AggregateHeader](f, "AggregateHeader")
}
func FuzzAggregateSegment(f *testing.F) {
	fuzzDecoder[AggregateSegment](f, "AggregateSegment", "AggregateHeader")
}

// FuzzSplitAggregate: any data and count either fail with ErrRange or
// ErrShort, or give segments that encode back to the front of data.
func FuzzSplitAggregate(f *testing.F) {
	f.Add(goldenAggregateSegment().want, 1)
	f.Add(bytes.Repeat(goldenAggregateSegment().want, 3), 3)
	f.Add(make([]byte, SMPDRDataLen), 117)
	f.Add([]byte{0, 0, 0, 0x7F}, 1)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		segs, err := SplitAggregate(data, n)
		if err != nil {
			if !errors.Is(err, ErrRange) && !errors.Is(err, ErrShort) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		var out []byte
		for i := range segs {
			if out, err = segs[i].AppendBinary(out); err != nil {
				t.Fatalf("segment %d does not encode: %v", i, err)
			}
		}
		if !bytes.Equal(out, data[:len(out)]) {
			t.Fatalf("segments do not encode back to the data")
		}
	})
}

// FuzzAttrMod: every modifier parses and encodes back to itself.
func FuzzAttrMod(f *testing.F) {
	f.Add(uint32(0x01000205))
	f.Add(uint32(0x1DDFFFFF))
	f.Add(uint32(0xFFFFFFFF))
	f.Fuzz(func(t *testing.T, am uint32) {
		if got, err := ParsePortsAttrMod(am).Encode(); err != nil || got != am {
			t.Fatalf("ports %#x: %#x %v", am, got, err)
		}
		if got, err := ParseLFTAttrMod(am).Encode(); err != nil || got != am {
			t.Fatalf("LFT %#x: %#x %v", am, got, err)
		}
		if got, err := ParseMFTAttrMod(am).Encode(); err != nil || got != am {
			t.Fatalf("MFT %#x: %#x %v", am, got, err)
		}
	})
}

// FuzzDRStep runs DRRecv or DRSend on any decodable SMP at any node: no
// panic; a drop names a rule and leaves the SMP as it was; otherwise only
// HopPtr and (outbound, on receipt) ReturnPath[old HopPtr] change, HopPtr
// stays within the direction's range and a forward names a port of the node.
func FuzzDRStep(f *testing.F) {
	for _, g := range []golden{goldenSMPDR(), goldenSMPLID()} {
		f.Add(g.want, true, uint8(48), uint8(3), false)
	}
	w := drWire{hp: 1, hc: 2, slid: permissive, dlid: permissive, initPath: []byte{0, 1, 7}}
	f.Add(w.bytes(), true, uint8(24), uint8(3), false)
	w = drWire{method: 0x81, status: 0x8000, hp: 3, hc: 2, slid: permissive, dlid: permissive,
		initPath: []byte{0, 1, 7}, retPath: []byte{0, 3, 12}}
	f.Add(w.bytes(), true, uint8(48), uint8(0), true)
	f.Fuzz(func(t *testing.T, b []byte, isSwitch bool, numPorts, inPort uint8, send bool) {
		var s SMP
		if s.UnmarshalBinary(b) != nil {
			return
		}
		before := s
		before.Data = bytes.Clone(s.Data)
		n := DRNode{Switch: isSwitch, NumPorts: numPorts}
		var (
			act  DRAction
			port uint8
			err  error
		)
		if send {
			act, port, err = s.DRSend(n)
		} else {
			act, port, err = s.DRRecv(n, inPort)
		}
		if act == DRDrop {
			var r DRDropReason
			if !errors.As(err, &r) || port != 0 {
				t.Fatalf("drop with %v, port %d", err, port)
			}
			if !equalSMP(&s, &before) {
				t.Fatalf("a dropped SMP changed")
			}
			return
		}
		if err != nil {
			t.Fatalf("%v with an error %v", act, err)
		}
		if (act == DRForward) != (port != 0) || port > numPorts {
			t.Fatalf("%v with port %d of %d", act, port, numPorts)
		}
		if act == DRLIDRoute && !isSwitch {
			t.Fatalf("LID-route at a node that is not a switch")
		}
		hp, hc := s.HopPtr, s.HopCnt
		if s.Returning() && hp > hc || !s.Returning() && (hp < 1 || hp > hc+1) {
			t.Fatalf("hop pointer %d of %d after %v", hp, hc, act)
		}
		after := s
		after.HopPtr = before.HopPtr
		if !send && !s.Returning() {
			after.DR.ReturnPath[before.HopPtr%SMPMaxPathHops] = before.DR.ReturnPath[before.HopPtr%SMPMaxPathHops]
		}
		if !equalSMP(&after, &before) {
			t.Fatalf("fields other than the hop pointer and return path changed")
		}
		if _, err := s.MarshalBinary(); err != nil {
			t.Fatalf("stepped SMP does not encode: %v", err)
		}
	})
}

func equalSMP(a, b *SMP) bool {
	return a.SMPHeader == b.SMPHeader && a.DR == b.DR && bytes.Equal(a.Data, b.Data)
}

// FuzzDRWalk sends a request along any path of switches and back: the
// request reaches the last node after HopCnt hops, its ReturnPath records the
// ingress ports, and the reply retraces them to the SM.
func FuzzDRWalk(f *testing.F) {
	f.Add([]byte{1, 7}, []byte{3, 12})
	f.Add([]byte{1, 2, 9}, []byte{1, 5, 4})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, path, ingress []byte) {
		if len(path) == 0 || len(path) >= SMPMaxPathHops || len(ingress) < len(path) {
			return
		}
		sw := DRNode{Switch: true, NumPorts: 255}
		sm := DRNode{NumPorts: 255}
		for i := range path {
			path[i] = max(path[i], 1)
			ingress[i] = max(ingress[i], 1)
		}
		var s SMP
		if err := s.SetDirectedRoute(path...); err != nil {
			t.Fatal(err)
		}
		act, port, err := s.DRSend(sm)
		if act != DRForward || port != path[0] || err != nil {
			t.Fatalf("SM send: %v %d %v", act, port, err)
		}
		for i := range path {
			act, port, err = s.DRRecv(sw, ingress[i])
			last := i == len(path)-1
			if last && act != DRDeliver || !last && (act != DRForward || port != path[i+1]) || err != nil {
				t.Fatalf("hop %d: %v %d %v", i+1, act, port, err)
			}
		}
		if !bytes.Equal(s.DR.ReturnPath[1:len(path)+1], ingress[:len(path)]) {
			t.Fatalf("return path %v, ingress %v", s.DR.ReturnPath[1:len(path)+1], ingress)
		}
		r := s.Reply(0, nil)
		act, port, err = r.DRSend(sw)
		if act != DRForward || port != ingress[len(path)-1] || err != nil {
			t.Fatalf("reply: %v %d %v", act, port, err)
		}
		for i := len(path) - 2; i >= 0; i-- {
			act, port, err = r.DRRecv(sw, path[i+1])
			if act != DRForward || port != ingress[i] || err != nil {
				t.Fatalf("return hop %d: %v %d %v", i+1, act, port, err)
			}
		}
		if act, _, err = r.DRRecv(sm, path[0]); act != DRDeliver || err != nil || r.HopPtr != 0 {
			t.Fatalf("SM receive: %v %v hp %d", act, err, r.HopPtr)
		}
	})
}
