package fm

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// FuzzStateFile: any state file parses to an error or to records that,
// loaded, fit the config (in the pool, one GUID per LID, within the bound)
// and are written back as a file that parses to the same records.
func FuzzStateFile(f *testing.F) {
	f.Add(`{"version": 1, "fm": "fm0", "members": []}`)
	f.Add(`{"version": 1, "fm": "fm0", "members": [], "lids": [{"guid": "0x0000000000000001", "lid": 49152, "used": 3}, {"guid": "0x0000000000000002", "lid": 16, "used": 1}]}`)
	f.Add(`{"version": 1, "members": [{"vesw": 1, "node": "host-a", "vport": 0, "learned": "02:11:22:33:44:55"}], "lids": [{"guid": "0xffffffffffffffff", "lid": 49407, "used": 18446744073709551615}]}`)
	cfg, err := ParseConfig([]byte(testFabric))
	if err != nil {
		f.Fatal(err)
	}
	fm := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: 1}), cfg, nil)
	f.Fuzz(func(t *testing.T, text string) {
		st, err := parseStateFile([]byte(text))
		if err != nil {
			return
		}
		fm.mu.Lock()
		defer fm.mu.Unlock()
		fm.setLIDRecords(st.lids)
		if len(fm.lidRecs) > fm.lidBound() || len(fm.lidOwner) != len(fm.lidRecs) {
			t.Fatalf("%d records, %d by LID, bound %d", len(fm.lidRecs), len(fm.lidOwner), fm.lidBound())
		}
		for g, r := range fm.lidRecs {
			if !cfg.Pool.Contains(r.lid) || r.lid == 0x10 || fm.lidOwner[r.lid] != g || r.used == 0 || r.used > fm.lidSeq {
				t.Fatalf("record %#x -> %#x (used %d of %d) kept", g, r.lid, r.used, fm.lidSeq)
			}
		}
		want := maps.Clone(fm.lidRecs)
		mf := macFile{Version: macFileVersion}
		for g, r := range fm.lidRecs {
			mf.LIDs = append(mf.LIDs, lidEntry{GUID: formatGUID(g), LID: r.lid, Used: r.used})
		}
		b, err := json.Marshal(mf)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseStateFile(b)
		if err != nil || !maps.Equal(back.lids, want) {
			t.Fatalf("written back: %v, %v; want %v", back.lids, err, want)
		}
	})
}
