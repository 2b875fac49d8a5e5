package fm

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
)

// Node (the control socket's `path host-b`) names the active node: a host
// replaced by one with another GUID leaves the old node lost on its LID,
// and a lower LID must not make the name resolve to it; and a config node
// comes before an unlisted node whose NodeDescription is that name.
func TestNodeByNamePrefersActiveConfigNode(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, `
fm: {name: fm0, listen: "10.9.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC0FF}
nodes:
  - {name: host-a, guid: 0xA, lid: 0xC080}
  - {name: host-b}
`)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for _, n := range []*node{
		{portGUID: 0xB1, name: "host-b", cfgName: "host-b", lid: 0xC000, ep: epB, state: NodeLost},
		{portGUID: 0xB2, name: "host-b", cfgName: "host-b", lid: 0xC001, ep: epC, state: NodeActive},
		{portGUID: 0xA, name: "host-a", cfgName: "host-a", lid: 0xC080, ep: epA, state: NodeActive},
		{portGUID: 0xA2, name: "host-a", lid: 0xC002, ep: silentEP(1), state: NodeActive}, // describes itself so
	} {
		f.putNode(n)
	}
	for name, want := range map[string]encap.LID{"host-b": 0xC001, "host-a": 0xC080} {
		n, ok := f.Node(name)
		if !ok || n.LID != want {
			t.Errorf("Node(%q) = %v on %v (found %v), want the active config node on %v", name, n.PortGUID, n.LID, ok, want)
		}
		if _, err := f.PathRecord(encap.LID(cfg.FM.LID), n.LID); err != nil {
			t.Errorf("path to %s: %v", name, err)
		}
	}
	if n, ok := f.Node("nobody"); ok {
		t.Errorf("Node(nobody) = %+v", n)
	}
}

// TestNodesShowPeerError: a node whose endpoint the FM's datagrams come
// back from with an error (its host runs no vnicd there) shows the error
// in the nodes view; a node that answers shows none.
func TestNodesShowPeerError(t *testing.T) {
	tr, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer tr.Close()
	live, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead := hfitest.ClosedPort(t, "127.0.0.1:0")
	cfg := mustConfig(t, `
fm: {name: fm0, listen: "127.0.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC0FF}
`)
	f := New(hfi.New(tr, hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	f.mu.Lock()
	f.putNode(&node{portGUID: 0xB1, name: "host-b", lid: 0xC000, ep: dead, state: NodeLost})
	f.putNode(&node{portGUID: 0xC1, name: "host-c", lid: 0xC001, ep: live.LocalAddr(), state: NodeActive})
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.h.Run(ctx)
	pkt := make([]byte, 64)
	for _, ep := range []netip.AddrPort{dead, live.LocalAddr()} {
		f.send.SendTo(pkt, ep)
	}
	var got []NodeStatus
	waitfor.Poll(5*time.Second, func() bool { got = f.Nodes(); return len(got) == 2 && got[0].Error != "" })
	want := "connection refused (ICMP port unreachable from 127.0.0.1), once, " // "0s ago"
	if len(got) != 2 || got[0].Name != "host-b" || !strings.HasPrefix(got[0].Error, want) || got[1].Error != "" {
		t.Fatalf("nodes %+v; want host-b with %q, host-c with no error", got, want)
	}
	// host-b answers (back up): its error is over.
	f.mu.Lock()
	f.nodes[0xB1].answeredAt = time.Now()
	f.mu.Unlock()
	if got = f.Nodes(); got[0].Error != "" {
		t.Fatalf("host-b shows %q after it answered", got[0].Error)
	}
}

// Nodes gives how long ago each node last answered a poll, and nothing for
// one that never has.
func TestNodesShowLastAnswer(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	f.mu.Lock()
	f.putNode(&node{portGUID: 0xB1, name: "host-b", lid: 0xC000, ep: epB, state: NodeLost, answeredAt: time.Now().Add(-75 * time.Second)})
	f.putNode(&node{portGUID: 0xC1, name: "host-c", lid: 0xC001, ep: epC, state: NodeJoining})
	f.mu.Unlock()
	got := f.Nodes()
	if len(got) != 2 || got[0].Name != "host-b" || got[0].LastAnswer != "1m15s ago" || got[1].LastAnswer != "" {
		t.Fatalf("nodes %+v; want host-b last answering 1m15s ago, host-c never", got)
	}
}
