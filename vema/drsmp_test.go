package vema

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// drWire writes a directed-route SMP by hand at the offsets of struct
// opa_smp (docs/linux-compat.md §9.3): header, DR SLID/DLID, the paths with
// index = hop, then the data. A nil dlid or slid is permissive.
type drWire struct {
	method     byte
	status     uint16
	hp, hc     byte
	tid        byte // low byte of the TID
	attrID     uint16
	attrMod    uint32
	slid, dlid uint32
	initPath   []byte // from index 0
	retPath    []byte // from index 0
	data       []byte
}

func (d drWire) bytes() []byte {
	w := make([]byte, 176+len(d.data))
	put(w, 0, 0x80, 0x81, 0x80, d.method)                                                     // base, class DR, class_version, method
	put(w, 4, byte(d.status>>8), byte(d.status))                                              // status (D = bit 15)
	put(w, 6, d.hp, d.hc)                                                                     // hop_ptr, hop_cnt
	put(w, 15, d.tid)                                                                         // tid
	put(w, 16, byte(d.attrID>>8), byte(d.attrID))                                             // attr_id
	put(w, 20, byte(d.attrMod>>24), byte(d.attrMod>>16), byte(d.attrMod>>8), byte(d.attrMod)) // attr_mod
	put(w, 32, byte(d.slid>>24), byte(d.slid>>16), byte(d.slid>>8), byte(d.slid))             // dr_slid
	put(w, 36, byte(d.dlid>>24), byte(d.dlid>>16), byte(d.dlid>>8), byte(d.dlid))             // dr_dlid
	put(w, 40, d.initPath...)                                                                 // initial_path
	put(w, 104, d.retPath...)                                                                 // return_path
	put(w, 176, d.data...)                                                                    // data
	return w
}

const permissive = 0xFFFFFFFF

// hop runs one DR step on the SMP that crossed a link as bytes: it decodes
// in, runs DRRecv (inPort > 0) or DRSend (inPort == 0), and checks the action,
// the port and the bytes that leave the node.
func hop(t *testing.T, name string, in []byte, n DRNode, inPort uint8, act DRAction, port uint8, want []byte) *SMP {
	t.Helper()
	var s SMP
	if err := s.UnmarshalBinary(in); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	var (
		gotAct  DRAction
		gotPort uint8
		err     error
	)
	if inPort > 0 {
		gotAct, gotPort, err = s.DRRecv(n, inPort)
	} else {
		gotAct, gotPort, err = s.DRSend(n)
	}
	if err != nil || gotAct != act || gotPort != port {
		t.Fatalf("%s: got %v port %d (%v), want %v port %d", name, gotAct, gotPort, err, act, port)
	}
	got, err := s.MarshalBinary()
	if err != nil {
		t.Fatalf("%s: encode: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: bytes differ at %d\n got %x\nwant %x", name, firstDiff(got, want), got, want)
	}
	return &s
}

var (
	smHFI = DRNode{NumPorts: 1}
	hfi   = DRNode{NumPorts: 1}
)

// TestDRWorkedExample walks the worked example of docs/management.md §8.1 (SM on an
// HFI, port 1 -> S1 in 3 out 7 -> S2 in 12, Get NodeInfo of S2) byte for
// byte at every hop, the request out and the reply back.
func TestDRWorkedExample(t *testing.T) {
	s1 := DRNode{Switch: true, NumPorts: 24}
	s2 := DRNode{Switch: true, NumPorts: 48}
	req := SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, ClassVersion: 0x80, Method: MethodGet, TID: 0x42,
		AttrID: SMPAttrNodeInfo}}
	if err := req.SetDirectedRoute(1, 7); err != nil {
		t.Fatal(err)
	}
	out := drWire{method: 0x01, hc: 2, tid: 0x42, attrID: 0x0011, slid: permissive, dlid: permissive,
		initPath: []byte{0, 1, 7}}
	b, err := req.MarshalBinary()
	if err != nil || !bytes.Equal(b, out.bytes()) {
		t.Fatalf("request as the SM lays it out:\n got %x\nwant %x (%v)", b, out.bytes(), err)
	}

	// 1. SM sends: hp 0 -> 1, out InitPath[1] = 1.
	out.hp = 1
	hop(t, "SM sends", b, smHFI, 0, DRForward, 1, out.bytes())
	// 2-3. S1 receives on 3: RetPath[1] = 3, hp 1 -> 2, out InitPath[2] = 7.
	in := out.bytes()
	out.hp, out.retPath = 2, []byte{0, 3}
	hop(t, "S1 forwards", in, s1, 3, DRForward, 7, out.bytes())
	// 4. S2 receives on 12: RetPath[2] = 12, hp 2 -> 3, deliver to its SMA.
	in = out.bytes()
	out.hp, out.retPath = 3, []byte{0, 3, 12}
	at := hop(t, "S2 delivers", in, s2, 12, DRDeliver, 0, out.bytes())

	// The SMA answers: GetResp, D set, hp still 3, NodeInfo in the data.
	ni := nodeInfoVal()
	ni.NodeType, ni.NumPorts, ni.LocalPortNum = NodeTypeSwitch, 48, 12
	data, _ := ni.MarshalBinary()
	data = append(data, 0, 0, 0, 0) // round_up(176 + 44, 8)
	reply := at.Reply(0, data)
	rb, _ := reply.MarshalBinary()
	back := out
	back.method, back.status, back.data = 0x81, 0x8000, data
	if !bytes.Equal(rb, back.bytes()) {
		t.Fatalf("reply:\n got %x\nwant %x", rb, back.bytes())
	}
	// 5. S2 sends the reply: hp 3 -> 2, out RetPath[2] = 12.
	back.hp = 2
	hop(t, "S2 replies", rb, s2, 0, DRForward, 12, back.bytes())
	// 6. S1 receives on 7: hp 2 -> 1, out RetPath[1] = 3.
	in = back.bytes()
	back.hp = 1
	hop(t, "S1 returns", in, s1, 7, DRForward, 3, back.bytes())
	// 7. The SM's HFI receives on 1: DrSLID permissive, hp 1 -> 0, deliver.
	in = back.bytes()
	back.hp = 0
	hop(t, "SM receives", in, smHFI, 1, DRDeliver, 0, back.bytes())
}

// TestDRThreeSwitches walks SM -> S1 (in 1, out 2) -> S2 (in 5, out 9) ->
// S3 (in 4), Get SwitchInfo of S3, and back.
func TestDRThreeSwitches(t *testing.T) {
	sw := DRNode{Switch: true, NumPorts: 48}
	var req SMP
	req.BaseVersion, req.ClassVersion, req.Method, req.TID, req.AttrID = 0x80, 0x80, MethodGet, 7, SMPAttrSwitchInfo
	if err := req.SetDirectedRoute(1, 2, 9); err != nil {
		t.Fatal(err)
	}
	w := drWire{method: 0x01, hc: 3, tid: 7, attrID: 0x0012, slid: permissive, dlid: permissive,
		initPath: []byte{0, 1, 2, 9}}
	b, _ := req.MarshalBinary()
	if !bytes.Equal(b, w.bytes()) {
		t.Fatalf("request:\n got %x\nwant %x", b, w.bytes())
	}
	steps := []struct {
		name   string
		node   DRNode
		inPort uint8
		act    DRAction
		port   uint8
		hp     byte
		ret    []byte
	}{
		{"SM sends", smHFI, 0, DRForward, 1, 1, nil},
		{"S1 forwards", sw, 1, DRForward, 2, 2, []byte{0, 1}},
		{"S2 forwards", sw, 5, DRForward, 9, 3, []byte{0, 1, 5}},
		{"S3 delivers", sw, 4, DRDeliver, 0, 4, []byte{0, 1, 5, 4}},
	}
	var at *SMP
	for _, st := range steps {
		in := w.bytes()
		w.hp, w.retPath = st.hp, st.ret
		at = hop(t, st.name, in, st.node, st.inPort, st.act, st.port, w.bytes())
	}
	data := append(switchInfoBytes(), 0, 0, 0, 0) // round_up(176 + 84, 8) = 264
	reply := at.Reply(0, data)
	b, _ = reply.MarshalBinary()
	w.method, w.status, w.data = 0x81, 0x8000, data
	if !bytes.Equal(b, w.bytes()) {
		t.Fatalf("reply:\n got %x\nwant %x", b, w.bytes())
	}
	back := []struct {
		name   string
		inPort uint8
		node   DRNode
		act    DRAction
		port   uint8
		hp     byte
	}{
		{"S3 replies", 0, sw, DRForward, 4, 3},
		{"S2 returns", 9, sw, DRForward, 5, 2},
		{"S1 returns", 2, sw, DRForward, 1, 1},
		{"SM receives", 1, smHFI, DRDeliver, 0, 0},
	}
	for _, st := range back {
		in := w.bytes()
		w.hp = st.hp
		hop(t, st.name, in, st.node, st.inPort, st.act, st.port, w.bytes())
	}
}

// TestDRLRDR walks the LR-DR form of docs/management.md §8.1: an SMP LID-routed
// from the SM (LID 1) to its parent switch (LID 5), DR from there out of
// port 17 to an HFI, and the reply back LID-routed from the switch.
func TestDRLRDR(t *testing.T) {
	parent := DRNode{Switch: true, NumPorts: 48}
	w := drWire{method: 0x01, hc: 1, tid: 9, attrID: 0x0015, attrMod: 0x01000201, slid: 1, dlid: permissive,
		initPath: []byte{0, 17}}
	// The parent starts the DR part on the SMP that reached its port 0.
	in := w.bytes()
	w.hp = 1
	hop(t, "parent starts DR", in, parent, 0, DRForward, 17, w.bytes())
	// The HFI receives on 1 at the end of the path.
	in = w.bytes()
	w.hp, w.retPath = 2, []byte{0, 1}
	at := hop(t, "HFI delivers", in, hfi, 1, DRDeliver, 0, w.bytes())
	reply := at.Reply(0, nil)
	b, _ := reply.MarshalBinary()
	w.method, w.status = 0x81, 0x8000
	// The HFI sends the reply out of RetPath[1].
	w.hp = 1
	hop(t, "HFI replies", b, hfi, 0, DRForward, 1, w.bytes())
	// The parent gets it with hp 1 and a DR SLID: hp 0, LID-route to LID 1.
	in = w.bytes()
	w.hp = 0
	hop(t, "parent LID-routes", in, parent, 17, DRLIDRoute, 0, w.bytes())
	// The SM receives it with hp 0.
	hop(t, "SM receives", w.bytes(), smHFI, 1, DRDeliver, 0, w.bytes())

	// An HFI at hp 1 with a DR SLID cannot LID-route it.
	var s SMP
	if err := s.UnmarshalBinary(in); err != nil {
		t.Fatal(err)
	}
	if act, _, err := s.DRRecv(hfi, 1); act != DRDrop || err != DRDropNotPermissive {
		t.Fatalf("HFI with a DR SLID at hp 1: %v %v", act, err)
	}
}

// TestDRZeroHop covers the SM's own node: a 0-hop request is delivered
// locally (hp 0 -> 1) and its reply comes back to the SM (hp 1 -> 0), and an
// HFI that receives a 0-hop SMP from its link answers it the same way.
func TestDRZeroHop(t *testing.T) {
	var s SMP
	s.BaseVersion, s.ClassVersion, s.Method = 0x80, 0x80, MethodGet
	if err := s.SetDirectedRoute(); err != nil {
		t.Fatal(err)
	}
	if act, port, err := s.DRSend(smHFI); act != DRDeliver || port != 0 || err != nil || s.HopPtr != 1 {
		t.Fatalf("0-hop send: %v %d %v hp %d", act, port, err, s.HopPtr)
	}
	r := s.Reply(0, nil)
	if act, _, err := r.DRSend(smHFI); act != DRDeliver || err != nil || r.HopPtr != 0 {
		t.Fatalf("0-hop reply: %v %v hp %d", act, err, r.HopPtr)
	}
	if err := s.SetDirectedRoute(); err != nil {
		t.Fatal(err)
	}
	if act, _, err := s.DRRecv(hfi, 1); act != DRDeliver || err != nil || s.HopPtr != 1 || s.DR.ReturnPath[0] != 0 {
		t.Fatalf("0-hop receive: %v %v hp %d", act, err, s.HopPtr)
	}
}

// TestDRDrops checks every discard rule on both sides, and that a dropped
// SMP is left as it was.
func TestDRDrops(t *testing.T) {
	sw := DRNode{Switch: true, NumPorts: 8}
	mk := func(ret bool, hp, hc uint8, init, retPath []byte, slid, dlid encap.LID) SMP {
		s := SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnDirectedRoute, ClassVersion: 0x80,
			HopPtr: hp, HopCnt: hc}}
		if ret {
			s.Status = StatusDirection
		}
		s.DR.DRSLID, s.DR.DRDLID = slid, dlid
		copy(s.DR.InitialPath[:], init)
		copy(s.DR.ReturnPath[:], retPath)
		return s
	}
	const P = encap.LIDPermissive
	cases := []struct {
		name   string
		s      SMP
		node   DRNode
		inPort uint8 // 0: DRSend
		want   DRDropReason
	}{
		{"LID-routed class, recv", SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnLIDRouted}}, sw, 1, DRDropNotDR},
		{"LID-routed class, send", SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnLIDRouted}}, sw, 0, DRDropNotDR},
		{"hop count 64, recv", mk(false, 1, 64, nil, nil, P, P), sw, 1, DRDropHopCount},
		{"hop count 255, send", mk(true, 1, 255, nil, nil, P, P), sw, 0, DRDropHopCount},
		{"outbound hp 0 received", mk(false, 0, 2, []byte{0, 1, 2}, nil, P, P), sw, 1, DRDropHopNotAdvanced},
		{"HFI as outbound intermediate, recv", mk(false, 1, 2, []byte{0, 1, 1}, nil, P, P), hfi, 1, DRDropNotSwitch},
		{"HFI as outbound intermediate, send", mk(false, 1, 2, []byte{0, 1, 1}, nil, P, P), hfi, 0, DRDropNotSwitch},
		{"HFI as returning intermediate, recv", mk(true, 2, 2, nil, []byte{0, 1, 1}, P, P), hfi, 1, DRDropNotSwitch},
		{"HFI as returning intermediate, send", mk(true, 2, 3, nil, []byte{0, 1, 1}, P, P), hfi, 0, DRDropNotSwitch},
		{"HFI at end with DR DLID, recv", mk(false, 1, 1, []byte{0, 1}, nil, P, 5), hfi, 1, DRDropNotPermissive},
		{"HFI at end with DR DLID, send", mk(false, 0, 0, nil, nil, P, 5), hfi, 0, DRDropNotPermissive},
		{"HFI returning hp 1 with DR SLID, recv", mk(true, 1, 2, nil, []byte{0, 1, 1}, 5, P), hfi, 1, DRDropNotPermissive},
		{"HFI returning hp 1 with DR SLID, send", mk(true, 1, 0, nil, nil, 5, P), hfi, 0, DRDropNotPermissive},
		{"outbound hp beyond hc+1, recv", mk(false, 4, 2, nil, nil, P, P), sw, 1, DRDropHopPointer},
		{"outbound hp beyond hc+1, send", mk(false, 4, 2, nil, nil, P, P), sw, 0, DRDropHopPointer},
		{"returning hp hc+1 received", mk(true, 3, 2, nil, []byte{0, 1, 1}, P, P), sw, 1, DRDropHopPointer},
		{"returning hp beyond hc+1, recv", mk(true, 4, 2, nil, nil, P, P), sw, 1, DRDropHopPointer},
		{"returning hp beyond hc+1, send", mk(true, 9, 2, nil, nil, P, P), sw, 0, DRDropHopPointer},
		{"ingress port 0", mk(false, 1, 2, []byte{0, 1, 2}, nil, P, P), sw, 0xFF, DRDropPort},
		{"ingress port above NumPorts", mk(false, 1, 2, []byte{0, 1, 2}, nil, P, P), sw, 9, DRDropPort},
		{"outbound next port 0", mk(false, 1, 2, []byte{0, 1, 0}, nil, P, P), sw, 1, DRDropPort},
		{"outbound next port above NumPorts", mk(false, 1, 2, []byte{0, 1, 9}, nil, P, P), sw, 1, DRDropPort},
		{"returning next port 0", mk(true, 2, 2, nil, []byte{0, 0, 3}, P, P), sw, 1, DRDropPort},
		{"returning next port above NumPorts", mk(true, 2, 2, nil, []byte{0, 200, 3}, P, P), sw, 1, DRDropPort},
		{"origin port 0", mk(false, 0, 1, []byte{0, 0}, nil, P, P), hfi, 0, DRDropPort},
		{"origin port above NumPorts", mk(false, 0, 1, []byte{0, 2}, nil, P, P), hfi, 0, DRDropPort},
		{"reply port above NumPorts", mk(true, 2, 1, nil, []byte{0, 2}, P, P), hfi, 0, DRDropPort},
		{"send intermediate next port 0", mk(false, 1, 3, []byte{0, 1, 0}, nil, P, P), sw, 0, DRDropPort},
		{"send returning next port 0", mk(true, 2, 3, nil, []byte{0, 0, 1}, P, P), sw, 0, DRDropPort},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			before, _ := s.MarshalBinary()
			var (
				act  DRAction
				port uint8
				err  error
			)
			switch c.inPort {
			case 0:
				act, port, err = s.DRSend(c.node)
			case 0xFF:
				act, port, err = s.DRRecv(c.node, 0)
			default:
				act, port, err = s.DRRecv(c.node, c.inPort)
			}
			if act != DRDrop || port != 0 || !errors.Is(err, c.want) {
				t.Fatalf("got %v port %d err %v, want drop %v", act, port, err, c.want)
			}
			after, _ := s.MarshalBinary()
			if !bytes.Equal(before, after) {
				t.Fatalf("a dropped SMP changed:\n%x\n%x", before, after)
			}
		})
	}
}

// TestDRSwitchLIDRouteOut: a switch at the end of the DR part with a DR DLID
// sends the SMP on LID-routed, with hp at hc+1, which the node at DR DLID
// then delivers.
func TestDRSwitchLIDRouteOut(t *testing.T) {
	sw := DRNode{Switch: true, NumPorts: 8}
	var s SMP
	if err := s.SetDirectedRoute(3); err != nil {
		t.Fatal(err)
	}
	s.DR.DRDLID = 0x40
	if act, port, err := s.DRSend(hfi); act != DRDrop || err != DRDropPort || port != 0 {
		t.Fatalf("HFI with path port 3: %v %v", act, err)
	}
	s.DR.InitialPath[1] = 1
	if act, port, err := s.DRSend(hfi); act != DRForward || port != 1 || err != nil {
		t.Fatalf("send: %v %d %v", act, port, err)
	}
	if act, _, err := s.DRRecv(sw, 4); act != DRLIDRoute || err != nil || s.HopPtr != 2 || s.DR.ReturnPath[1] != 4 {
		t.Fatalf("switch at end with DR DLID: %v %v hp %d", act, err, s.HopPtr)
	}
	if act, _, err := s.DRRecv(hfi, 1); act != DRDeliver || err != nil || s.HopPtr != 2 {
		t.Fatalf("DR DLID node: %v %v", act, err)
	}
}

func TestDRHelpers(t *testing.T) {
	var s SMP
	s.Status = StatusInvalidAttrValue | StatusDirection
	ports := make([]byte, 63)
	for i := range ports {
		ports[i] = byte(i + 1)
	}
	if err := s.SetDirectedRoute(ports...); err != nil || s.HopCnt != 63 || s.DR.InitialPath[63] != 63 ||
		s.DR.InitialPath[0] != 0 || s.Returning() || s.Status != StatusInvalidAttrValue {
		t.Fatalf("63 hops: %v %+v", err, s.SMPHeader)
	}
	before := s
	if err := s.SetDirectedRoute(append(ports, 64)...); !errors.Is(err, ErrRange) || !reflect.DeepEqual(s, before) {
		t.Fatalf("64 hops: %v", err)
	}
	s.HopPtr = 5
	if p := s.DRFwdPort(); p != 6 {
		t.Fatalf("outbound forward port %d, want InitialPath[6] = 6", p)
	}
	s.HopPtr = 63
	if p := s.DRFwdPort(); p != 0 {
		t.Fatalf("outbound forward port past the path %d", p)
	}
	s.Status |= StatusDirection
	s.DR.ReturnPath[4] = 11
	s.HopPtr = 5
	if p := s.DRFwdPort(); p != 11 {
		t.Fatalf("returning forward port %d, want ReturnPath[4] = 11", p)
	}
	s.HopPtr = 0
	if p := s.DRFwdPort(); p != 0 {
		t.Fatalf("returning forward port at hp 0: %d", p)
	}

	lr := SMP{SMPHeader: SMPHeader{MgmtClass: ClassSubnLIDRouted, Method: MethodSet, HopPtr: 0}}
	r := lr.Reply(StatusInvalidAttrValue, []byte{1})
	if r.Method != MethodGetResp || r.Status != StatusInvalidAttrValue || lr.Method != MethodSet {
		t.Fatalf("LID-routed reply: %+v", r.SMPHeader)
	}
	for a, want := range map[DRAction]string{DRDrop: "drop", DRDeliver: "deliver", DRForward: "forward",
		DRLIDRoute: "LID-route", 9: "DRAction(9)"} {
		if a.String() != want {
			t.Errorf("%d.String() = %q", a, a.String())
		}
	}
	for r := DRDropNotDR; r <= DRDropPort+1; r++ {
		if r.Error() == "" {
			t.Errorf("reason %d has no text", r)
		}
	}
}
