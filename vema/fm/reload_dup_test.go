package fm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi/hfitest"
)

const dupFabric = `
fm: {name: fm0, listen: "10.9.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC0FF}
nodes:
  - {name: host-a, lid: 0x10}
vesws:
  - id: 1
    pkey: 0x8001
    mcast_dlid: 0xF00001
    members:
      - {node: host-a, vport: 0}
`

// A reload that lists a name two active unlisted hosts share makes one of
// them (the lower LID) that config node, not both: the other stays an
// unlisted node and gets none of the config node's ports, as a join would
// leave a second host with one name (docs/management.md §2.3).
func TestReloadTwoNodesOneEntry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	net := hfitest.NewNetwork()
	f, stop := startFM(t, ctx, net, mustConfig(t, dupFabric))
	t.Cleanup(stop)
	newFakeNode(t, ctx, net, "host-a", epA, fmEP, 0)
	x1 := newFakeNode(t, ctx, net, "host-x", epB, fmEP, 0)
	x2 := newFakeNode(t, ctx, net, "host-x", epC, fmEP, 0)
	for i, x := range []*fakeNode{x1, x2} { // two hosts, one name
		x.mu.Lock()
		x.guid = uint64(0x111 * (i + 1))
		x.mu.Unlock()
	}
	waitFor(t, "three active nodes", 5*time.Second, func() bool {
		k := 0
		for _, n := range f.Nodes() {
			if n.State == NodeActive {
				k++
			}
		}
		return k == 3
	})
	cfg := mustConfig(t, strings.NewReplacer( // dupFabric with host-x listed, a member
		"  - {name: host-a, lid: 0x10}\n", "  - {name: host-a, lid: 0x10}\n  - {name: host-x}\n",
		"      - {node: host-a, vport: 0}\n", "      - {node: host-a, vport: 0}\n      - {node: host-x, vport: 0}\n",
	).Replace(dupFabric))
	if err := f.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	first, second := x1, x2
	if l1, _, _, _, _, _ := x1.snapshot(); l1 != 0xC000 {
		first, second = x2, x1
	}
	waitTable(t, first, "the lower-LID host-x configured", 0)
	time.Sleep(time.Second) // polls and pushes that would configure the other
	matched := 0
	for _, n := range f.Nodes() {
		if n.Config == "host-x" {
			matched++
			if n.LID != 0xC000 {
				t.Errorf("host-x is the node on %v, want the lower LID 0xC000", n.LID)
			}
		}
		if n.State != NodeActive {
			t.Errorf("node %s %v is %s after the reload", n.Name, n.PortGUID, n.State)
		}
	}
	if matched != 1 {
		t.Errorf("%d nodes are config node host-x, want 1: %+v", matched, f.Nodes())
	}
	if _, vp, _, _, _, _ := second.snapshot(); len(vp) != 0 {
		t.Errorf("the second host-x got host-x's ports: %v", vp)
	}
}
