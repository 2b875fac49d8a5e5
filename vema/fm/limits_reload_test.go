package fm

import (
	"testing"
)

// A reload at MaxNodes that removes a vesw of 2048 members: Reload matches
// every node to the new config, finds for each removed member the node it
// was on under the old one (nodeIn) and whether each member's fixed MAC
// changed (memberOf), all under f.mu.

// reloadFMs returns pollRoundFM and its config with and without vesw 2.
func reloadFMs(tb testing.TB) (f *FM, with, without *Config) {
	tb.Helper()
	second := make([][2]int, 2048)
	for i := range second {
		second[i] = [2]int{2047 + i, 1}
	}
	v1 := veswDefPorts(1, onePerNode(2048, 0), 4000, 4094)
	f = pollRoundFM(tb)
	with = f.cfg
	without = mustConfig(tb, fabricText(MaxNodes, v1))
	return f, with, without
}

// TestLimitReloadRemovesVESW: the reload owes each node of vesw 2 the
// DeleteVESW of its vport 1, and the reload back makes the members anew.
func TestLimitReloadRemovesVESW(t *testing.T) {
	f, with, without := reloadFMs(t)
	if err := f.Reload(without); err != nil {
		t.Fatal(err)
	}
	owed := 0
	for _, dels := range f.deletes {
		if d := dels[1]; d != nil && d.vesw == 2 && len(dels) == 1 {
			owed++
		}
	}
	if owed != 2048 || len(f.deletes) != 2048 {
		t.Fatalf("%d nodes owed vesw 2's DeleteVESW of vport 1, %d owed any; want 2048", owed, len(f.deletes))
	}
	for k := range f.members {
		if k.vesw == 2 {
			t.Fatalf("member %v of the removed vesw kept", k)
		}
	}
	resetPollRound(f)
	if err := f.Reload(with); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.member(memberKey{2, "n4094", 1}); !ok || f.members[memberKey{2, "n4094", 1}] == nil {
		t.Fatal("the reload back did not make vesw 2's members again")
	}
}

func BenchmarkReloadRemoveVESW(b *testing.B) {
	f, with, without := reloadFMs(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Reload(without); err != nil {
			b.Fatal(err)
		}
		resetPollRound(f)
		clear(f.deletes)
		if err := f.Reload(with); err != nil {
			b.Fatal(err)
		}
		resetPollRound(f)
	}
}
