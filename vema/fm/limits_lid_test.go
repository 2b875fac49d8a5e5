package fm

import (
	"fmt"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// TestLimitChooseLIDCost: with the node table full, picking the lowest free
// pool LID for one more join scans the nodes once, not once per pool LID
// tried. The quadratic scan took some 160 ms per join here (minutes of the
// FM's loop for a fabric of MaxNodes joining from scratch, polls timing out
// behind it); the bound leaves a loaded machine's -race run room.
func TestLimitChooseLIDCost(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, fabricText(MaxNodes))
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for i := range MaxNodes - 1 { // the pool's first LIDs all held
		n := &node{portGUID: uint64(0x1000 + i), lid: cfg.Pool.Start + uint32(i), ep: silentEP(i), state: NodeActive}
		f.nodes[n.portGUID] = n
	}
	f.settled = true // pool LIDs are handed out after the start-up sweep
	n := &node{portGUID: 0x99999, state: NodeJoining}
	f.nodes[n.portGUID] = n
	best := time.Hour
	for range 3 {
		t0 := time.Now()
		lid, err := f.chooseLID(n, 0)
		best = min(best, time.Since(t0))
		if want := cfg.Pool.Start + MaxNodes - 1; err != nil || lid != want {
			t.Fatalf("chooseLID = %#x, %v; want %#x", lid, err, want)
		}
	}
	if best > 40*time.Millisecond {
		t.Errorf("choosing a LID among %d nodes took %v, want well under 40ms", MaxNodes, best)
	}
}

// TestLimitVESWTablePushCost: a trap's MAC table push to every member of
// a vesw (pushVESWTables), and a join's (repushDefaultPortsReferencing),
// compute the vesw's table once, not once per member: that cost members²
// × nodes under f.mu, 1.5 s here at 512 members and some 110 s at the
// 2048 a vesw may have, the FM's loop stopped meanwhile.
func TestLimitVESWTablePushCost(t *testing.T) {
	const members = 512
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, fabricText(members, vesw(1, 0, onePerNode(members, 0))))
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	f.settled = true
	var joined *node
	for i := range members {
		n := &node{portGUID: uint64(0x1000 + i), cfgName: fmt.Sprintf("n%d", i), lid: cfg.Pool.Start + uint32(i),
			ep: silentEP(i), state: NodeActive}
		f.nodes[n.portGUID] = n
		f.members[memberKey{1, n.cfgName, 0}] = &memberState{info: []byte{1}} // configured
		joined = n
	}
	for name, push := range map[string]func(){
		"trap": func() { f.pushVESWTables(&f.cfg.VESWs[0]) },
		"join": func() { f.repushDefaultPortsReferencing(joined) },
	} {
		for _, st := range f.members {
			st.digest, st.tableLen = 0, 0 // every member needs the table
		}
		t0 := time.Now()
		push()
		if took := time.Since(t0); took > 300*time.Millisecond {
			t.Errorf("%s: pushing the MAC table to %d members took %v, want well under 300ms", name, members, took)
		}
		for tid := range f.pending {
			f.cancel(tid)
		}
	}
}

// TestLimitStatusCost: the status calls (the control socket's fabric,
// vesws and path by name, every metrics scrape) hold f.mu, which stops the
// FM's loop: at MaxNodes they must not take quadratic time. An insertion
// sort of the nodes took some 200 ms, a walk of every node per vesw
// member some 130 ms.
func TestLimitStatusCost(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, fabricText(MaxNodes, vesw(1, 0, onePerNode(2000, 0)), vesw(2, 0xF00001, onePerNode(496, 2000))))
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for i := range MaxNodes { // in map order: the sort has work to do
		n := &node{portGUID: uint64(0x1000 + i), cfgName: fmt.Sprintf("n%d", i), name: fmt.Sprintf("n%d", i),
			lid: cfg.Pool.Start + uint32(i), ep: silentEP(i), state: NodeActive}
		f.nodes[n.portGUID] = n
	}
	for name, call := range map[string]func() int{
		"Nodes": func() int { return len(f.Nodes()) },
		"VESWs": func() int { return len(f.VESWs()) },
	} {
		best := time.Hour
		for range 3 {
			t0 := time.Now()
			call()
			best = min(best, time.Since(t0))
		}
		if best > 40*time.Millisecond {
			t.Errorf("%s at %d nodes took %v, want well under 40ms", name, MaxNodes, best)
		}
	}
	ns := f.Nodes()
	for i := 1; i < len(ns); i++ {
		if ns[i].LID <= ns[i-1].LID {
			t.Fatalf("Nodes not sorted by LID at %d: %v after %v", i, ns[i].LID, ns[i-1].LID)
		}
	}
}

// TestLimitLoopCost: what the FM's loop does on every tick of the start-up
// sweep (checkSettled) and for every directory push (directory) is linear
// in the nodes: a walk of every node per config node, or per vesw member,
// took some 280 ms and 40 ms at MaxNodes, every 50 ms tick of the sweep.
func TestLimitLoopCost(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, fabricText(MaxNodes, vesw(1, 0xF00001, onePerNode(496, 0)), vesw(2, 0xF00002, onePerNode(496, 496))))
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for i := range MaxNodes - 1 { // n<MaxNodes-1> has not joined: the sweep goes on
		n := &node{portGUID: uint64(0x1000 + i), cfgName: fmt.Sprintf("n%d", i), lid: cfg.Pool.Start + uint32(i),
			ep: silentEP(i), state: NodeActive}
		f.nodes[n.portGUID] = n
	}
	f.settleBy = time.Now().Add(time.Hour)
	for name, call := range map[string]func(){
		"checkSettled": func() {
			if f.checkSettled(time.Now()) {
				t.Fatal("the sweep ended with a configured node missing")
			}
		},
		"directory": func() {
			if _, gs := f.directory(); len(gs) != 2 {
				t.Fatalf("%d groups, want 2", len(gs))
			}
		},
	} {
		best := time.Hour
		for range 3 {
			t0 := time.Now()
			call()
			best = min(best, time.Since(t0))
		}
		if best > 25*time.Millisecond {
			t.Errorf("%s at %d nodes took %v, want well under 25ms", name, MaxNodes, best)
		}
	}
}
