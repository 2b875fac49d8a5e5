package fm

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	"go.uber.org/zap"
)

var (
	fmEP = netip.MustParseAddrPort("10.9.0.1:4793")
	epA  = netip.MustParseAddrPort("10.9.0.10:4793")
	epB  = netip.MustParseAddrPort("10.9.0.11:4793")
	epC  = netip.MustParseAddrPort("10.9.0.12:4793")
)

const testFabric = `
fm: {name: fm0, listen: "10.9.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC0FF}
nodes:
  - {name: host-a, lid: 0x10}
  - {name: host-b}
  - {name: host-c}
vesws:
  - id: 1
    name: red
    pkey: 0x8001
    eth_mtu: 9000
    mcast_dlid: 0xF00001
    default_ports: [{index: 0, node: host-a}]
    rc: {ipv4: 2}
    members:
      - {node: host-a, vport: 0}
      - {node: host-b, vport: 0}
      - {node: host-c, vport: 0}
  - id: 2
    name: blue
    pkey: 0x8002
    mcast_dlid: 0xF00002
    members:
      - {node: host-a, vport: 1}
      - {node: host-b, vport: 1, mac: "02:aa:bb:cc:dd:ee"}
`

func mustConfig(t testing.TB, text string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitTable waits until the fake node has taken a MAC table for vport (its
// digest is no longer 0): the member is configured.
func waitTable(t *testing.T, f *fakeNode, what string, vport uint8) {
	t.Helper()
	waitFor(t, what, 5*time.Second, func() bool {
		_, vp, _, _, _, _ := f.snapshot()
		return vp[vport].VPort.MACTblDigest != 0
	})
}

// waitPorts waits until the fake node has n vports.
func waitPorts(t *testing.T, f *fakeNode, what string, n int) {
	t.Helper()
	waitFor(t, what, 5*time.Second, func() bool {
		_, vp, _, _, _, _ := f.snapshot()
		return len(vp) == n
	})
}

// startFM runs an FM at fmEP with fast timers until the returned cancel.
func startFM(t *testing.T, ctx context.Context, n *hfitest.Network, cfg *Config) (*FM, context.CancelFunc) {
	return startFMSettle(t, ctx, n, cfg, 500*time.Millisecond)
}

// startFMSettle is startFM with a start-up sweep of at most settle.
func startFMSettle(t *testing.T, ctx context.Context, n *hfitest.Network, cfg *Config, settle time.Duration) (*FM, context.CancelFunc) {
	return startFMFile(t, ctx, n, cfg, settle, "")
}

// startFMFile is startFMSettle with a MAC file at macFile ("" for none).
func startFMFile(t *testing.T, ctx context.Context, n *hfitest.Network, cfg *Config, settle time.Duration, macFile string) (*FM, context.CancelFunc) {
	return startFMLog(t, ctx, n, cfg, settle, macFile, nil)
}

// startFMLog is startFMFile with the FM logging to log.
func startFMLog(t *testing.T, ctx context.Context, n *hfitest.Network, cfg *Config, settle time.Duration, macFile string, log *zap.Logger) (*FM, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	h := hfi.New(n.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, VerifyICRC: true, TrustAnyMgmtSource: true})
	f := New(h, cfg, log)
	if err := f.SetMACFile(macFile); err != nil {
		t.Errorf("SetMACFile: %v", err)
	}
	f.pollEvery = 200 * time.Millisecond
	f.retryTimeout = 100 * time.Millisecond
	f.settleBy = time.Now().Add(settle) // the start-up sweep, short for tests
	done := make(chan struct{}, 2)
	go func() { h.Run(ctx); done <- struct{}{} }()
	go func() { f.Run(ctx); done <- struct{}{} }()
	var once sync.Once
	return f, func() { once.Do(func() { cancel(); <-done; <-done }) }
}

type fabric struct {
	net     *hfitest.Network
	fm      *FM
	stop    context.CancelFunc
	a, b, c *fakeNode
}

func newFabric(t *testing.T) *fabric { return newFabricFile(t, "") }

// newFabricFile is newFabric with the FM keeping a MAC file at macFile.
func newFabricFile(t *testing.T, macFile string) *fabric { return newFabricLog(t, macFile, nil) }

// newFabricLog is newFabricFile with the FM logging to log.
func newFabricLog(t *testing.T, macFile string, log *zap.Logger) *fabric {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fb := &fabric{net: hfitest.NewNetwork()}
	fb.fm, fb.stop = startFMLog(t, ctx, fb.net, mustConfig(t, testFabric), 500*time.Millisecond, macFile, log)
	t.Cleanup(func() { fb.stop() })
	fb.a = newFakeNode(t, ctx, fb.net, "host-a", epA, fmEP, 0)
	fb.b = newFakeNode(t, ctx, fb.net, "host-b", epB, fmEP, 0)
	fb.c = newFakeNode(t, ctx, fb.net, "host-c", epC, fmEP, 0xC007) // holds a pool LID already
	fb.waitActive(t, 3)
	return fb
}

func (fb *fabric) waitActive(t *testing.T, want int) {
	t.Helper()
	waitFor(t, "nodes to join", 5*time.Second, func() bool {
		k := 0
		for _, n := range fb.fm.Nodes() {
			if n.State == NodeActive {
				k++
			}
		}
		return k == want
	})
}

func TestJoinAssignsLIDs(t *testing.T) {
	fb := newFabric(t)
	want := map[string]struct {
		lid      encap.LID
		ep       netip.AddrPort
		extended bool
	}{
		"host-a": {0x10, epA, false},  // fixed
		"host-b": {0xC000, epB, true}, // lowest free pool LID
		"host-c": {0xC007, epC, true}, // the pool LID it held
	}
	for _, n := range fb.fm.Nodes() {
		w := want[n.Name]
		if n.LID != w.lid || n.Endpoint != w.ep || n.Extended != w.extended || n.Config != n.Name {
			t.Errorf("%s: lid %v ep %v extended %v config %q, want %v %v %v", n.Name, n.LID, n.Endpoint, n.Extended, n.Config, w.lid, w.ep, w.extended)
		}
	}
	for _, f := range []*fakeNode{fb.a, fb.b, fb.c} {
		if lid, _, _, _, _, _ := f.snapshot(); encap.LID(lid) != want[f.name].lid {
			t.Errorf("%s holds LID %#x, want %v", f.name, lid, want[f.name].lid)
		}
	}
}

func TestDirectoryPush(t *testing.T) {
	fb := newFabric(t)
	wantDir := []dirEntry{{1, fmEP}, {0x10, epA}, {0xC000, epB}, {0xC007, epC}}
	wantGroups := []dirGroup{{0xF00001, []uint32{0x10, 0xC000, 0xC007}}, {0xF00002, []uint32{0x10, 0xC000}}}
	for _, f := range []*fakeNode{fb.a, fb.b, fb.c} {
		waitFor(t, f.name+"'s directory", 5*time.Second, func() bool {
			_, _, _, dir, groups, _ := f.snapshot()
			for i := range groups {
				slices.Sort(groups[i].Members)
			}
			return slices.Equal(dir, wantDir) && slices.EqualFunc(groups, wantGroups, func(a, b dirGroup) bool {
				return a.MLID == b.MLID && slices.Equal(a.Members, b.Members)
			})
		})
	}
}

func TestEMPushesVESWPortInfo(t *testing.T) {
	fb := newFabric(t)
	waitFor(t, "host-b's vports", 5*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		return len(vp) == 2 && vp[0].VPort.MACTblDigest != 0 && vp[1].VPort.MACTblDigest != 0
	})
	_, vp, tables, _, _, _ := fb.b.snapshot()
	red := vp[0]
	w := red.VESW
	if w.VESWID != 1 || w.PKey != 0x8001 || w.UMcastDLID != 0xF00001 || w.EthMTU != 9000 ||
		w.DefPortMask != 1 || w.UUcastDLID[0] != 0x10 || w.RC != 2<<encap.RCIPv4 {
		t.Errorf("red VESWInfo = %+v", w)
	}
	p := red.VPort
	if p.EncapSLID != 0xC000 || p.ConfigState != vema.StateForwarding || p.PortNum != 0 ||
		p.BaseMACAddr != encap.MACForLID(0xC000, 1) {
		t.Errorf("red vport = slid %v state %d port %d mac % x", p.EncapSLID, p.ConfigState, p.PortNum, p.BaseMACAddr)
	}
	if blue := vp[1]; blue.VPort.BaseMACAddr != [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee} || blue.VESW.VESWID != 2 {
		t.Errorf("blue vport: mac % x vesw %d", blue.VPort.BaseMACAddr, blue.VESW.VESWID)
	}
	// blue's table has one entry: host-b's fixed MAC -> host-b's LID. Every blue member has it.
	for _, f := range []*fakeNode{fb.a, fb.b} {
		waitFor(t, f.name+"'s blue table", 3*time.Second, func() bool {
			_, _, tables, _, _, _ = f.snapshot()
			tb := tables[1]
			return len(tb) == 1 && tb[0].MAC == [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee} && tb[0].DLID() == 0xC000
		})
	}
	if got := len(tables[0]); got != 0 {
		t.Errorf("red table has %d entries, want none (all MACs derived)", got)
	}
	// No table went to a port before the port was made: a node that joins
	// while the other's VESWPortInfo Set is in flight gets its table after.
	for _, f := range []*fakeNode{fb.a, fb.b} {
		if n := f.refused(); n != 0 {
			t.Errorf("%s refused %d MAC table Sets (sent before its VESWPortInfo Set)", f.name, n)
		}
	}
}

func TestTrapUpdatesMACTables(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	mac := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.trapMACChange(0, mac)
	waitRedTables(t, fb, mac)
}

// waitRedTables waits until every node's red table holds one entry: mac,
// host-c's.
func waitRedTables(t *testing.T, fb *fabric, mac [6]byte) {
	t.Helper()
	for _, f := range []*fakeNode{fb.a, fb.b, fb.c} {
		waitFor(t, f.name+"'s red table", 3*time.Second, func() bool {
			_, _, tables, _, _, _ := f.snapshot()
			tb := tables[0]
			return len(tb) == 1 && tb[0].MAC == mac && tb[0].DLID() == 0xC007
		})
	}
}

// A VEMA trap carrying a node's LID from another endpoint is dropped and
// counted: the FM does not read the node's MAC for it. Host-c's MAC changed
// and its trap was lost; host-a sends host-c's trap, which the FM took
// before (matching by LID only) and learnt the MAC from. Host-c's own trap
// is taken.
func TestTrapFromAnotherEndpointDropped(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	mac := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.mu.Lock()
	fb.c.netdevs[0] = mac
	fb.c.mu.Unlock()
	before := fb.fm.BadMADs.Load()
	fb.a.sendTrapOf(fb.c, 0)
	waitFor(t, "the FM to drop host-c's trap from host-a", 3*time.Second, func() bool { return fb.fm.BadMADs.Load() == before+1 })
	time.Sleep(300 * time.Millisecond) // a MAC read and push, had the FM made them, take a few ms
	for _, f := range []*fakeNode{fb.a, fb.b, fb.c} {
		if _, _, tables, _, _, _ := f.snapshot(); len(tables[0]) != 0 {
			t.Fatalf("%s's red table %v after a trap from another endpoint; want it empty", f.name, tables[0])
		}
	}
	fb.c.sendTrapOf(fb.c, 0)
	waitRedTables(t, fb, mac)
}

func TestReloadRemovesVESW(t *testing.T) {
	fb := newFabric(t)
	waitFor(t, "blue configured", 5*time.Second, func() bool {
		_, va, _, _, _, _ := fb.a.snapshot()
		_, vb, _, _, _, _ := fb.b.snapshot()
		return len(va) == 2 && len(vb) == 2
	})
	cfg := mustConfig(t, testFabric[:bytes.Index([]byte(testFabric), []byte("  - id: 2"))])
	if err := fb.fm.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeNode{fb.a, fb.b} {
		waitFor(t, f.name+" to get DeleteVESW", 3*time.Second, func() bool {
			_, vp, _, _, _, del := f.snapshot()
			_, blue := vp[1]
			return slices.Equal(del, []uint8{1}) && !blue
		})
	}
	if _, _, _, _, _, del := fb.c.snapshot(); len(del) != 0 {
		t.Errorf("host-c got DeleteVESW for %v; it was never on blue", del)
	}
	waitFor(t, "the directory without group 0xF00002", 3*time.Second, func() bool {
		_, _, _, _, groups, _ := fb.a.snapshot()
		return len(groups) == 1 && groups[0].MLID == 0xF00001
	})
	bad := *cfg
	bad.FM.LID = 2
	if err := fb.fm.Reload(&bad); err == nil {
		t.Error("a reload changing fm.lid was accepted")
	}
	// The name labels the FM's logs and HFI metrics, fixed at start: a
	// rename (with the GUID and socket kept, so that only it changes) is
	// refused like the rest of the identity.
	renamed := *cfg
	renamed.FM.Name = "fm1"
	if err := fb.fm.Reload(&renamed); err == nil || !strings.Contains(err.Error(), "fm.name changed") {
		t.Errorf("a reload renaming the FM: err = %v, want fm.name changed", err)
	}
	if got := fb.fm.Config().FM.Name; got != "fm0" {
		t.Errorf("after the refused rename the FM is named %q, want fm0", got)
	}
}

func TestNodeRestartRejoinsWithSameLID(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.b.restart()
	waitFor(t, "host-b to rejoin and be configured", 5*time.Second, func() bool {
		lid, vp, _, _, _, _ := fb.b.snapshot()
		return lid == 0xC000 && len(vp) == 2 && vp[0].VPort.EncapSLID == 0xC000
	})
}

func TestFMRestartKeepsLIDs(t *testing.T) {
	fb := newFabric(t)
	before := fb.fm.Nodes()
	fb.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A different pool order would hand out other LIDs if the FM ignored
	// what nodes hold: host-c held 0xC007 and host-b 0xC000.
	f2, stop2 := startFM(t, ctx, fb.net, mustConfig(t, testFabric))
	defer stop2()
	fb.fm = f2
	fb.waitActive(t, 3)
	after := f2.Nodes()
	for i := range before {
		if before[i].Name != after[i].Name || before[i].LID != after[i].LID {
			t.Errorf("after an FM restart %s has LID %v, before %s had %v", after[i].Name, after[i].LID, before[i].Name, before[i].LID)
		}
	}
}

func TestNodeDropAfterMissedPolls(t *testing.T) {
	fb := newFabric(t)
	fb.net.Listen(epC) // replaces host-c's transport: its packets go nowhere now
	waitFor(t, "host-c dropped", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-c")
		// Its announces still arrive, so it alternates between lost and
		// a join that fails; either way it is no longer active.
		return n.State != NodeActive
	})
	waitFor(t, "host-c out of host-a's directory", 3*time.Second, func() bool {
		_, _, _, dir, _, _ := fb.a.snapshot()
		return len(dir) == 3
	})
}

// TestSAPathRecordGolden checks the SA's answers byte for byte.
func TestSAPathRecordGolden(t *testing.T) {
	fb := newFabric(t)
	query := func(slid, dlid encap.LID) []byte {
		t.Helper()
		q := vema.PathRecord{SLID: slid, DLID: dlid}
		data, _ := q.MarshalBinary()
		m := vema.SAMAD{SAHeader: vema.SAHeader{MADHeader: vema.MADHeader{BaseVersion: 0x80, MgmtClass: vema.ClassSubnAdm,
			ClassVersion: 0x80, Method: vema.MethodGet, TID: 0x1234, AttrID: vema.SAAttrPathRecord},
			CompMask: vema.CompMaskSLID | vema.CompMaskDLID}, Data: data}
		mad, _ := m.MarshalBinary()
		fb.a.mu.Lock()
		fb.a.out(encap.MgmtParams{SLID: 0x10, DLID: 1, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
		fb.a.mu.Unlock()
		select {
		case r := <-fb.a.saResp:
			var resp vema.SAMAD
			if err := resp.UnmarshalBinary(r); err != nil {
				t.Fatal(err)
			}
			if resp.Method != vema.MethodGetResp || resp.TID != 0x1234 || resp.Status != 0 || resp.AttrOffset != 8 {
				t.Fatalf("SA header: method %v tid %#x status %v attr_offset %d", resp.Method, resp.TID, resp.Status, resp.AttrOffset)
			}
			return resp.Data[:vema.PathRecordLen]
		case <-time.After(2 * time.Second):
			t.Fatal("no SA answer")
		}
		return nil
	}
	guidA := uint64(encap.GUIDFromName("host-a"))
	guidFM := uint64(encap.GUIDFromName("fm0"))
	be64 := func(v uint64) string {
		var b [8]byte
		for i := range b {
			b[i] = byte(v >> (56 - 8*i))
		}
		return hex.EncodeToString(b[:])
	}
	for _, tc := range []struct {
		name       string
		slid, dlid encap.LID
		want       string
	}{
		{
			// 0x10 -> 0xC000: extended, so special GIDs and hop limit 1.
			name: "extended", slid: 0x10, dlid: 0xC000,
			want: "0000000000000000" + // 0 service_id
				"fe80000000000000" + "00066a000000c000" + // 8 dgid: prefix, 00 06 6A 00, LID 0xC000
				"fe80000000000000" + "00066a0000000010" + // 24 sgid: LID 0x10
				"0000c000" + // 40 dlid
				"00000010" + // 44 slid
				"00000001" + // 48 raw_traffic 0, flow_label 0, hop_limit 1
				"00" + // 52 traffic_class
				"81" + // 53 reversible 1, numb_path 1
				"ffff" + // 54 pkey
				"10" + // 56 l2_16B only
				"00" + "00" + "00" + // 57 qos_priority, 58 sl 0, 59 reserved
				"85" + // 60 mtu selector 2 (exactly), mtu 5 (4096)
				"90" + // 61 rate selector 2, rate 16 (100 Gb/s)
				"00" + "00", // 62 packet life time, 63 preference
		},
		{
			// 0x10 -> 0x1 (the FM): ordinary GIDs, hop limit 0, 9B and 16B.
			name: "non-extended", slid: 0x10, dlid: 0x1,
			want: "0000000000000000" +
				"fe80000000000000" + be64(guidFM) + // 8 dgid: prefix + FM port GUID
				"fe80000000000000" + be64(guidA) + // 24 sgid: prefix + host-a port GUID
				"00000001" + "00000010" + // 40 dlid, 44 slid
				"00000000" + // 48 hop_limit 0
				"00" + "81" + "ffff" +
				"30" + // 56 l2_9B and l2_16B
				"000000" + "85" + "90" + "0000",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hex.EncodeToString(query(tc.slid, tc.dlid))
			if got != tc.want {
				t.Errorf("path record\n got %s\nwant %s", got, tc.want)
			}
			r, err := fb.fm.PathRecord(tc.slid, tc.dlid)
			b, _ := r.MarshalBinary()
			if err != nil || hex.EncodeToString(b) != tc.want {
				t.Errorf("PathRecord API = %x, %v", b, err)
			}
		})
	}
	if _, err := fb.fm.PathRecord(0x10, 0x999); err == nil {
		t.Error("a path to an unknown LID was answered")
	}
}

// TestNodeMovedIsNotDroppedForOldPolls: a node's address changes under a
// running vnicd (it listens on the wildcard address), so the polls the FM
// sends to its old endpoint fail; then it announces from its new one. It is
// alive there, and the polls that were out to the old endpoint when it
// announced must not drop it (they did: the node left every directory until
// its next announce).
func TestNodeMovedIsNotDroppedForOldPolls(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, VerifyICRC: true, TrustAnyMgmtSource: true}), cfg, nil)
	f.settled = true
	guid := uint64(encap.GUIDFromName("host-b"))
	n := &node{portGUID: guid, name: "host-b", cfgName: "host-b", lid: 0xC000, ep: epB, state: NodeActive}
	f.putNode(n)
	moved := netip.MustParseAddrPort("10.9.0.21:4793")

	// Polls to the old endpoint, which nothing answers: each one missed,
	// up to one short of a drop, and one more out when the node announces.
	now := time.Now()
	f.lastPoll = now
	f.poll()
	for i := 1; i < MissedPollsToDrop; i++ {
		now = now.Add(2 * f.pollEvery)
		f.tick(now)
	}
	if n.misses != MissedPollsToDrop-1 || !n.pollOut || n.state != NodeActive {
		t.Fatalf("before the announce: misses %d, poll out %v, state %s", n.misses, n.pollOut, n.state)
	}
	ntc := vema.SMPNotice{GenericType: vema.NoticeGenericInfo, ProdTypeLSB: vema.NoticeProdCA,
		TrapNum: vema.TrapChangeCapability, IssuerLID: 0xC000, IssuerGID: gidOf(encap.DefaultSubnetPrefix, guid)}
	data, _ := ntc.MarshalBinary()
	s := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: 0x80, MgmtClass: vema.ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: vema.MethodTrap, TID: 1, AttrID: vema.SMPAttrNotice}, Data: data}
	mad, _ := s.MarshalBinary()
	f.handle(&inbound{mad: mad, slid: 0xC000, src: moved})
	if n.ep != moved {
		t.Fatalf("endpoint %v after the announce from %v", n.ep, moved)
	}
	// The poll that went to the old endpoint times out.
	now = now.Add(2 * f.pollEvery)
	f.tick(now)
	if n.state != NodeActive || n.ep != moved {
		t.Fatalf("after the announce from %v and a poll to %v timing out: state %s, endpoint %v, misses %d; want active at %v",
			moved, epB, n.state, n.ep, n.misses, moved)
	}
}

// The vesws answer gives PKeys and multicast LIDs in hex, as vnicd's
// answers and the configs do.
func TestVESWStatusJSONHex(t *testing.T) {
	fb := newFabric(t)
	b, err := json.Marshal(fb.fm.VESWs())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"pkey":"0x8001"`, `"mcast_dlid":"0xF00001"`, `"pkey":"0x8002"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("vesws answer lacks %s: %s", want, b)
		}
	}
}
