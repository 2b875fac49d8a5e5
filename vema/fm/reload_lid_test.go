package fm

import (
	"strings"
	"testing"
	"time"
)

// A reload that changes a node's fixed LID gives the node the new LID, and
// the directory and VNICs follow.
func TestReloadAppliesChangedFixedLID(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.a, "host-a configured", 0)
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(testFabric, "{name: host-a, lid: 0x10}", "{name: host-a, lid: 0x20}", 1))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-a on LID 0x20, in host-b's directory", 3*time.Second, func() bool {
		lid, vp, _, _, _, _ := fb.a.snapshot()
		_, _, _, dir, _, _ := fb.b.snapshot()
		n, _ := fb.fm.Node("host-a")
		inDir := false
		for _, e := range dir {
			inDir = inDir || e.LID == 0x20 && e.EP == epA
		}
		return lid == 0x20 && n.LID == 0x20 && n.State == NodeActive && vp[0].VPort.EncapSLID == 0x20 && inDir
	})
}
