package fm

import (
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vema"
)

// slowRetries makes fb's FM retry unanswered requests after d (its loop
// reads the value under f.mu), so that a test can act between a request
// and its retry.
func slowRetries(fb *fabric, d time.Duration) {
	fb.fm.mu.Lock()
	fb.fm.retryTimeout = d
	fb.fm.mu.Unlock()
}

// waitDropped waits until n's drop filter has lost more than from MADs.
func waitDropped(t *testing.T, n *fakeNode, from int, what string) {
	t.Helper()
	waitFor(t, what, 2*time.Second, func() bool { return n.droppedCount() > from })
}

// reloadRedDownDropped waits until n (named name) has its red port, slows
// the FM's retries, drops n's VESWPortInfo Sets and reloads the fabric
// with red admin down; it returns that config once the DROP_ALL Set to n
// has been dropped (n keeps dropping them).
func reloadRedDownDropped(t *testing.T, fb *fabric, n *fakeNode, name string) string {
	t.Helper()
	waitTable(t, n, name+" red configured", 0)
	slowRetries(fb, 400*time.Millisecond)
	down := strings.Replace(testFabric, "    name: red\n", "    name: red\n    admin_state: down\n", 1)
	n.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo))
	d0 := n.droppedCount()
	if err := fb.fm.Reload(mustConfig(t, down)); err != nil {
		t.Fatal(err)
	}
	waitDropped(t, n, d0, "the DROP_ALL Set to "+name)
	return down
}

// A VESWPortInfo Set that a later one replaced is not sent again: its
// retry would reach the node after the later Set and undo it (the node
// takes Sets in the order they come).
func TestSupersededVESWPortInfoSetNotResent(t *testing.T) {
	fb := newFabric(t)
	reloadRedDownDropped(t, fb, fb.a, "host-a")
	d1 := fb.a.droppedCount()
	if err := fb.fm.Reload(mustConfig(t, testFabric)); err != nil {
		t.Fatal(err)
	}
	waitDropped(t, fb.a, d1, "the FORWARDING Set to host-a")
	_, from := fb.a.setsSince(0, 0)
	fb.a.setDrop(nil)
	waitFor(t, "host-a red FORWARDING", 10*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.a.snapshot()
		return vp[0].VPort.ConfigState == vema.StateForwarding
	})
	time.Sleep(1200 * time.Millisecond) // past every retry of the first Set
	sets, _ := fb.a.setsSince(from, vema.AttrVESWPortInfo)
	for _, m := range sets {
		var pi vema.VESWPortInfo
		if pi.UnmarshalBinary(m.Data[:]) == nil && m.VPortIndex() == 0 && pi.VPort.ConfigState != vema.StateForwarding {
			t.Errorf("host-a took a replaced Set (config_state %d) after the one that replaced it", pi.VPort.ConfigState)
		}
	}
	if _, vp, _, _, _, _ := fb.a.snapshot(); vp[0].VPort.ConfigState != vema.StateForwarding {
		t.Errorf("host-a red ends with config_state %d, want FORWARDING", vp[0].VPort.ConfigState)
	}
}

// A MAC table push that a later one replaced is not sent again either.
func TestSupersededMACTableNotResent(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.a, "host-a red configured", 0)
	waitTable(t, fb.c, "host-c red configured", 0)
	slowRetries(fb, 400*time.Millisecond)
	x := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	y := [6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
	fb.a.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortMACEntries))
	d0 := fb.a.droppedCount()
	fb.c.trapMACChange(0, x)
	waitDropped(t, fb.a, d0, "host-a's table with X")
	d1 := fb.a.droppedCount()
	fb.c.trapMACChange(0, y)
	waitDropped(t, fb.a, d1, "host-a's table with Y")
	_, from := fb.a.setsSince(0, 0)
	fb.a.setDrop(nil)
	waitFor(t, "host-a's red table with Y", 10*time.Second, func() bool {
		_, _, ta, _, _, _ := fb.a.snapshot()
		return len(ta[0]) == 1 && ta[0][0].MAC == y
	})
	// A window for what must not happen: no Set past the retries of the first.
	time.Sleep(1200 * time.Millisecond)
	sets, _ := fb.a.setsSince(from, vema.AttrVESWPortMACEntries)
	for _, m := range sets {
		var tb vema.VESWPortMACEntries
		if tb.UnmarshalBinary(m.Data[:]) != nil {
			continue
		}
		for _, e := range tb.Entries {
			if e.MAC == x {
				t.Errorf("host-a took the replaced table (with X) after the one that replaced it")
			}
		}
	}
	if _, _, ta, _, _, _ := fb.a.snapshot(); len(ta[0]) != 1 || ta[0][0].MAC != y {
		t.Errorf("host-a's red table ends as %v, want Y only", ta[0])
	}
}

// A node whose VESWPortInfo is not what it answered to the EM's last Set
// (an old Set that came late, another manager) is set again at a poll.
func TestPollRepairsVESWPortInfo(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.b, "host-b blue configured", 1)
	_, vp, _, _, _, _ := fb.b.snapshot()
	want := vp[1]
	fb.b.mu.Lock()
	pi := fb.b.vports[1]
	pi.VPort.ConfigState = vema.StateDropAll
	pi.VPort.BaseMACAddr = [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0x99}
	pi.VESW.PKey = 0x8009
	fb.b.vports[1] = pi
	fb.b.mu.Unlock()
	waitFor(t, "host-b blue set again", 10*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		got := vp[1]
		return got.VPort.ConfigState == want.VPort.ConfigState && got.VPort.BaseMACAddr == want.VPort.BaseMACAddr &&
			got.VESW.PKey == want.VESW.PKey
	})
	// And a node that agrees is left alone: no more Sets over a few polls.
	_, from := fb.b.setsSince(0, 0)
	time.Sleep(1 * time.Second)
	if sets, _ := fb.b.setsSince(from, vema.AttrVESWPortInfo); len(sets) != 0 {
		t.Errorf("%d VESWPortInfo Sets to a node that agrees with the EM", len(sets))
	}
}

// A DeleteVESW still unanswered when a reload gives the node its vport
// again is not sent again: its retry would reach the node after the
// member's Set and delete the port just made.
func TestSupersededDeleteVESWNotResent(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c red configured", 0)
	slowRetries(fb, 400*time.Millisecond)
	fb.c.setDrop(dropping(vema.ClassVEMA, vema.MethodSet, vema.AttrDeleteVESW))
	d0 := fb.c.droppedCount()
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	waitDropped(t, fb.c, d0, "host-c's DeleteVESW")
	fb.c.setDrop(nil)
	if err := fb.fm.Reload(mustConfig(t, testFabric)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "host-c red made again", 10*time.Second, func() bool {
		_, vp, _, _, _, del := fb.c.snapshot()
		_, ok := vp[0]
		return ok && len(del) == 1
	})
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, vp, _, _, _, del := fb.c.snapshot(); len(del) != 1 {
			_, ok := vp[0]
			t.Fatalf("host-c took %d DeleteVESWs (its red port there: %v), want 1: a replaced one was sent again", len(del), ok)
		}
	}
}

// A member a reload removes while its VESWPortInfo Set is unanswered does
// not get that Set again: its retry would reach the node after the
// DeleteVESW and make the port again, which no poll looks at any more.
func TestRemovedMemberSetNotResent(t *testing.T) {
	fb := newFabric(t)
	down := reloadRedDownDropped(t, fb, fb.c, "host-c")
	fb.c.setDrop(nil)
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(down, "      - {node: host-c, vport: 0}\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	waitPorts(t, fb.c, "host-c's red port deleted", 0)
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, vp, _, _, _, _ := fb.c.snapshot(); len(vp) != 0 {
			t.Fatalf("host-c's red port was made again after its DeleteVESW: the removed member's Set was sent again")
		}
	}
}
