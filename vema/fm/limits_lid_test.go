package fm

import (
	"fmt"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// The FM's work at its limits (MaxNodes nodes, vesws of hundreds of
// members) holds f.mu, which stops its loop. The tests here check what
// that work gives; the benchmarks below show what it costs (go test
// -run '^$' -bench . ./vema/fm). Before it was made linear (or n log n)
// in the nodes, here: picking a pool LID 160 ms per join, a vesw-wide MAC
// table push 1.5 s at 512 members (members² x nodes; some 110 s at the
// 2048 a vesw may have), the status calls 155-175 ms, the sweep's per-tick
// check 280 ms and the directory 40 ms; now each is at most a few ms.

// fullFM returns an FM whose config has MaxNodes nodes and the vesws
// given, with n active nodes holding the pool's first LIDs; named gives
// them config names n<i>.
func fullFM(tb testing.TB, n int, named bool, vesws ...string) *FM {
	tb.Helper()
	cfg := mustConfig(tb, fabricText(MaxNodes, vesws...))
	f := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for i := range n { // in map order: a sort has work to do
		nd := &node{portGUID: uint64(0x1000 + i), lid: cfg.Pool.Start + uint32(i), ep: silentEP(i), state: NodeActive}
		if named {
			nd.cfgName, nd.name = fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i)
		}
		f.putNode(nd)
	}
	return f
}

// chooseLIDFull is a join with the node table full: the LID it gets.
func chooseLIDFull(tb testing.TB) (*FM, *node) {
	f := fullFM(tb, MaxNodes-1, false)
	f.settled = true // pool LIDs are handed out after the start-up sweep
	n := &node{portGUID: 0x99999, state: NodeJoining}
	f.putNode(n)
	return f, n
}

// TestLimitChooseLID: with the node table full, a join gets the one pool
// LID left.
func TestLimitChooseLID(t *testing.T) {
	f, n := chooseLIDFull(t)
	if lid, err := f.chooseLID(n, 0); lid != f.cfg.Pool.Start+MaxNodes-1 || err != nil {
		t.Fatalf("chooseLID = %#x, %v; want %#x", lid, err, f.cfg.Pool.Start+MaxNodes-1)
	}
}

func BenchmarkChooseLIDFull(b *testing.B) {
	f, n := chooseLIDFull(b)
	for b.Loop() {
		if _, err := f.chooseLID(n, 0); err != nil {
			b.Fatal(err)
		}
	}
}

const pushMembers = 512

// vesw1Pushes returns an FM with a vesw of pushMembers configured members,
// one per node, its two vesw-wide pushes: a trap's (pushVESWTables) and a
// join's (repushDefaultPortsReferencing, for a node that is a member), and
// reset, which cancels the requests and leaves every member owed the table
// again.
func vesw1Pushes(tb testing.TB) (f *FM, pushes map[string]func(), reset func()) {
	tb.Helper()
	f = fullFM(tb, pushMembers, true, vesw(1, 0, onePerNode(pushMembers, 0)))
	f.settled = true
	var joined *node
	for _, n := range f.nodes {
		f.members[memberKey{1, n.cfgName, 0}] = &memberState{info: []byte{1}} // configured
		joined = n
	}
	reset = func() {
		for tid := range f.pending {
			f.cancel(tid)
		}
		for _, st := range f.members {
			st.digest, st.tableLen = 0, 0
		}
	}
	reset()
	return f, map[string]func(){
		"trap": func() { f.pushVESWTables(&f.cfg.VESWs[0]) },
		"join": func() { f.repushDefaultPortsReferencing(joined) },
	}, reset
}

// TestLimitVESWTablePush: each vesw-wide push sends the table to the
// members (the join's to all but the node that joined).
func TestLimitVESWTablePush(t *testing.T) {
	for _, name := range []string{"trap", "join"} {
		f, pushes, _ := vesw1Pushes(t)
		pushes[name]()
		if len(f.pending) < pushMembers-1 {
			t.Errorf("%s: %d requests pending, want one at least per member (%d)", name, len(f.pending), pushMembers)
		}
	}
}

func BenchmarkVESWTablePush(b *testing.B) {
	for _, name := range []string{"trap", "join"} {
		b.Run(name, func(b *testing.B) {
			_, pushes, reset := vesw1Pushes(b)
			for b.Loop() {
				pushes[name]()
				reset()
			}
		})
	}
}

// statusFM is a full FM with two vesws of 2000 and 496 members.
func statusFM(tb testing.TB) *FM {
	return fullFM(tb, MaxNodes, true, vesw(1, 0, onePerNode(2000, 0)), vesw(2, 0xF00001, onePerNode(496, 2000)))
}

// TestLimitStatus: at MaxNodes the status calls list every node, sorted
// by LID, and every vesw.
func TestLimitStatus(t *testing.T) {
	f := statusFM(t)
	ns := f.Nodes()
	if len(ns) != MaxNodes {
		t.Fatalf("%d nodes, want %d", len(ns), MaxNodes)
	}
	for i := 1; i < len(ns); i++ {
		if ns[i].LID <= ns[i-1].LID {
			t.Fatalf("Nodes not sorted by LID at %d: %v after %v", i, ns[i].LID, ns[i-1].LID)
		}
	}
	if vs := f.VESWs(); len(vs) != 2 {
		t.Errorf("%d vesws, want 2", len(vs))
	}
}

func BenchmarkStatusCalls(b *testing.B) {
	f := statusFM(b)
	b.Run("Nodes", func(b *testing.B) {
		for b.Loop() {
			f.Nodes()
		}
	})
	b.Run("VESWs", func(b *testing.B) {
		for b.Loop() {
			f.VESWs()
		}
	})
}

// sweepFM is a full FM, two vesws of 496 members, in its start-up sweep
// with one configured node missing.
func sweepFM(tb testing.TB) *FM {
	f := fullFM(tb, MaxNodes-1, true, vesw(1, 0xF00001, onePerNode(496, 0)), vesw(2, 0xF00002, onePerNode(496, 496)))
	f.settleBy = time.Now().Add(time.Hour)
	return f
}

// TestLimitLoop: at MaxNodes, the sweep's per-tick check goes on while a
// configured node is missing, and the directory has both groups.
func TestLimitLoop(t *testing.T) {
	f := sweepFM(t)
	if f.checkSettled(time.Now()) {
		t.Error("the sweep ended with a configured node missing")
	}
	if _, gs := f.directory(); len(gs) != 2 {
		t.Errorf("%d groups, want 2", len(gs))
	}
}

func BenchmarkLoopTick(b *testing.B) {
	f := sweepFM(b)
	b.Run("checkSettled", func(b *testing.B) {
		for b.Loop() {
			f.checkSettled(time.Now())
		}
	})
	b.Run("directory", func(b *testing.B) {
		for b.Loop() {
			f.directory()
		}
	})
}
