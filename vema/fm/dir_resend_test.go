package fm

import (
	"bytes"
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
	time.Sleep(700 * time.Millisecond)
	fb.a.setDrop(nil)
	waitFor(t, "host-a directory with 1 group", 3*time.Second, func() bool {
		_, _, _, _, g, _ := fb.a.snapshot()
		return len(g) == 1
	})
}
