package opaswitch_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/opaswitch"
	"github.com/opavnic/opavnic/vema"
)

// smRig is an SM's HFI cabled to port 1 of switch s1, whose port 2 is
// cabled to port 5 of switch s2: the SM reaches s1 by the directed route
// [1] and s2 by [1 2].
type smRig struct {
	sm     *hfitest.Transport
	smEP   netip.AddrPort
	s1, s2 *opaswitch.Switch
	tid    uint64
}

func newSMRig(t *testing.T) *smRig {
	n := hfitest.NewNetwork()
	r := &smRig{smEP: netip.MustParseAddrPort("10.5.0.1:4793")}
	r.sm = n.Listen(r.smEP)
	r.s1 = runNamed(t, n, 1, "s1", 0x5100, map[int]netip.AddrPort{1: r.smEP, 2: ep(2, 5)})
	r.s2 = runNamed(t, n, 2, "s2", 0x5200, map[int]netip.AddrPort{5: ep(1, 2)})
	return r
}

// runNamed runs a switch with 8 ports, its built-in SMA and the cables
// given, until the test ends.
func runNamed(t *testing.T, n *hfitest.Network, id int, name string, guid uint64, cables map[int]netip.AddrPort) *opaswitch.Switch {
	t.Helper()
	var cs []opaswitch.Cable
	for p, peer := range cables {
		cs = append(cs, opaswitch.Cable{Port: p, Transport: n.Listen(ep(id, p)), Peer: peer})
	}
	sw, err := opaswitch.New(opaswitch.Config{Name: name, GUID: guid, NumPorts: 8, Cables: cs})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, sw)
	return sw
}

// dr sends a directed-route SMP along path and returns the answer, checked
// as the SM's HFI takes it.
func (r *smRig) dr(t *testing.T, method vema.Method, attr uint16, am uint32, data []byte, path ...uint8) vema.SMP {
	t.Helper()
	r.tid++
	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion,
		Method: method, TID: r.tid, AttrID: attr, AttrMod: am}, Data: data}
	if err := smp.SetDirectedRoute(path...); err != nil {
		t.Fatal(err)
	}
	hfiNode := vema.DRNode{NumPorts: 1}
	if act, port, err := smp.DRSend(hfiNode); act != vema.DRForward || port != 1 {
		t.Fatalf("DRSend at the SM: %v port %d, %v", act, port, err)
	}
	resp := r.exchange(t, &smp, encap.LID16BPermissive, encap.LID16BPermissive)
	if act, _, err := resp.DRRecv(hfiNode, 1); act != vema.DRDeliver {
		t.Fatalf("the answer at the SM: %v, %v", act, err)
	}
	return resp
}

// exchange sends smp from slid to dlid out of the SM's cable and returns
// the SMP that comes back with its TID.
func (r *smRig) exchange(t *testing.T, smp *vema.SMP, slid, dlid uint32) vema.SMP {
	t.Helper()
	if pad := len(smp.Data) % 8; pad != 0 {
		smp.Data = append(smp.Data, make([]byte, 8-pad)...)
	}
	mad, err := smp.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: slid, DLID: dlid, SC: 15, PKey: 0x7FFF}, mad)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := r.sm.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: ep(1, 1)}}); k != 1 {
		t.Fatal(err)
	}
	msgs := []hfi.Message{{Buf: make([]byte, encap.MaxPacketLen)}}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		if k, _ := r.sm.TryReadBatch(msgs); k == 1 {
			mp, err := encap.ParseMgmt(msgs[0].Buf[:msgs[0].N])
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			var resp vema.SMP
			if err := resp.UnmarshalBinary(mp.MAD); err != nil {
				t.Fatal(err)
			}
			if resp.TID != smp.TID || resp.Method != vema.MethodGetResp {
				t.Fatalf("answer TID %d method %#x, want TID %d GetResp", resp.TID, resp.Method, smp.TID)
			}
			return resp
		}
		if time.Now().After(deadline) {
			t.Logf("s1 SMA bad %d drdrops %d noroute %d; s2 bad %d drdrops %d noroute %d", r.s1.SMA.Bad.Load(), r.s1.SMA.DRDrops.Load(), r.s1.SMA.NoRoute.Load(), r.s2.SMA.Bad.Load(), r.s2.SMA.DRDrops.Load(), r.s2.SMA.NoRoute.Load())
			for _, sw := range []*opaswitch.Switch{r.s1, r.s2} {
				for p := 1; p <= 8; p++ {
					c := sw.Port(p).Counters.Snapshot()
					t.Logf("%s port %d: %v", sw.Name(), p, c)
				}
			}
			t.Fatalf("no answer to attribute %#x within 2 s", smp.AttrID)
		}
	}
}

func TestSMANodeInfoByDirectedRoute(t *testing.T) {
	r := newSMRig(t)
	for _, c := range []struct {
		path   []uint8
		guid   uint64
		inPort uint8
	}{{[]uint8{1}, 0x5100, 1}, {[]uint8{1, 2}, 0x5200, 5}} {
		resp := r.dr(t, vema.MethodGet, vema.SMPAttrNodeInfo, 0, nil, c.path...)
		var ni vema.NodeInfo
		if err := ni.UnmarshalBinary(resp.Data); err != nil {
			t.Fatal(err)
		}
		if st := resp.Status &^ vema.StatusDirection; st != vema.StatusSuccess || ni.NodeType != vema.NodeTypeSwitch ||
			ni.NodeGUID != c.guid || ni.NumPorts != 8 || ni.LocalPortNum != c.inPort {
			t.Errorf("path %v: status %v, %+v; want switch %#x, 8 ports, entered by port %d", c.path, st, ni, c.guid, c.inPort)
		}
		if resp.DR.ReturnPath[len(c.path)] != c.inPort {
			t.Errorf("path %v: return path %v", c.path, resp.DR.ReturnPath[:len(c.path)+1])
		}
	}
	resp := r.dr(t, vema.MethodGet, vema.SMPAttrNodeDescription, 0, nil, 1, 2)
	var d vema.NodeDescription
	if err := d.UnmarshalBinary(resp.Data); err != nil || d.String() != "s2" {
		t.Errorf("NodeDescription of s2: %q, %v", d.String(), err)
	}
	// A path through a port with no cable goes nowhere.
	r.tid++
	before := r.s1.SMA.NoRoute.Load()
	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion,
		Method: vema.MethodGet, TID: r.tid, AttrID: vema.SMPAttrNodeInfo}}
	_ = smp.SetDirectedRoute(1, 7)
	smp.DRSend(vema.DRNode{NumPorts: 1})
	mad, _ := smp.MarshalBinary()
	pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: encap.LID16BPermissive, DLID: encap.LID16BPermissive, SC: 15, PKey: 0x7FFF}, mad)
	r.sm.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: ep(1, 1)}})
	waitCount(t, "s1 SMPs with no port to go out of", before+1, r.s1.SMA.NoRoute.Load)
}

func TestSMATablesAndStates(t *testing.T) {
	r := newSMRig(t)
	// The LFT of s2, two blocks from 0x300 (extended LIDs), and back.
	am, err := vema.LFTAttrMod{NumBlocks: 2, Block: 0x300}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2*vema.LFTBlockLen)
	for i := range data {
		data[i] = 0xFF
	}
	data[5], data[64+7] = 5, 3
	if resp := r.dr(t, vema.MethodSet, vema.SMPAttrLinearForwardingTable, am, data, 1, 2); resp.Status&^vema.StatusDirection != vema.StatusSuccess {
		t.Fatalf("LFT Set: %v", resp.Status)
	}
	if got := r.s2.Tables.Unicast(0xC005); got != opaswitch.Drop {
		t.Errorf("s2 LFT[0xC005] = %d above LinearFDBTop, want a drop", got)
	}
	si := vema.SwitchInfo{LinearFDBTop: 0xC047}
	b, _ := si.MarshalBinary()
	resp := r.dr(t, vema.MethodSet, vema.SMPAttrSwitchInfo, 0, b, 1, 2)
	if err := si.UnmarshalBinary(resp.Data); err != nil || si.LinearFDBTop != 0xC047 || si.LinearFDBCap <= 0xC047 || si.MulticastFDBCap == 0 {
		t.Fatalf("SwitchInfo after the Set: %+v, %v", si, err)
	}
	if a, b := r.s2.Tables.Unicast(0xC005), r.s2.Tables.Unicast(0xC047); a != 5 || b != 3 {
		t.Errorf("s2 LFT[0xC005] = %d, LFT[0xC047] = %d with LinearFDBTop 0xC047; want 5 and 3", a, b)
	}
	resp = r.dr(t, vema.MethodGet, vema.SMPAttrLinearForwardingTable, am, nil, 1, 2)
	if len(resp.Data) < 2*vema.LFTBlockLen || resp.Data[5] != 5 || resp.Data[64+7] != 3 || resp.Data[0] != 0xFF {
		t.Errorf("LFT Get: % x", resp.Data[:16])
	}

	// MFT: position 0 of block 0, group 0xF00001 on ports 0 and 5.
	mam, _ := vema.MFTAttrMod{NumBlocks: 1}.Encode()
	mdata := make([]byte, vema.MFTBlockLen)
	binary.BigEndian.PutUint64(mdata[8:], 1|1<<5)
	r.dr(t, vema.MethodSet, vema.SMPAttrMulticastForwardingTable, mam, mdata, 1, 2)
	if m, ok := r.s2.Tables.Multicast(0xF00001); !ok || !m.Has(0) || !m.Has(5) || m.Has(1) {
		t.Errorf("s2 MFT[0xF00001] = %v, %v", m, ok)
	}

	// Port states: every port of s1 in one PortStateInfo Get.
	pam, _ := vema.PortsAttrMod{NumPorts: 9}.Encode()
	resp = r.dr(t, vema.MethodGet, vema.SMPAttrPortStateInfo, pam, nil, 1)
	states := func(resp vema.SMP) []uint8 {
		var out []uint8
		for i := 0; i+vema.PortStateInfoLen <= len(resp.Data); i += vema.PortStateInfoLen {
			var psi vema.PortStateInfo
			if err := psi.UnmarshalBinary(resp.Data[i:]); err != nil {
				t.Fatal(err)
			}
			out = append(out, psi.PortState())
		}
		return out
	}
	if got := states(resp); len(got) != 9 || got[0] != 2 || got[1] != 2 || got[2] != 2 || got[3] != 1 {
		t.Fatalf("s1 port states %v, want Init for 0, 1, 2 and Down for the uncabled", got)
	}
	// Armed without the S bit is refused; with it, Armed then Active.
	set := func(port, state uint8, s bool) vema.Status {
		am, _ := vema.PortsAttrMod{NumPorts: 1, Port: port, StartSMConfig: s}.Encode()
		var psi vema.PortStateInfo
		psi.SetPortState(state)
		b, _ := psi.MarshalBinary()
		return r.dr(t, vema.MethodSet, vema.SMPAttrPortStateInfo, am, b, 1).Status &^ vema.StatusDirection
	}
	if st := set(2, 3, false); st != vema.StatusInvalidAttrValue || r.s1.Port(2).State() != opaswitch.StateInit {
		t.Errorf("Armed without S: %v, state %v", st, r.s1.Port(2).State())
	}
	if st := set(2, 3, true); st != vema.StatusSuccess || r.s1.Port(2).State() != opaswitch.StateArmed {
		t.Errorf("Armed with S: %v, state %v", st, r.s1.Port(2).State())
	}
	if st := set(2, 4, false); st != vema.StatusSuccess || r.s1.Port(2).State() != opaswitch.StateActive {
		t.Errorf("Active: %v, state %v", st, r.s1.Port(2).State())
	}
	if st := set(3, 4, false); st != vema.StatusInvalidAttrValue {
		t.Errorf("Active on an uncabled port: %v", st)
	}
}

// TestSMALIDRouted: once the SM has given s1 its LID and routed its own,
// a LID-routed Get reaches the SMA and its answer comes back by the LFT.
func TestSMALIDRouted(t *testing.T) {
	r := newSMRig(t)
	var pi vema.PortInfo
	pi.LID, pi.SMLID = 0xC0001, 0x1
	b, _ := pi.MarshalBinary()
	if resp := r.dr(t, vema.MethodSet, vema.SMPAttrPortInfo, vema.SMPAttrModNPort1, b, 1); resp.Status&^vema.StatusDirection != vema.StatusSuccess {
		t.Fatalf("PortInfo Set: %v", resp.Status)
	}
	if got := r.s1.LID(); got != 0xC0001 {
		t.Fatalf("s1 LID %#x", got)
	}
	// Its LFT: its own LID to port 0, the SM's to port 1.
	blocks := make([]byte, vema.LFTBlockLen)
	for i := range blocks {
		blocks[i] = 0xFF
	}
	blocks[1] = 1
	am, _ := vema.LFTAttrMod{NumBlocks: 1}.Encode()
	r.dr(t, vema.MethodSet, vema.SMPAttrLinearForwardingTable, am, blocks, 1)
	own := make([]byte, vema.LFTBlockLen)
	for i := range own {
		own[i] = 0xFF
	}
	own[1] = 0
	am, _ = vema.LFTAttrMod{NumBlocks: 1, Block: 0xC0001 / 64}.Encode()
	r.dr(t, vema.MethodSet, vema.SMPAttrLinearForwardingTable, am, own, 1)
	si := vema.SwitchInfo{LinearFDBTop: 0xC0001}
	b, _ = si.MarshalBinary()
	r.dr(t, vema.MethodSet, vema.SMPAttrSwitchInfo, 0, b, 1)

	r.tid++
	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, MgmtClass: vema.ClassSubnLIDRouted,
		ClassVersion: vema.SMPClassVersion, Method: vema.MethodGet, TID: r.tid, AttrID: vema.SMPAttrNodeInfo}}
	resp := r.exchange(t, &smp, 0x1, 0xC0001)
	var ni vema.NodeInfo
	if err := ni.UnmarshalBinary(resp.Data); err != nil || ni.NodeGUID != 0x5100 || ni.LocalPortNum != 1 {
		t.Errorf("LID-routed NodeInfo: %+v, %v", ni, err)
	}
}
