package fm

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A node that restarts keeping its LID (node.lid in a managed vnicd's
// config) gets its PortInfo, VNICs and the directory again. It is found by
// its poll answer (sm_lid 0), or by its announce.
func TestRestartKeepingLIDGetsDirectory(t *testing.T) {
	for _, announce := range []bool{false, true} {
		name := "poll"
		if announce {
			name = "announce"
		}
		t.Run(name, func(t *testing.T) {
			fb := newFabric(t)
			waitFor(t, "host-b directory", 5*time.Second, func() bool {
				_, vp, _, dir, _, _ := fb.b.snapshot()
				return len(dir) == 4 && len(vp) == 2 && vp[0].VPort.MACTblDigest != 0
			})
			fb.b.restartKeepingLID()
			if announce {
				fb.b.mu.Lock()
				fb.b.sendAnnounce()
				fb.b.mu.Unlock()
			}
			waitFor(t, "host-b's directory, VNICs and SM LID back", 3*time.Second, func() bool {
				_, vp, _, dir, groups, _ := fb.b.snapshot()
				fb.b.mu.Lock()
				sm := fb.b.smLID
				fb.b.mu.Unlock()
				return len(dir) == 4 && len(groups) == 2 && len(vp) == 2 && vp[0].VPort.MACTblDigest != 0 && sm == 1
			})
		})
	}
}

// A directory generation whose blocks to one node were all lost is sent to
// that node again.
func TestLostDirectoryBlockResent(t *testing.T) {
	fb := newFabric(t)
	waitFor(t, "host-a directory with 2 groups", 5*time.Second, func() bool {
		_, _, _, _, g, _ := fb.a.snapshot()
		return len(g) == 2
	})
	fb.a.setDrop(dropping(classDirectory, 0, 0))
	noBlue := mustConfig(t, testFabric[:bytes.Index([]byte(testFabric), []byte("  - id: 2"))])
	if err := fb.fm.Reload(noBlue); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-b directory with 1 group", 3*time.Second, func() bool {
		_, _, _, _, g, _ := fb.b.snapshot()
		return len(g) == 1
	})
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its resends are under test.
	time.Sleep(700 * time.Millisecond)
	fb.a.setDrop(nil)
	waitFor(t, "host-a directory with 1 group", 3*time.Second, func() bool {
		_, _, _, _, g, _ := fb.a.snapshot()
		return len(g) == 1
	})
}

// A restarted FM's directory is taken although its generations start below
// what the last run reached (they run ahead of the clock under churn).
func TestFMRestartDirectoryTakenBelowOldGeneration(t *testing.T) {
	fb := newFabric(t)
	waitFor(t, "host-a directory", 5*time.Second, func() bool {
		_, _, _, d, _, _ := fb.a.snapshot()
		return len(d) == 4
	})
	fb.fm.mu.Lock()
	fb.fm.gen += 1000 // as some 1000 pushes in a few minutes would
	ahead := fb.fm.gen + 1
	fb.fm.mu.Unlock()
	if err := fb.fm.Reload(mustConfig(t, testFabric)); err != nil { // a push
		t.Fatal(err)
	}
	waitFor(t, "host-a on the generation ahead of the clock", 3*time.Second, func() bool {
		fb.a.mu.Lock()
		defer fb.a.mu.Unlock()
		return fb.a.dirGen >= ahead
	})
	fb.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f2, stop2 := startFM(t, ctx, fb.net, mustConfig(t, testFabric))
	defer stop2()
	fb.fm = f2
	fb.waitActive(t, 3)
	noBlue := mustConfig(t, testFabric[:bytes.Index([]byte(testFabric), []byte("  - id: 2"))])
	if err := f2.Reload(noBlue); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-a with the new FM's directory (1 group)", 3*time.Second, func() bool {
		_, _, _, _, g, _ := fb.a.snapshot()
		return len(g) == 1
	})
}
