package fm

import (
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vema"
)

// withHostB2 is testFabric with host-b/2 added to vesw red.
func withHostB2(t *testing.T) *Config {
	return mustConfig(t, strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n",
		"      - {node: host-c, vport: 0}\n      - {node: host-b, vport: 2}\n", 1))
}

func memberConfigured(f *FM, node string, vport uint8) bool {
	for _, v := range f.VESWs() {
		for _, m := range v.Members {
			if m.Node == node && m.VPort == vport {
				return m.Configured
			}
		}
	}
	return false
}

// A VESWPortInfo Set whose tries are all lost is pushed again from a later
// poll.
func TestEMRetriesLostVESWPortInfoSet(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.b.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo))
	if err := fb.fm.Reload(withHostB2(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // every try of the first Set (3 x 100 ms) lost
	fb.b.setDrop(nil)
	waitFor(t, "host-b/2 made and its table pushed", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		return vp[2].VPort.MACTblDigest != 0 && memberConfigured(fb.fm, "host-b", 2)
	})
}

// A MAC-table Set whose tries are all lost is pushed again: the digest the
// node reports is not the one pushed.
func TestEMRepairsLostMACTablePush(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.a, "host-a red configured", 0)
	fb.a.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortMACEntries))
	mac := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.trapMACChange(0, mac)
	waitFor(t, "host-b red table", 3*time.Second, func() bool {
		_, _, tb, _, _, _ := fb.b.snapshot()
		return len(tb[0]) == 1 && tb[0][0].MAC == mac
	})
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(600 * time.Millisecond)
	fb.a.setDrop(nil)
	waitFor(t, "host-a red table repaired", 3*time.Second, func() bool {
		_, _, ta, _, _, _ := fb.a.snapshot()
		return len(ta[0]) == 1 && ta[0][0].MAC == mac
	})
}

// A DeleteVESW whose tries are all lost is sent again.
func TestEMRetriesLostDeleteVESW(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	fb.c.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrDeleteVESW))
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(700 * time.Millisecond)
	fb.c.setDrop(nil)
	waitFor(t, "host-c/0 deleted", 3*time.Second, func() bool {
		_, vp, _, _, _, del := fb.c.snapshot()
		_, ok := vp[0]
		return !ok && len(del) == 1
	})
}

// A member removed while its node is lost gets its DeleteVESW when the node
// is back.
func TestEMDeletesMemberRemovedWhileLost(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	fb.c.setDrop(func(vema.Class, vema.Method, uint16) bool { return true })
	waitFor(t, "host-c lost", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-c")
		return n.State != NodeActive
	})
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(300 * time.Millisecond)
	fb.c.setDrop(nil)
	waitFor(t, "host-c back and host-c/0 deleted", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-c")
		_, vp, _, _, _, del := fb.c.snapshot()
		_, ok := vp[0]
		return n.State == NodeActive && !ok && len(del) == 1
	})
}

// A node that answers polls but never the EM's pushes is declared lost
// after emMaxFails unanswered pushes; when it answers again it joins again
// and is configured.
func TestEMDropsNodeThatNeverAnswersThenReconfigures(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.b.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo))
	if err := fb.fm.Reload(withHostB2(t)); err != nil {
		t.Fatal(err)
	}
	// 5 pushes of 3 x 100 ms, 200+400+800+1600 ms of backoff between them.
	waitFor(t, "host-b dropped", 8*time.Second, func() bool {
		n, _ := fb.fm.Node("host-b")
		return n.State != NodeActive
	})
	fb.b.setDrop(nil)
	waitFor(t, "host-b back with host-b/2 made", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-b")
		_, vp, _, _, _, _ := fb.b.snapshot()
		return n.State == NodeActive && vp[2].VPort.MACTblDigest != 0 && memberConfigured(fb.fm, "host-b", 2)
	})
}

// A push the FM could not send (maxPending requests outstanding) is tried
// again later but does not count against the node.
func TestEMPushNotSentDoesNotDropNode(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.fm.mu.Lock()
	var n *node
	for _, o := range fb.fm.nodes {
		if o.cfgName == "host-b" {
			n = o
		}
	}
	var r emRetry
	for range 2 * emMaxFails {
		fb.fm.notSent = true
		fb.fm.emFailed(n, &r, "test push")
		fb.fm.notSent = false
	}
	st := n.state
	fb.fm.mu.Unlock()
	if st != NodeActive {
		t.Errorf("host-b %s after pushes that were never sent", st)
	}
}

// A ClassPortInfo Set (trap_lid) whose tries are all lost is sent again.
func TestEMRetriesLostClassPortInfoSet(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.b.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrClassPortInfo))
	fb.b.mu.Lock()
	fb.b.trapLID = 0
	fb.b.mu.Unlock()
	fb.b.restart()
	waitFor(t, "host-b back", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		return len(vp) == 2
	})
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(500 * time.Millisecond)
	fb.b.setDrop(nil)
	waitFor(t, "host-b's trap_lid set", 3*time.Second, func() bool {
		fb.b.mu.Lock()
		defer fb.b.mu.Unlock()
		return fb.b.trapLID == 1
	})
}

// An IfaceUcastMacs Get after a trap whose tries are all lost is sent
// again: the MAC is learned and reaches the MAC tables.
func TestEMRetriesLostIfaceUcastMACsGet(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	fb.c.setDrop(dropping(vema.ClassVEMA, vema.MethodGet, vema.AttrIfaceUcastMACs))
	x := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.trapMACChange(0, x)
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(500 * time.Millisecond)
	fb.c.setDrop(nil)
	waitFor(t, "host-a red table has X", 3*time.Second, func() bool {
		_, _, ta, _, _, _ := fb.a.snapshot()
		return len(ta[0]) == 1 && ta[0][0].MAC == x
	})
}

// The first MAC-table push to a new port, its tries all lost, is pushed
// again although the port's digest is still 0, as it was before any table.
func TestEMRetriesLostFirstMACTable(t *testing.T) {
	fb := newFabric(t)
	waitPorts(t, fb.b, "host-b configured", 2)
	fb.b.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortMACEntries))
	if err := fb.fm.Reload(withHostB2(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-b/2 made", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		_, ok := vp[2]
		return ok
	})
	// The drop window, not a synchronisation: the tries the FM makes in it are lost, and its retries are under test.
	time.Sleep(500 * time.Millisecond)
	fb.b.setDrop(nil)
	waitFor(t, "host-b/2's table pushed", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		return vp[2].VPort.MACTblDigest != 0
	})
}
