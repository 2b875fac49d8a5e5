package fm

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

var (
	epD = netip.MustParseAddrPort("10.9.0.40:4793")
	epE = netip.MustParseAddrPort("10.9.0.41:4793")
	epF = netip.MustParseAddrPort("10.9.0.42:4793")
)

// readLIDs returns the saved LIDs the state file at path holds, by node
// name (DeriveGUID of names); ok is false while it is missing or
// unreadable.
func readLIDs(path string, names ...string) (map[string]uint32, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	st, err := parseStateFile(b)
	if err != nil {
		return nil, false
	}
	out := map[string]uint32{}
	byGUID := map[uint64]string{}
	for _, n := range names {
		byGUID[uint64(encap.GUIDFromName(n))] = n
	}
	for g, r := range st.lids {
		name, ok := byGUID[g]
		if !ok {
			name = formatGUID(g)
		}
		out[name] = r.lid
	}
	return out, true
}

// waitLIDs waits until the state file at path saves exactly want.
func waitLIDs(t *testing.T, path string, want map[string]uint32) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	var got map[string]uint32
	defer func() {
		if t.Failed() {
			t.Logf("saved LIDs: %v, want %v", got, want)
		}
	}()
	waitFor(t, fmt.Sprintf("the state file to save %v", want), 3*time.Second, func() bool {
		var ok bool
		got, ok = readLIDs(path, append(names, "host-a", "host-b", "host-c", "host-d", "host-e", "host-f")...)
		if !ok || len(got) != len(want) {
			return false
		}
		for n, l := range want {
			if got[n] != l {
				return false
			}
		}
		return true
	})
}

// nodeLID is the LID the FM gives the node named name, 0 unless active.
func nodeLID(f *FM, name string) uint32 {
	n, ok := f.Node(name)
	if !ok || n.State != NodeActive {
		return 0
	}
	return uint32(n.LID)
}

// fabricWithD starts the test fabric with its state file at a temporary
// path and an unlisted host-d that announces holding lid (0: none), and
// waits until the file has the three pool LIDs, host-d's wantD. It returns
// the fabric, the file's path, host-d and what stops host-d.
func fabricWithD(t *testing.T, lid, wantD uint32) (*fabric, string, *fakeNode, context.CancelFunc) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := newFakeNode(t, ctx, fb.net, "host-d", epD, fmEP, lid)
	fb.waitActive(t, 4)
	waitLIDs(t, path, map[string]uint32{"host-b": 0xC000, "host-c": 0xC007, "host-d": wantD})
	return fb, path, d, cancel
}

// An FM and a host that restart together (a rack power cycle: the host
// comes back with no LID) give the host its old pool LID back, and at once,
// not after the start-up sweep: the state file saved it. Without the file
// the host would get the lowest free pool LID (0xC001) after the sweep.
func TestSavedLIDFMRestartWithHost(t *testing.T) {
	fb, path, d, _ := fabricWithD(t, 0xC003, 0xC003) // host-d holds a pool LID
	fb.stop()
	d.restart() // comes back with no LID, announcing at once
	start := time.Now()
	fb.fm, fb.stop = startFMFile(t, t.Context(), fb.net, mustConfig(t, testFabric), 3*time.Second, path)
	t.Cleanup(func() { fb.stop() })
	waitFor(t, "host-d to join again", 5*time.Second, func() bool { return nodeLID(fb.fm, "host-d") != 0 })
	if got := nodeLID(fb.fm, "host-d"); got != 0xC003 {
		t.Errorf("host-d joined with %#x after the FM restart, want its saved 0xC003", got)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("host-d joined after %v: it waited for the start-up sweep for its own LID", took)
	}
	if l, _, _, _, _, _ := d.snapshot(); l != 0xC003 {
		t.Errorf("host-d's port holds %#x, want 0xC003", l)
	}
}

// A new node does not get a pool LID saved for a node that is absent while
// other pool LIDs are free, even when the start-up sweep ends before every
// node that kept its LID has announced.
func TestSavedLIDNotGivenToNewNode(t *testing.T) {
	fb, path, _, dcancel := fabricWithD(t, 0, 0xC001)
	dcancel() // host-d is gone
	restartFM(t, fb, testFabric, path)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	newFakeNode(t, ctx, fb.net, "host-e", epE, fmEP, 0)
	waitFor(t, "host-e and host-b to join", 5*time.Second, func() bool {
		return nodeLID(fb.fm, "host-e") != 0 && nodeLID(fb.fm, "host-b") != 0
	})
	if got := nodeLID(fb.fm, "host-e"); got != 0xC002 {
		t.Errorf("host-e was given %#x, want 0xC002 (0xC000 and 0xC001 are saved for host-b and host-d)", got)
	}
	if got := nodeLID(fb.fm, "host-b"); got != 0xC000 {
		t.Errorf("host-b on %#x after the FM restart, want 0xC000", got)
	}
	waitLIDs(t, path, map[string]uint32{"host-b": 0xC000, "host-c": 0xC007, "host-d": 0xC001, "host-e": 0xC002})
}

// smallPool is a fabric of unlisted nodes with a pool of two LIDs.
const smallPool = `
fm: {name: fm0, listen: "10.9.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC001}
`

// A full pool (every LID saved for some GUID, none free otherwise) gives a
// new node the LID of the record used least recently, and that record's
// GUID loses it: here host-d's 0xC001, though 0xC000 is lower.
func TestSavedLIDPoolExhaustedReusesLRU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	net := hfitest.NewNetwork()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fm, stop := startFMFile(t, ctx, net, mustConfig(t, smallPool), 500*time.Millisecond, path)
	t.Cleanup(func() { stop() })
	nctx, ncancel := context.WithCancel(context.Background())
	t.Cleanup(ncancel)
	newFakeNode(t, nctx, net, "host-d", epD, fmEP, 0xC001)
	waitFor(t, "host-d to join", 5*time.Second, func() bool { return nodeLID(fm, "host-d") == 0xC001 })
	newFakeNode(t, nctx, net, "host-e", epE, fmEP, 0)
	waitFor(t, "host-e to join", 5*time.Second, func() bool { return nodeLID(fm, "host-e") == 0xC000 })
	waitLIDs(t, path, map[string]uint32{"host-d": 0xC001, "host-e": 0xC000})
	stop()
	ncancel() // both gone, neither seen by the FM as lost
	fm, stop = startFMFile(t, ctx, net, mustConfig(t, smallPool), 500*time.Millisecond, path)
	t.Cleanup(func() { stop() })
	newFakeNode(t, ctx, net, "host-f", epF, fmEP, 0)
	waitFor(t, "host-f to join", 5*time.Second, func() bool { return nodeLID(fm, "host-f") != 0 })
	if got := nodeLID(fm, "host-f"); got != 0xC001 {
		t.Errorf("host-f was given %#x, want 0xC001, host-d's (used least recently)", got)
	}
	waitLIDs(t, path, map[string]uint32{"host-e": 0xC000, "host-f": 0xC001})
}

// A state file written before saved LIDs (no "lids") still loads: its MACs
// are kept, and the FM saves its nodes' pool LIDs in it from then on (the
// fixed LID of host-a is no record).
func TestSavedLIDOlderFileLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	old := `{"version": 1, "fm": "fm0", "members": [{"vesw": 2, "node": "host-b", "vport": 1, "fixed": "02:aa:bb:cc:dd:ee"}]}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	fb := newFabricFile(t, path) // SetMACFile must not fail (startFMLog)
	fb.fm.mu.Lock()
	_, listed := fb.fm.saved[memberKey{2, "host-b", 1}]
	fb.fm.mu.Unlock()
	if !listed {
		t.Errorf("the older file's member was not loaded")
	}
	waitLIDs(t, path, map[string]uint32{"host-b": 0xC000, "host-c": 0xC007})
	if s, ok := readMACFile(path); !ok || len(s) == 0 {
		t.Errorf("the file rewritten holds members %v (parsed %v)", s, ok)
	}
}

// A state file whose saved LIDs are damaged or hostile is an error naming
// the file; it is set aside as .bad, and the FM runs as without a file and
// writes a good one.
func TestSavedLIDDamagedFile(t *testing.T) {
	rec := func(guid string, lid uint32) string {
		return fmt.Sprintf(`{"guid": %q, "lid": %d, "used": 1}`, guid, lid)
	}
	file := func(recs ...string) string {
		return `{"version": 1, "fm": "fm0", "members": [], "lids": [` + strings.Join(recs, ",") + `]}`
	}
	many := make([]string, MaxNodes+1)
	for i := range many {
		many[i] = rec(formatGUID(uint64(i+1)), uint32(0xC000+i))
	}
	for _, tc := range []struct{ name, text, want string }{
		{"guid not hex", file(rec("0xzz00000000000001", 0xC000)), "bad GUID"},
		{"guid short", file(rec("0x1", 0xC000)), "bad GUID"},
		{"guid decimal", file(rec("123456789012345678", 0xC000)), "bad GUID"},
		{"guid zero", file(rec("0x0000000000000000", 0xC000)), "not 0"},
		{"lid zero", file(rec("0x0000000000000001", 0)), "not a unicast LID"},
		{"lid multicast", file(rec("0x0000000000000001", 0xF00001)), "not a unicast LID"},
		{"lid too wide", file(rec("0x0000000000000001", 0x1000000)), "not a unicast LID"},
		{"lid negative", file(`{"guid": "0x0000000000000001", "lid": -1}`), "cannot unmarshal"},
		{"lid huge", file(`{"guid": "0x0000000000000001", "lid": 1e30}`), "cannot unmarshal"},
		{"guid twice", file(rec("0x0000000000000001", 0xC000), rec("0x0000000000000001", 0xC001)), "second record"},
		{"lid twice", file(rec("0x0000000000000001", 0xC000), rec("0x0000000000000002", 0xC000)), "second record"},
		{"unknown field", file(`{"guid": "0x0000000000000001", "lid": 49152, "x": 1}`), "unknown field"},
		{"too many", file(many...), "records, at most"},
		{"not a list", `{"version": 1, "members": [], "lids": {}}`, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseStateFile([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	bad := file(rec("0x0000000000000001", 0xC000), rec("0x0000000000000002", 0xC000))
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	net := hfitest.NewNetwork()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := mustConfig(t, testFabric)
	h := hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, VerifyICRC: true, TrustAnyMgmtSource: true})
	f := New(h, cfg, nil)
	if err := f.SetMACFile(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "second record") {
		t.Fatalf("SetMACFile on a damaged file: %v, want an error naming the file and the record", err)
	}
	if b, err := os.ReadFile(path + ".bad"); err != nil || string(b) != bad {
		t.Errorf("the damaged file set aside: %q, %v; want it as %s.bad", b, err, path)
	}
	f.pollEvery, f.retryTimeout = 200*time.Millisecond, 100*time.Millisecond
	f.settleBy = time.Now().Add(500 * time.Millisecond)
	var wg sync.WaitGroup
	wg.Add(2)
	rctx, rcancel := context.WithCancel(ctx)
	go func() { defer wg.Done(); h.Run(rctx) }()
	go func() { defer wg.Done(); f.Run(rctx) }()
	t.Cleanup(func() { rcancel(); wg.Wait() })
	newFakeNode(t, ctx, net, "host-b", epB, fmEP, 0)
	newFakeNode(t, ctx, net, "host-c", epC, fmEP, 0xC001)
	waitFor(t, "host-b and host-c to join", 5*time.Second, func() bool {
		return nodeLID(f, "host-b") == 0xC000 && nodeLID(f, "host-c") == 0xC001
	})
	waitLIDs(t, path, map[string]uint32{"host-b": 0xC000, "host-c": 0xC001})
}

// A reload keeps the saved LIDs consistent with the new config: a pool
// that shrinks drops the records outside it, and a node given a fixed LID
// has no record; the records left stay.
func TestSavedLIDReload(t *testing.T) {
	fb, path, _, _ := fabricWithD(t, 0xC003, 0xC003)
	text := strings.Replace(testFabric, "lid_pool: {start: 0xC000, end: 0xC0FF}", "lid_pool: {start: 0xC002, end: 0xC005}", 1)
	text = strings.Replace(text, "  - {name: host-b}\n", "  - {name: host-b, lid: 0x20}\n", 1)
	if err := fb.fm.Reload(mustConfig(t, text)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-b on its fixed LID", 5*time.Second, func() bool { return nodeLID(fb.fm, "host-b") == 0x20 })
	waitLIDs(t, path, map[string]uint32{"host-d": 0xC003})
	fb.fm.mu.Lock()
	defer fb.fm.mu.Unlock()
	if len(fb.fm.lidOwner) != len(fb.fm.lidRecs) {
		t.Errorf("%d records by LID, %d by GUID", len(fb.fm.lidOwner), len(fb.fm.lidRecs))
	}
	for g, r := range fb.fm.lidRecs {
		if fb.fm.lidOwner[r.lid] != g {
			t.Errorf("record %#x -> %#x not in the index by LID", g, r.lid)
		}
	}
}

// The records stay within their bound (MaxNodes, or the pool's size when
// smaller: one record per LID), the least recently used dropped first, but
// not one whose node holds its LID now.
func TestSavedLIDBound(t *testing.T) {
	big := strings.Replace(testFabric, "end: 0xC0FF", "end: 0xDFFF", 1)
	f := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: 1}), mustConfig(t, big), nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	held := &node{portGUID: 1, lid: 0xC000, state: NodeActive}
	f.putNode(held)
	f.recordLID(held) // used first, but its node holds it
	for g := uint64(2); g < MaxNodes+10; g++ {
		f.recordLID(&node{portGUID: g, lid: 0xC000 + uint32(g), state: NodeActive})
		if len(f.lidRecs) > MaxNodes || len(f.lidOwner) != len(f.lidRecs) {
			t.Fatalf("after GUID %d: %d records (%d by LID), bound %d", g, len(f.lidRecs), len(f.lidOwner), MaxNodes)
		}
	}
	if r, ok := f.lidRecs[1]; !ok || r.lid != 0xC000 {
		t.Errorf("the record of the node holding 0xC000 was dropped")
	}
	for g := uint64(2); g < 11; g++ {
		if _, ok := f.lidRecs[g]; ok {
			t.Errorf("GUID %d's record, among the least recently used, was kept", g)
		}
	}
	if _, ok := f.lidRecs[MaxNodes+9]; !ok {
		t.Errorf("the last record was dropped")
	}
	// A smaller pool bounds them too: a reload to 16 LIDs keeps the 16
	// most recently used in it.
	f.cfg = mustConfig(t, strings.Replace(testFabric, "end: 0xC0FF", "end: 0xC00F", 1))
	f.pruneLIDs()
	if len(f.lidRecs) > 16 || len(f.lidOwner) != len(f.lidRecs) {
		t.Errorf("%d records (%d by LID) in a pool of 16", len(f.lidRecs), len(f.lidOwner))
	}
}
