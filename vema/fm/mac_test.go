package fm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func (f *fakeNode) netdevMAC(vport uint8) [6]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.netdevs[vport]
}

func statusMAC(f *FM, vesw encap.VESWID, node string) string {
	for _, v := range f.VESWs() {
		for _, m := range v.Members {
			if v.ID == vesw && m.Node == node {
				return m.MAC
			}
		}
	}
	return ""
}

// A reload that changes or removes a member's fixed MAC gives the port the
// new MAC; the port's old base_mac_addr is not taken for a learned one.
func TestReloadAppliesChangedFixedMAC(t *testing.T) {
	const fixed = `mac: "02:aa:bb:cc:dd:ee"`
	for _, tc := range []struct {
		name, with string
		want       [6]byte
	}{
		{"changed", `mac: "02:aa:bb:cc:dd:01"`, [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0x01}},
		{"removed", ``, encap.MACForLID(0xC000, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFabric(t)
			old := [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
			waitFor(t, "host-b blue configured", 5*time.Second, func() bool {
				_, vp, _, _, _, _ := fb.b.snapshot()
				return vp[1].VPort.BaseMACAddr == old && vp[1].VPort.MACTblDigest != 0
			})
			text := strings.Replace(testFabric, fixed, tc.with, 1)
			text = strings.Replace(text, "vport: 1, }", "vport: 1}", 1)
			if err := fb.fm.Reload(mustConfig(t, text)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "host-b blue with the new MAC", 3*time.Second, func() bool {
				_, vp, _, _, _, _ := fb.b.snapshot()
				_, _, ta, _, _, _ := fb.a.snapshot()
				derived := tc.want == encap.MACForLID(0xC000, 2)
				tableOK := derived && len(ta[1]) == 0 || !derived && len(ta[1]) == 1 && ta[1][0].MAC == tc.want
				return vp[1].VPort.BaseMACAddr == tc.want && fb.b.netdevMAC(1) == tc.want && tableOK
			})
		})
	}
}

// A MAC learned from a trap survives an FM restart: the new FM learns it
// from the netdev (IfaceUcastMacs), which differs from the port's
// base_mac_addr, and keeps it in the MAC tables.
func TestFMRestartKeepsLearnedMAC(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	x := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.trapMACChange(0, x)
	waitFor(t, "host-a red table has X", 3*time.Second, func() bool {
		_, _, ta, _, _, _ := fb.a.snapshot()
		return len(ta[0]) == 1 && ta[0][0].MAC == x
	})
	fb.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f2, stop2 := startFM(t, ctx, fb.net, mustConfig(t, testFabric))
	defer stop2()
	fb.fm = f2
	fb.waitActive(t, 3)
	waitFor(t, "the new FM to know host-c's MAC", 3*time.Second, func() bool {
		return statusMAC(f2, 1, "host-c") == "02:11:22:33:44:55"
	})
	y := [6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
	fb.b.trapMACChange(0, y)
	waitFor(t, "host-a red table with X and Y", 3*time.Second, func() bool {
		_, _, ta, _, _, _ := fb.a.snapshot()
		has := map[[6]byte]bool{}
		for _, e := range ta[0] {
			has[e.MAC] = true
		}
		return len(ta[0]) == 2 && has[x] && has[y]
	})
	if got := fb.c.netdevMAC(0); got != x {
		t.Errorf("host-c's netdev MAC is % x after the FM restart, want % x", got, x)
	}
}

// learnOnC has host-c's user set its red netdev's MAC (a trap) once host-c
// is configured, and waits until the EM has made it the port's
// base_mac_addr; it returns that MAC.
func learnOnC(t *testing.T, fb *fabric) [6]byte {
	t.Helper()
	waitTable(t, fb.c, "host-c configured", 0)
	x := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	fb.c.trapMACChange(0, x)
	waitFor(t, "host-c's base_mac_addr is the learned MAC", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.c.snapshot()
		return vp[0].VPort.BaseMACAddr == x
	})
	return x
}

// A restarted FM whose start-up sweep is still waiting for a configured
// node polls the nodes that have joined; it must not push their members
// before it has read their ports, or it resets a MAC learned before the
// restart (the peers' neighbour caches still hold it, and traffic stops).
func TestFMRestartPollsBeforeSweepKeepLearnedMAC(t *testing.T) {
	fb := newFabric(t)
	x := learnOnC(t, fb)
	fb.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// host-z never joins: the sweep lasts its full 1.5 s, 7 polls.
	cfg := mustConfig(t, strings.Replace(testFabric, "  - {name: host-c}\n", "  - {name: host-c}\n  - {name: host-z}\n", 1))
	f2, stop2 := startFMSettle(t, ctx, fb.net, cfg, 1500*time.Millisecond)
	defer stop2()
	fb.fm = f2
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got := fb.c.netdevMAC(0); got != x {
			t.Fatalf("host-c's netdev MAC became % x while the restarted FM swept, want % x", got, x)
		}
	}
	waitFor(t, "the new FM to know host-c's MAC", 3*time.Second, func() bool {
		return statusMAC(f2, 1, "host-c") == "02:11:22:33:44:55"
	})
}

// A MAC learned from a trap is the member's until the next trap: a node
// that restarts gets it back as its port's base_mac_addr (peers' neighbour
// caches stay right), whether the FM hears of the restart from its announce
// or its poll.
func TestNodeRestartKeepsLearnedMAC(t *testing.T) {
	fb := newFabric(t)
	x := learnOnC(t, fb)
	fb.c.restart()
	waitFor(t, "host-c back with X", 5*time.Second, func() bool {
		_, vp, ta, _, _, _ := fb.c.snapshot()
		return vp[0].VPort.MACTblDigest != 0 && vp[0].VPort.BaseMACAddr == x && fb.c.netdevMAC(0) == x && len(ta[0]) == 1
	})
}

// A MAC a user sets on a VNIC that another port of the same vesw has is
// learned (as the kernel's EM would) and warned about: frames to it reach
// only one of the two ports. The same MAC on another vesw is no conflict.
func TestLearnedMACSharedWarned(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	fb := newFabricLog(t, "", zap.New(core))
	waitTable(t, fb.a, "host-a configured", 1)
	shared := [6]byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee} // host-b's fixed blue MAC
	fb.a.trapMACChange(0, shared)                         // red: no conflict
	waitFor(t, "the FM to learn host-a's red MAC", 3*time.Second, func() bool {
		return statusMAC(fb.fm, 1, "host-a") == "02:aa:bb:cc:dd:ee"
	})
	if n := logs.FilterMessageSnippet("another port's of the same vesw").Len(); n != 0 {
		t.Fatalf("%d warnings for a MAC another vesw's port has", n)
	}
	fb.a.trapMACChange(1, shared) // blue: host-b's
	waitFor(t, "the warning", 3*time.Second, func() bool {
		return logs.FilterMessageSnippet("another port's of the same vesw").FilterField(zap.String("other_node", "host-b")).Len() == 1
	})
}
