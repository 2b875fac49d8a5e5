package vnicd_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vema/node"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// The bounds of README "Limits", where vnicd keeps the state: each is filled
// to exactly its bound, then bound+1 is refused with the documented error
// and what was there stays.

// vemaMAD is a VEMA request as the EM sends it.
func vemaMAD(method vema.Method, attr uint16, am uint32, data []byte) []byte {
	var m vema.MAD
	m.BaseVersion, m.MgmtClass, m.ClassVersion, m.Method = vema.BaseVersion, vema.ClassVEMA, vema.VEMAClassVersion, method
	m.TID, m.AttrID, m.AttrMod, m.OUI = 1, attr, am, vema.IntelOUI
	copy(m.Data[:], data)
	b, _ := m.MarshalBinary()
	return b
}

func handle(t *testing.T, a *node.Agent, req []byte) vema.Status {
	t.Helper()
	resp, ok := a.Handle(req)
	if !ok {
		t.Fatal("the agent did not answer")
	}
	return vema.Status(binary.BigEndian.Uint16(resp[4:]))
}

// limitNode is an engine on in-memory devices (one frame per read, so that
// 255 ports stay small) with its management plane.
func limitNode(t *testing.T) (*engine.Engine, *vnicd.Mgmt) {
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(tEPNode), hfi.Config{LID: 0x10})
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		port, _ := taptest.Pair(taptest.Options{BatchSize: 1})
		return port, nil
	})
	return e, vnicd.NewMgmt(e, vnicd.MgmtConfig{}, nil)
}

func portInfo(vesw encap.VESWID) []byte {
	info := vema.PowerOnVESWPortInfo()
	info.VESW.VESWID, info.VESW.PKey = vesw, 0x8001
	info.VPort.EncapSLID, info.VPort.ConfigState = 0x10, vema.StateForwarding
	info.VPort.BaseMACAddr = encap.MACForLID(0x10, vesw)
	b, _ := info.MarshalBinary()
	return b
}

// TestLimitMACTableVNIC fills a VNIC's MAC table through the agent to 2048
// entries (OPA_VNIC_MAC_TBL_MAX_ENTRIES); a Set reaching index 2048 answers
// 0x001C and the port keeps its 2048 entries and digest.
func TestLimitMACTableVNIC(t *testing.T) {
	e, m := limitNode(t)
	if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 0, portInfo(1))); st != vema.StatusSuccess {
		t.Fatalf("create vport 0: %v", st)
	}
	set := func(off, n int, digest uint32) vema.Status {
		tb := vema.VESWPortMACEntries{MACTableHeader: vema.MACTableHeader{Offset: uint16(off), NumEntries: uint16(n), Digest: digest}}
		for i := off; i < off+n; i++ {
			tb.Entries = append(tb.Entries, vema.MACTableEntry{MAC: [6]byte{0x02, 0xAA, 0, 0, byte(i >> 8), byte(i)},
				DLIDSD: vema.MakeDLIDSD(uint32(0x1000+i), false)})
		}
		data, err := tb.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortMACEntries, 0, data))
	}
	for off := 0; off < vema.MACTableMaxEntries; off += vema.MaxMACEntriesPerMAD {
		if st := set(off, min(vema.MaxMACEntriesPerMAD, vema.MACTableMaxEntries-off), 0x600D); st != vema.StatusSuccess {
			t.Fatalf("Set at %d: %v", off, st)
		}
	}
	intact := func(what string) {
		t.Helper()
		macs := e.Port(0).MACTable()
		info, _ := m.Ports.VESWPortInfo(0)
		if len(macs) != vema.MACTableMaxEntries || info.VPort.MACTblDigest != 0x600D {
			t.Fatalf("%s: the port has %d MAC entries, digest %#x; want %d, 0x600D", what, len(macs), info.VPort.MACTblDigest, vema.MACTableMaxEntries)
		}
		for _, me := range macs {
			if i := int(me.MAC[4])<<8 | int(me.MAC[5]); me.DLID != uint32(0x1000+i) {
				t.Fatalf("%s: %v -> %#x", what, me.MAC, me.DLID)
			}
		}
	}
	intact("filled")
	if st := set(vema.MACTableMaxEntries, 1, 0xBAD); st != vema.StatusInvalidAttrValue {
		t.Errorf("Set of index 2048: %v, want 0x001C", st)
	}
	intact("after index 2048")
	if st := set(vema.MACTableMaxEntries-100, 101, 0xBAD); st != vema.StatusInvalidAttrValue {
		t.Errorf("Set of [1948, 2049): %v, want 0x001C", st)
	}
	intact("after [1948, 2049)")
}

// TestLimitVNICsAgent makes the 255 VNICs a node can have through the agent,
// as the EM does (vports 0..254, one vesw each); a Set of vport 255 answers
// 0x001C and makes no netdev.
func TestLimitVNICsAgent(t *testing.T) {
	e, m := limitNode(t)
	for vp := 0; vp <= vema.MaxVPort; vp++ {
		if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, uint32(vp), portInfo(encap.VESWID(vp+1)))); st != vema.StatusSuccess {
			t.Fatalf("vport %d: %v", vp, st)
		}
	}
	if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 0xFF, portInfo(300))); st != vema.StatusInvalidAttrValue {
		t.Fatalf("vport 255: %v, want 0x001C", st)
	}
	ports := e.Ports()
	if len(ports) != vema.VEMAMaxVPorts || e.Port(0xFF) != nil {
		t.Fatalf("%d ports (vport 255 made: %v), want %d", len(ports), e.Port(0xFF) != nil, vema.VEMAMaxVPorts)
	}
	for i, p := range ports {
		if p.Config().VESW.VESWID != encap.VESWID(i+1) {
			t.Fatalf("vport %d: vesw %d", i, p.Config().VESW.VESWID)
		}
	}
}

// TestLimitRuntimeVNICs fills a static node to 255 VNICs with vnic_add (vport
// 0 is the config's); the next vnic_add is refused with "every vport 0..254 is
// in use", vport 255 is out of range, and the 255 stay.
func TestLimitRuntimeVNICs(t *testing.T) {
	sock := startFakeDaemonBatch(t, fakeStatic, 1)
	for i := 1; i <= config.MaxVPort; i++ {
		var st ctl.VNICStatus
		if err := ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 100 + i, PKey: "0x8001", Owner: fmt.Sprintf("o%d", i)}, &st); err != nil || st.VPort != uint8(i) {
			t.Fatalf("vnic_add %d: %+v %v", i, st, err)
		}
	}
	for _, tc := range []struct {
		args ctl.VNICAddArgs
		err  string
	}{
		{ctl.VNICAddArgs{VESW: 99, PKey: "0x8001"}, "vport: every vport 0..254 is in use"},
		{ctl.VNICAddArgs{VPort: 255, VESW: 99, PKey: "0x8001"}, "vport: 255 is out of range"},
	} {
		if err := ctl.Call(sock, ctl.CmdVNICAdd, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("vnic_add %+v: %v; want %q", tc.args, err, tc.err)
		}
	}
	var vs []ctl.VNICStatus
	if err := ctl.Call(sock, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != vema.VEMAMaxVPorts {
		t.Fatalf("vnics: %d, %v", len(vs), err)
	}
	for i, v := range vs[1:] {
		if v.Owner != fmt.Sprintf("o%d", i+1) || v.VESW != uint16(101+i) {
			t.Fatalf("vport %d: %+v", v.VPort, v)
		}
	}
}

// TestLimitDirectoryNode installs a directory of 4096 LIDs from the FM; the
// block that would make 4097 answers 0x001C and the node keeps sending by the
// installed directory.
func TestLimitDirectoryNode(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	nd := newManagedNode(t, n)
	push := func(gen uint32, entries int) []vema.Status {
		var ents []vema.DirEntry
		ents = append(ents, vema.DirEntry{LID: fmLID, Addr: tEPFM})
		for i := 1; i < entries; i++ {
			ents = append(ents, vema.DirEntry{LID: uint32(0x100 + i), Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), 4793)})
		}
		nb := (len(ents) + vema.MaxDirEntriesPerMAD - 1) / vema.MaxDirEntriesPerMAD
		var sts []vema.Status
		send := func(attr uint16, block int, data []byte) {
			tid, _ := fm.vema(tEPNode, encap.LID16BPermissive, vema.ClassDirectory, vema.MethodSet, attr, uint32(block), data)
			sts = append(sts, vema.Status(binary.BigEndian.Uint16(fm.recvResp(tid).MAD[4:])))
		}
		for b := range nb {
			db := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, Block: uint16(b), NumBlocks: uint16(nb)},
				Entries: ents[b*vema.MaxDirEntriesPerMAD : min((b+1)*vema.MaxDirEntriesPerMAD, len(ents))]}
			data, _ := db.MarshalBinary()
			send(vema.AttrDirectoryBlock, b, data)
		}
		mb := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, NumBlocks: 1}}
		data, _ := mb.MarshalBinary()
		send(vema.AttrMulticastBlock, 0, data)
		return sts
	}
	for i, st := range push(5, vema.MaxDirEntries) {
		if st != vema.StatusSuccess {
			t.Fatalf("generation 5, block %d: %v", i, st)
		}
	}
	d := nd.hfi.Directory()
	if len(d.Endpoints()) != vema.MaxDirEntries {
		t.Fatalf("installed %d endpoints, want %d", len(d.Endpoints()), vema.MaxDirEntries)
	}
	sts := push(6, vema.MaxDirEntries+1)
	if len(sts) != 51 {
		t.Fatalf("%d blocks for 4097 entries, want 50 and a MulticastBlock", len(sts))
	}
	last := len(sts) - 2 // the last DirectoryBlock; the MulticastBlock follows
	for i, st := range sts {
		if want := map[bool]vema.Status{true: vema.StatusInvalidAttrValue, false: vema.StatusSuccess}[i == last]; st != want {
			t.Errorf("generation 6, block %d: %v, want %v", i, st, want)
		}
	}
	if nd.hfi.Directory() != d {
		t.Fatal("the refused generation replaced the installed directory")
	}
	if ep, ok := d.Endpoint(0x100 + vema.MaxDirEntries - 1); !ok || ep != netip.MustParseAddrPort("10.2.15.255:4793") {
		t.Fatalf("last entry: %v %v", ep, ok)
	}
}

// TestLimitControlConns holds MaxControlConns connections open; one more is
// answered ErrBusy at once and counted, while the held ones are still served.
func TestLimitControlConns(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "c.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })
	var held []net.Conn
	for range ctl.MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	t0 := time.Now()
	err = ctl.Call(sock, ctl.CmdCommands, nil, nil)
	if !errors.Is(err, ctl.ErrBusy) || err.Error() != ctl.ErrBusy.Error() || time.Since(t0) > time.Second {
		t.Fatalf("connection %d: %v after %v; want %q at once", ctl.MaxConns+1, err, time.Since(t0), ctl.ErrBusy)
	}
	if s.Busy.Load() != 1 {
		t.Fatalf("Busy = %d, want 1", s.Busy.Load())
	}
	// A held connection is served; when it is done its slot is free again.
	if _, err := held[0].Write([]byte(`{"cmd":"commands"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	k, err := held[0].Read(buf)
	if err != nil || !strings.Contains(string(buf[:k]), `"ok":true`) {
		t.Fatalf("held connection: %q %v", buf[:k], err)
	}
	held[0].Close()
	ok := false
	for end := time.Now().Add(2 * time.Second); !ok && time.Now().Before(end); {
		err = ctl.Call(sock, ctl.CmdCommands, nil, nil)
		ok = err == nil
		if !ok && !errors.Is(err, ctl.ErrBusy) {
			t.Fatal(err)
		}
	}
	if !ok {
		t.Fatal("the freed slot was not given to a new connection")
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestLimitNodeConfig fills each bound of a node's config to exactly its value
// and shows one more is a *ConfigError naming the field.
func TestLimitNodeConfig(t *testing.T) {
	peers := func(n int) string {
		var b strings.Builder
		b.WriteString("peers:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {lid: 0x%X, address: \"10.3.%d.%d:4793\"}\n", 0x100+i, i>>8, i&0xFF)
		}
		return b.String()
	}
	groups := func(n, members int) string {
		var b strings.Builder
		b.WriteString("multicast:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - lid: 0x%X\n    members: [0x10", 0xF00001+i)
			for j := 1; j < members; j++ {
				fmt.Fprintf(&b, ", 0x%X", 0x100+j-1)
			}
			b.WriteString("]\n")
		}
		return b.String()
	}
	macTable := func(n int) string {
		var b strings.Builder
		b.WriteString("vnics:\n  - vesw: {id: 1, pkey: 0x8001}\n    port:\n      mac_table:\n")
		for i := range n {
			fmt.Fprintf(&b, "        - {mac: \"02:bb:00:00:%02x:%02x\", dlid: 0x100}\n", i>>8, i&0xFF)
		}
		return b.String()
	}
	const node = "node: {name: a, lid: 0x10, listen: \"127.0.0.1:4793\"}\n"
	for _, tc := range []struct {
		name, ok, over, field, why string
	}{
		{"peers", node + peers(4095), node + peers(4096), "peers[4095]", "more than 4095 peers"},
		{"multicast groups", node + peers(1) + groups(256, 1), node + peers(1) + groups(257, 1), "multicast[256]", "more than 256 groups"},
		{"group members", node + peers(496) + groups(1, 496), node + peers(496) + groups(1, 497), "multicast[0].members[496]", "more than 496 members"},
		{"mac_table", node + peers(1) + macTable(2048), node + peers(1) + macTable(2049), "vnics[0].port.mac_table[2048]", "more than 2048 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := config.Parse([]byte(tc.ok)); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			_, err := config.Parse([]byte(tc.over))
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, tc.why) {
				t.Fatalf("one past the bound: %v; want field %s, %q", err, tc.field, tc.why)
			}
		})
	}
}
