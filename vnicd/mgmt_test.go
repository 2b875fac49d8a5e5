package vnicd_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// fakeFM is a fabric manager reduced to what a test needs: a transport at
// the FM's endpoint, MADs framed by hand per docs/management.md §1, and whatever
// arrives queued for the test to read.
type fakeFM struct {
	t   *testing.T
	tr  *hfitest.Transport
	lid uint32
	in  chan []byte // MADs that arrived, with their 16B header first
	tid uint64
}

const fmLID = 1

var (
	tEPFM   = netip.MustParseAddrPort("10.0.0.100:4793")
	tEPNode = netip.MustParseAddrPort("10.0.0.5:4793")
	tEPPeer = netip.MustParseAddrPort("10.0.0.6:4793")
)

func newFakeFM(t *testing.T, n *hfitest.Network) *fakeFM {
	f := &fakeFM{t: t, tr: n.Listen(tEPFM), lid: fmLID, in: make(chan []byte, 64)}
	go func() {
		msgs := make([]hfi.Message, 8)
		for i := range msgs {
			msgs[i].Buf = make([]byte, encap.MaxPacketLen)
		}
		for {
			k, err := f.tr.ReadBatch(msgs)
			if err != nil {
				return
			}
			for _, m := range msgs[:k] {
				f.in <- bytes.Clone(m.Buf[:m.N])
			}
		}
	}()
	t.Cleanup(func() { f.tr.Close() })
	return f
}

// send frames mad to dlid at ep.
func (f *fakeFM) send(ep netip.AddrPort, dlid uint32, sc uint8, qpn uint32, mad []byte) {
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: f.lid, DLID: dlid, SC: sc, PKey: 0xFFFF,
		DestQPN: qpn, SrcQPN: qpn}, mad)
	if err != nil {
		f.t.Fatal(err)
	}
	if !ep.IsValid() {
		return // build only
	}
	if _, err := f.tr.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: ep}}); err != nil {
		f.t.Fatal(err)
	}
}

// recv returns the next management packet that arrives, parsed.
func (f *fakeFM) recv() encap.MgmtPacket {
	f.t.Helper()
	select {
	case pkt := <-f.in:
		mp, err := encap.ParseMgmt(pkt)
		if err != nil {
			f.t.Fatal(err)
		}
		return mp
	case <-time.After(3 * time.Second):
		f.t.Fatal("nothing from the node within 3 s")
	}
	return encap.MgmtPacket{}
}

// recvClass skips announces and traps until a MAD of class c comes.
func (f *fakeFM) recvResp(tid uint64) encap.MgmtPacket {
	f.t.Helper()
	for {
		mp := f.recv()
		if binary.BigEndian.Uint64(mp.MAD[8:]) == tid && vema.Method(mp.MAD[3]) == vema.MethodGetResp {
			return mp
		}
	}
}

func (f *fakeFM) vema(ep netip.AddrPort, dlid uint32, class vema.Class, method vema.Method, attr uint16, am uint32, data []byte) (uint64, []byte) {
	f.tid++
	var m vema.MAD
	m.BaseVersion, m.MgmtClass, m.ClassVersion, m.Method = 0x80, class, 0x80, method
	m.TID, m.AttrID, m.AttrMod, m.OUI = f.tid, attr, am, vema.IntelOUI
	copy(m.Data[:], data)
	b, _ := m.MarshalBinary()
	f.send(ep, dlid, 0, 1, b)
	return f.tid, b
}

type mnode struct {
	hfi    *hfi.HFI
	engine *engine.Engine
	mgmt   *vnicd.Mgmt
	host   map[uint8]*taptest.Device
}

func newManagedNode(t *testing.T, n *hfitest.Network) *mnode { return newManagedNodeWith(t, n, nil) }

// newManagedNodeWith is newManagedNode with before(mgmt) called before the
// node starts.
func newManagedNodeWith(t *testing.T, n *hfitest.Network, before func(*vnicd.Mgmt)) *mnode {
	tr := n.Listen(tEPNode)
	h := hfi.New(tr, hfi.Config{VerifyICRC: true})
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM}, nil)
	h.SetDirectory(dir)
	nd := &mnode{hfi: h, host: map[uint8]*taptest.Device{}}
	nd.engine = enginetest.StartEngine(t, h, enginetest.Fakes(nd.host))
	nd.mgmt = vnicd.NewMgmt(nd.engine, vnicd.MgmtConfig{NodeGUID: 0x1122, PortGUID: 0x1122, Description: "node",
		FM: tEPFM, FMLID: fmLID}, nil)
	if before != nil {
		before(nd.mgmt)
	}
	go nd.mgmt.Run(t.Context())
	return nd
}

func TestManagedNodeJoins(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	nd := newManagedNode(t, n)
	const nodeLID, peerLID, vesw = 0x10005, 0x20, 7

	// 1. The node announces itself: LID-routed trap 144 from the permissive LID.
	mp := fm.recv()
	if mp.MAD[1] != 0x01 || mp.MAD[3] != 0x05 || mp.Header.SLID() != 0xFFFFFF || mp.Header.DLID() != fmLID ||
		mp.Header.SC() != 15 || binary.BigEndian.Uint16(mp.MAD[36:]) != 144 {
		t.Fatalf("announce: class %#x method %#x slid %#x", mp.MAD[1], mp.MAD[3], mp.Header.SLID())
	}

	// 2. DR Set PortInfo: LID 0x10005, SM LID 1, Active.
	pi := vema.PortInfo{LID: nodeLID, SMLID: fmLID, SubnetPrefix: encap.DefaultSubnetPrefix, SAQP: 1}
	pi.SetPortState(vema.PortStateActive)
	pib, _ := pi.MarshalBinary()
	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: 0x80, MgmtClass: vema.ClassSubnDirectedRoute, ClassVersion: 0x80,
		Method: vema.MethodSet, HopPtr: 1, TID: 99, AttrID: vema.SMPAttrPortInfo, AttrMod: 0x01000001},
		DR: vema.DRRoute{DRSLID: encap.LIDPermissive, DRDLID: encap.LIDPermissive}, Data: pib}
	sb, _ := smp.MarshalBinary()
	sb = append(sb, make([]byte, 6)...) // 418 -> 424: MADs travel in multiples of 8
	fm.send(tEPNode, encap.LID16BPermissive, 15, 0, sb)
	mp = fm.recvResp(99)
	if st := binary.BigEndian.Uint16(mp.MAD[4:]); st != 0x8000 || len(mp.MAD) != 424 || mp.Header.PKey() != 0x7FFF {
		t.Fatalf("Set PortInfo reply: status %#x len %d", st, len(mp.MAD))
	}
	if nd.hfi.LID() != nodeLID || nd.hfi.State() != hfi.StateActive {
		t.Fatalf("node LID %#x state %v", nd.hfi.LID(), nd.hfi.State())
	}

	// 3. The directory: FM, node, a peer, one group.
	db := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1}, Entries: []vema.DirEntry{
		{LID: fmLID, Addr: tEPFM}, {LID: nodeLID, Addr: tEPNode}, {LID: peerLID, Addr: tEPPeer}}}
	mb := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1},
		Groups: []vema.DirGroup{{MLID: enginetest.Mcast, Members: []uint32{nodeLID, peerLID}}}}
	dbb, _ := db.MarshalBinary()
	mbb, _ := mb.MarshalBinary()
	for attr, data := range map[uint16][]byte{vema.AttrDirectoryBlock: dbb, vema.AttrMulticastBlock: mbb} {
		tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassDirectory, vema.MethodSet, attr, 0, data)
		if mp = fm.recvResp(tid); binary.BigEndian.Uint16(mp.MAD[4:]) != 0 || !bytes.Equal(mp.MAD[40:40+len(data)], data) {
			t.Fatalf("directory attr %#x: status %#x", attr, binary.BigEndian.Uint16(mp.MAD[4:]))
		}
	}
	if ep, ok := nd.hfi.Directory().Endpoint(peerLID); !ok || ep != tEPPeer {
		t.Fatal("directory not installed")
	}

	// 4. ClassPortInfo (trap_lid) and VESWPortInfo of vport 0.
	cpi := vema.ClassPortInfo{TrapLID: fmLID}
	cb, _ := cpi.MarshalBinary()
	tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassVEMA, vema.MethodSet, vema.AttrClassPortInfo, 0, cb)
	fm.recvResp(tid)
	info := vema.PowerOnVESWPortInfo()
	info.VESW.VESWID, info.VESW.PKey, info.VESW.UMcastDLID = vesw, 0x8001, enginetest.Mcast
	info.VPort.EncapSLID, info.VPort.BaseMACAddr, info.VPort.ConfigState = nodeLID, encap.MACForLID(nodeLID, vesw), vema.StateForwarding
	info.VPort.Rsvd2[0] = 0x5A // reserved: stored and echoed
	ib, _ := info.MarshalBinary()
	tid, _ = fm.vema(tEPNode, nodeLID, vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo, 0, ib)
	mp = fm.recvResp(tid)
	var got vema.VESWPortInfo
	if err := got.UnmarshalBinary(mp.MAD[40:]); err != nil || binary.BigEndian.Uint16(mp.MAD[4:]) != 0 || len(mp.MAD) != 2048 {
		t.Fatalf("Set VESWPortInfo: %v status %#x", err, binary.BigEndian.Uint16(mp.MAD[4:]))
	}
	if got.VPort.OperState != vema.StateForwarding || got.VPort.EthLinkStatus != vema.EthLinkUp || got.VPort.Rsvd2[0] != 0x5A ||
		got.VESW.VESWID != vesw {
		t.Fatalf("VESWPortInfo read back: %+v", got.VPort)
	}
	p := nd.engine.Port(0)
	if p == nil || p.Config().VESW.McastDLID != enginetest.Mcast || p.Config().Port.EncapSLID != nodeLID {
		t.Fatal("engine port not made from the VESWPortInfo")
	}

	// 5. The port works: a frame to a peer engine on the same vesw.
	peer := newPeer(t, n, peerLID, vesw)
	f := enginetest.EthFrame(encap.MACForLID(peerLID, vesw), encap.MACForLID(nodeLID, vesw), 100)
	if _, err := nd.host[0].Write([][]byte{f}, 0); err != nil {
		t.Fatal(err)
	}
	if got := enginetest.ReadFrame(t, peer.host[0]); !bytes.Equal(got, f) {
		t.Fatal("peer did not get the frame")
	}

	// 6. A VEMA Get from the peer (a member, but not the FM): dropped, counted.
	before := nd.mgmt.Untrusted.Load()
	_, getReq := fm.vema(netip.AddrPort{}, nodeLID, vema.ClassVEMA, vema.MethodGet, vema.AttrVESWPortInfo, 0, nil)
	pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: peerLID, DLID: nodeLID, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, getReq)
	peer.tr.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: tEPNode}})
	waitfor.Poll(2*time.Second, func() bool { return nd.mgmt.Untrusted.Load() != before })
	if nd.mgmt.Untrusted.Load() != before+1 {
		t.Fatal("untrusted MAD not counted")
	}
	// 6b. Sets that would take the port down: from the peer with its own
	// SLID (the agent's trust check: mgmt_untrusted), and from the peer's
	// endpoint claiming the FM's SLID (the HFI's source check, before any
	// agent sees it: rcv_bad_source). Both are dropped and counted; the
	// port keeps forwarding.
	down := info
	down.VPort.ConfigState = vema.StateDropAll
	db2, _ := down.MarshalBinary()
	_, setReq := fm.vema(netip.AddrPort{}, nodeLID, vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo, 0, db2)
	for _, tc := range []struct {
		slid    uint32
		counter *atomic.Uint64
	}{{peerLID, &nd.mgmt.Untrusted}, {fmLID, &nd.hfi.Counters.RcvBadSource}} {
		slid := tc.slid
		before := tc.counter.Load()
		pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: slid, DLID: nodeLID, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, setReq)
		peer.tr.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: tEPNode}})
		waitfor.Poll(2*time.Second, func() bool { return tc.counter.Load() != before })
		if tc.counter.Load() != before+1 {
			t.Fatalf("Set from the peer with SLID %#x not counted", slid)
		}
		if st := nd.engine.Port(0).Config().Port.ConfigState; st != engine.StateForwarding {
			t.Fatalf("Set from the peer with SLID %#x changed the port: config state %v", slid, st)
		}
	}

	// 7. SA PathRecord through the FM.
	go func() {
		for mp := range fm.in {
			m, err := encap.ParseMgmt(mp)
			if err != nil || m.MAD[1] != 0x03 {
				continue
			}
			r := bytes.Clone(m.MAD)
			r[3] = 0x81
			rec := vema.PathRecord{SLID: nodeLID, DLID: peerLID, HopLimit: 1, PKey: 0xFFFF, MTU: 5, Rate: 16, NumbPath: 1}
			b, _ := rec.MarshalBinary()
			copy(r[56:], b)
			fm.send(tEPNode, nodeLID, 0, 1, r)
			return
		}
	}()
	rec, err := nd.mgmt.Path(context.Background(), peerLID)
	if err != nil || rec.DLID != peerLID || rec.HopLimit != 1 || rec.MTU != 5 {
		t.Fatalf("path: %v %+v", err, rec)
	}
}

type peerNode struct {
	tr   *hfitest.Transport
	host map[uint8]*taptest.Device
}

func newPeer(t *testing.T, n *hfitest.Network, lid uint32, vesw encap.VESWID) *peerNode {
	pn := &peerNode{tr: n.Listen(tEPPeer), host: map[uint8]*taptest.Device{}}
	h := hfi.New(pn.tr, hfi.Config{LID: lid, VerifyICRC: true})
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{lid: tEPPeer, 0x10005: tEPNode}, nil)
	h.SetDirectory(dir)
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		port, host := taptest.Pair(taptest.Options{})
		pn.host[s.VPort] = host
		return port, nil
	})
	if err := e.SetPort(0, enginetest.PortConfig(lid, vesw, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	return pn
}

func TestPathWithoutFM(t *testing.T) {
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(tEPNode), hfi.Config{LID: 5})
	e := enginetest.StartEngine(t, h, nil)
	m := vnicd.NewMgmt(e, vnicd.MgmtConfig{}, nil)
	if _, err := m.Path(context.Background(), 7); !errors.Is(err, vnicd.ErrNoFM) {
		t.Fatal(err)
	}
	// A static node trusts only its trusted_managers.
	mad := make([]byte, 2048)
	mad[0], mad[1], mad[2], mad[3] = 0x80, 0x34, 0x80, 0x01
	pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: 9, DLID: 5, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
	m.Receive(pkt, encap.Header16B(pkt), tEPPeer)
	m.Receive(pkt[:10], encap.Header16B(pkt), tEPPeer)
	m.Wait()
	if m.Untrusted.Load() != 1 || m.Bad.Load() != 1 {
		t.Fatalf("untrusted %d bad %d", m.Untrusted.Load(), m.Bad.Load())
	}
}
