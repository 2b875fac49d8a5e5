package fm

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// answerSMPs answers, through f.handle, every pending SMP of attr as the
// node at the request's endpoint would, with data(ep).
func answerSMPs(t *testing.T, f *FM, attr uint16, data func(ep netip.AddrPort) []byte) {
	t.Helper()
	for _, r := range f.pending {
		mp, err := encap.MgmtPayload(r.pkt)
		if err != nil {
			t.Fatal(err)
		}
		var s vema.SMP
		if s.UnmarshalBinary(mp.MAD) != nil || s.AttrID != attr {
			continue
		}
		s.Method = vema.MethodGetResp
		s.Status = vema.StatusDirection
		s.Data = data(r.ep)
		mad, _ := s.MarshalBinary()
		in := inbound{mad: mad, slid: encap.LID16BPermissive, src: r.ep}
		f.handle(&in)
	}
}

// pendingPortInfoLIDs counts the PortInfo Sets in flight by LID.
func pendingPortInfoLIDs(f *FM) map[uint32]int {
	lids := map[uint32]int{}
	for _, r := range f.pending {
		mp, _ := encap.MgmtPayload(r.pkt)
		var s vema.SMP
		if s.UnmarshalBinary(mp.MAD) != nil || s.AttrID != vema.SMPAttrPortInfo || s.Method != vema.MethodSet {
			continue
		}
		var pi vema.PortInfo
		pi.UnmarshalBinary(s.Data)
		lids[uint32(pi.LID)]++
	}
	return lids
}

// Joins that overlap (both NodeDescriptions answered before either PortInfo
// Set) must not be given the same LID: the LID is reserved when chosen.
func TestOverlappingJoinsGetDistinctLIDs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes map[netip.AddrPort]string // endpoint -> NodeDescription
	}{
		{"pool", map[netip.AddrPort]string{silentEP(1): "new-1", silentEP(2): "new-2"}},
		{"fixed LID, one name twice", map[netip.AddrPort]string{silentEP(1): "host-a", silentEP(2): "host-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := hfitest.NewNetwork()
			cfg := mustConfig(t, testFabric)
			f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
			f.settled = true
			guid := func(ep netip.AddrPort) uint64 { return 0x1000 + uint64(ep.Addr().As4()[3]) }
			for ep := range tc.nodes {
				p := announceFrom(guid(ep), ep)
				f.handle(&p)
			}
			answerSMPs(t, f, vema.SMPAttrNodeInfo, func(ep netip.AddrPort) []byte {
				ni := vema.NodeInfo{BaseVersion: 0x80, ClassVersion: 0x80, NodeType: 1, NumPorts: 1, NodeGUID: guid(ep), PortGUID: guid(ep)}
				b, _ := ni.MarshalBinary()
				return b
			})
			answerSMPs(t, f, vema.SMPAttrNodeDescription, func(ep netip.AddrPort) []byte {
				nd := vema.NodeDescriptionFrom(tc.nodes[ep])
				b, _ := nd.MarshalBinary()
				return b
			})
			lids := pendingPortInfoLIDs(f)
			for l, k := range lids {
				if k > 1 {
					t.Errorf("LID %#x set on %d nodes at once (%v)", l, k, lids)
				}
			}
			answerSMPs(t, f, vema.SMPAttrPortInfo, func(ep netip.AddrPort) []byte {
				for _, r := range f.pending {
					if r.ep == ep {
						mp, _ := encap.MgmtPayload(r.pkt)
						var s vema.SMP
						s.UnmarshalBinary(mp.MAD)
						return s.Data // the SMA answers with the state it took
					}
				}
				return nil
			})
			held := map[uint32]int{}
			for _, n := range f.nodes {
				if n.state == NodeActive {
					held[n.lid]++
				}
			}
			for l, k := range held {
				if k > 1 {
					t.Errorf("LID %#x held by %d active nodes", l, k)
				}
			}
		})
	}
}

// A second host with a config node's name (another GUID) must not be given
// that node's fixed LID while the first is active.
func TestDuplicateNameDoesNotShareFixedLID(t *testing.T) {
	fb := newFabric(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := newFakeNode(t, ctx, fb.net, "host-a", netip.MustParseAddrPort("10.9.0.30:4793"), fmEP, 0)
	d.mu.Lock()
	d.guid = 0x0200000000000abc
	d.mu.Unlock()
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		if la, _, _, _, _, _ := fb.a.snapshot(); la != 0x10 {
			t.Fatalf("host-a lost its fixed LID 0x10 (holds %#x)", la)
		}
		if ld, _, _, _, _, _ := d.snapshot(); ld == 0x10 {
			t.Fatalf("the second host-a was given host-a's fixed LID 0x10")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A second host with a config node's name (another GUID, no fixed LID) is
// not joined while the first is active: the config node stays one host.
func TestDuplicateNameNotJoined(t *testing.T) {
	fb := newFabric(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := newFakeNode(t, ctx, fb.net, "host-b", netip.MustParseAddrPort("10.9.0.31:4793"), fmEP, 0)
	d.mu.Lock()
	d.guid = 0x0200000000000abd
	d.mu.Unlock()
	// A window for what must not happen: the FM giving the node a second LID.
	time.Sleep(time.Second)
	active := 0
	for _, n := range fb.fm.Nodes() {
		if n.Config == "host-b" && n.State == NodeActive {
			active++
			if n.Endpoint != epB {
				t.Errorf("host-b active at %v, want %v", n.Endpoint, epB)
			}
		}
	}
	if lid, _, _, _, _, _ := d.snapshot(); active != 1 || lid != 0 {
		t.Errorf("%d active host-b nodes; the second holds LID %#x", active, lid)
	}
}

// A second host announcing an active node's port GUID (two hosts with one
// name and a derived GUID) does not move the node while it answers its
// polls.
func TestDuplicateGUIDDoesNotMoveNode(t *testing.T) {
	fb := newFabric(t)
	waitFor(t, "host-b polled", 3*time.Second, func() bool {
		fb.fm.mu.Lock()
		defer fb.fm.mu.Unlock()
		for _, n := range fb.fm.nodes {
			if n.cfgName == "host-b" {
				return !n.answeredAt.IsZero()
			}
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	newFakeNode(t, ctx, fb.net, "host-b", netip.MustParseAddrPort("10.9.0.32:4793"), fmEP, 0)
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		if n, _ := fb.fm.Node("host-b"); n.Endpoint != epB || n.State != NodeActive {
			t.Fatalf("host-b %s at %v, want active at %v", n.State, n.Endpoint, epB)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A node that restarts at another address (its old one gone) is moved at
// its first announce from there: the FM asks at the old endpoint and,
// with no answer, takes the move, rather than wait for the polls there to
// fail (two poll intervals and more at the defaults).
func TestNodeMovedAtFirstAnnounce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	net := hfitest.NewNetwork()
	f, stop := startFM(t, ctx, net, mustConfig(t, testFabric))
	defer stop()
	bctx, bstop := context.WithCancel(ctx)
	newFakeNode(t, bctx, net, "host-b", epB, fmEP, 0)
	waitFor(t, "host-b polled", 3*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, n := range f.nodes {
			if n.cfgName == "host-b" && n.state == NodeActive && !n.answeredAt.IsZero() {
				f.pollEvery = 3 * time.Second // polls alone would take seconds to notice
				return true
			}
		}
		return false
	})
	bstop() // host-b's process ends; it starts again elsewhere
	net.Listen(epB).Close()
	moved := netip.MustParseAddrPort("10.9.0.33:4793")
	t0 := time.Now()
	newFakeNode(t, ctx, net, "host-b", moved, fmEP, 0)
	waitFor(t, "host-b active at its new endpoint", 2*time.Second, func() bool {
		n, _ := f.Node("host-b")
		return n.Endpoint == moved && n.State == NodeActive
	})
	if d := time.Since(t0); d > time.Second {
		t.Errorf("moved after %v", d)
	}
}
