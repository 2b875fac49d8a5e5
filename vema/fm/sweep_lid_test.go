package fm

import (
	"context"
	"testing"
	"time"
)

// An FM that restarts together with some hosts (a rack's power cycle) must
// not hand the hosts that come back without a LID the pool LIDs of hosts
// that kept theirs and have not announced yet: those would be renumbered,
// and their derived MACs with them. During the start-up sweep a node
// without a LID of its own waits; the hosts that hold theirs keep them.
func TestFMRestartWithHostKeepsOtherHostsLIDs(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	if lid, _, _, _, _, _ := fb.b.snapshot(); lid != 0xC000 {
		t.Fatalf("host-b on %#x, want 0xC000", lid)
	}
	fb.stop()
	fb.c.restart() // comes back with no LID, announcing at once
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// host-b announces only once it has missed the SM for 600 ms.
	fb.fm, fb.stop = startFMSettle(t, ctx, fb.net, mustConfig(t, testFabric), 2*time.Second)
	t.Cleanup(func() { fb.stop() })
	fb.waitActive(t, 3)
	for name, want := range map[string]uint32{"host-a": 0x10, "host-b": 0xC000} {
		if n, _ := fb.fm.Node(name); uint32(n.LID) != want {
			t.Errorf("%s on %v after the FM restart, want %#x", name, n.LID, want)
		}
	}
	if n, _ := fb.fm.Node("host-c"); n.LID == 0xC000 || n.LID == 0x10 {
		t.Errorf("host-c was given %v, another host's LID", n.LID)
	}
}
