package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// links returns the links of ns by name, with their MAC and type.
func links(t *testing.T, ns *nstest.NS) map[string]string {
	t.Helper()
	ls, err := ns.Netlink().LinkList()
	if err != nil {
		t.Fatalf("links of %s: %v", ns.Name(), err)
	}
	m := map[string]string{}
	for _, l := range ls {
		m[l.Attrs().Name] = l.Type() + " " + l.Attrs().HardwareAddr.String()
	}
	return m
}

func tuntaps(m map[string]string) []string {
	var out []string
	for name, v := range m {
		if strings.HasPrefix(v, "tuntap ") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// restartVnicd starts d's vnicd again, after it exited, up to attempts
// times while it exits at start or does not come up within
// e2etest.UpWithin, and returns the number of attempts it took.
func restartVnicd(t *testing.T, d *e2etest.Daemon, attempts int) int {
	t.Helper()
	for i := 1; ; i++ {
		d.Restart(t)
		err := d.WaitUp(len(d.Host.VNICs), e2etest.UpWithin)
		if err == nil {
			return i
		}
		_ = d.Stop(t, syscall.SIGKILL)
		if i == attempts {
			t.Fatalf("vnicd %s did not come back in %d attempts: %v", d.Host.Name, attempts, err)
		}
		t.Logf("vnicd %s, attempt %d: %v; trying again", d.Host.Name, i, err)
		// A back-off, not a synchronisation: the next attempt waits on its
		// own condition (WaitUp); this spaces the attempts.
		time.Sleep(200 * time.Millisecond)
	}
}

// TestE2EKillRestartStatic kills host a's vnicd with SIGKILL three times in
// a row and starts it again with the same config each time: the kernel
// removes its TAPs with the process, and the new vnicd makes exactly the
// configured ones again (same names, same MACs, in the same namespaces,
// none left over or doubled), over the stale control socket, and traffic
// flows on both switches.
func TestE2EKillRestartStatic(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	a, b := nstest.NewNS(t, "ka"), nstest.NewNS(t, "kb")
	aBlue, bBlue := nstest.NewNS(t, "kablue"), nstest.NewNS(t, "kbblue")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	dir := t.TempDir()
	host := func(name string, lid, peer int, self, other, blueNS string, n int) e2etest.Host {
		return e2etest.Host{
			Name: name, LID: lid, Listen: self + ":4793",
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidB}, mcBlue: {lidA, lidB}},
			Socket: filepath.Join(dir, name+".sock"),
			VNICs: []e2etest.VNIC{
				{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0",
					Addrs: []string{fmt.Sprintf("192.168.101.%d/24", n)}},
				{VPort: 1, VESW: 2, PKey: 0x8002, Mcast: mcBlue, IfName: "vnic1", NetNS: blueNS,
					Addrs: []string{fmt.Sprintf("192.168.102.%d/24", n)}},
			},
		}
	}
	// Host a names its blue namespace by name, host b by path.
	da := e2etest.Start(t, a, host("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2", aBlue.Name(), 1))
	e2etest.Start(t, b, host("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1", bBlue.Path(), 2))
	e2etest.Ping(t, a, "192.168.101.2")
	e2etest.Ping(t, aBlue, "192.168.102.2")
	wantA, wantBlue := links(t, a), links(t, aBlue)
	if got := tuntaps(wantA); !slices.Equal(got, []string{"vnic0"}) {
		t.Fatalf("TAPs in %s: %v, want vnic0", a.Name(), got)
	}
	if got := tuntaps(wantBlue); !slices.Equal(got, []string{"vnic1"}) {
		t.Fatalf("TAPs in %s: %v, want vnic1", aBlue.Name(), got)
	}

	for round := 1; round <= 3; round++ {
		pid := da.Cmd.Process.Pid
		_ = da.Stop(t, syscall.SIGKILL)
		killed := time.Now()
		var left []string
		if err := waitfor.Check(5*time.Second, func() error {
			if left = append(tuntaps(links(t, a)), tuntaps(links(t, aBlue))...); len(left) > 0 {
				return waitfor.ErrNotYet
			}
			return nil
		}); err != nil {
			t.Fatalf("round %d: TAPs %v still there after SIGKILL of pid %d: %v", round, left, pid, err)
		}
		gone := time.Since(killed)

		restart := time.Now()
		attempts := restartVnicd(t, da, 5)
		up := time.Since(restart)
		if got := links(t, a); !maps.Equal(got, wantA) {
			t.Errorf("round %d: links in %s %v, want %v", round, a.Name(), got, wantA)
		}
		if got := links(t, aBlue); !maps.Equal(got, wantBlue) {
			t.Errorf("round %d: links in %s %v, want %v", round, aBlue.Name(), got, wantBlue)
		}
		var v []ctl.VNICStatus
		if err := ctl.Call(da.Socket, ctl.CmdVNICs, nil, &v); err != nil || len(v) != 2 || v[0].IfName != "vnic0" || v[1].IfName != "vnic1" {
			t.Errorf("round %d: vnicd's VNICs %+v (%v)", round, v, err)
		}
		a.PingWithin(t, "192.168.101.2", 10*time.Second)
		red := time.Since(restart)
		aBlue.PingWithin(t, "192.168.102.2", 10*time.Second)
		blue := time.Since(restart)
		t.Logf("FIGURE restart: round %d: TAPs gone %v after SIGKILL; vnicd up %v after restart (attempts %d); first ping reply red %v, blue %v after restart",
			round, gone.Round(time.Millisecond), up.Round(time.Millisecond), attempts, red.Round(time.Millisecond), blue.Round(time.Millisecond))
	}
}

// fmNode is a node in the FM's `fabric` answer (fm.NodeStatus as JSON).
type fmNode struct {
	Config   string `json:"config_name"`
	LID      string `json:"lid"`
	Endpoint string `json:"endpoint"`
	State    string `json:"state"`
}

// fmNodes returns the nodes of the FM behind socket, as `vnicctl fabric`
// shows them.
func fmNodes(t *testing.T, socket string) []fmNode {
	t.Helper()
	var st struct {
		Nodes []fmNode `json:"nodes"`
	}
	if err := ctl.Call(socket, ctl.CmdFabric, nil, &st); err != nil {
		t.Fatal(err)
	}
	return st.Nodes
}

// directoryEndpoint returns the endpoint d's directory has for lid ("" if
// none).
func directoryEndpoint(t *testing.T, d *e2etest.Daemon, lid string) string {
	t.Helper()
	var ents []ctl.FabricEntry
	if err := ctl.Call(d.Socket, ctl.CmdFabric, nil, &ents); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.LID == lid {
			return e.Endpoint
		}
	}
	return ""
}

// TestE2ENodeAddressChange moves host b to another underlay address,
// 10.202.0.2 replaced by 10.202.0.12: either its vnicd is stopped and
// started again listening at the new address, or it listens on the wildcard
// address (the default) and keeps running while the address changes under
// it. The node rejoins with its LID, the FM's node table and host a's
// directory show the new endpoint, and traffic flows again.
func TestE2ENodeAddressChange(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	for _, tc := range []struct {
		name    string
		restart bool
	}{{"restart", true}, {"wildcard", false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.name[:1]
			lab := newManagedLab(t, p+"n")
			fmNS, a, b, aBlue, bBlue, seg := lab.fmNS, lab.a, lab.b, lab.aBlue, lab.bBlue, lab.seg
			dir, fmSocket, fabric := lab.dir, lab.fmSocket, lab.fabric
			e2etest.StartFM(t, fmNS, fabric)
			listenB := "10.202.0.2:4793"
			if !tc.restart {
				listenB = "[::]:4793"
			}
			da := managedHost(t, a, aBlue, "host-a", 1, "", filepath.Join(dir, "a.sock"))
			db := managedHost(t, b, bBlue, "host-b", 2, listenB, filepath.Join(dir, "b.sock"))
			da.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
			db.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
			lidB := db.HFIStatus(t).LID
			if lidB != "0xC000" {
				t.Fatalf("host-b LID %s, want 0xC000", lidB)
			}
			// The directory push may follow the VNICs' configuration.
			ep := ""
			waitfor.Poll(10*time.Second, func() bool { ep = directoryEndpoint(t, da, lidB); return ep == "10.202.0.2:4793" })
			if ep != "10.202.0.2:4793" {
				t.Fatalf("host-a's directory: %s at %q before the move", lidB, ep)
			}
			e2etest.Ping(t, a, "192.168.101.2")

			if tc.restart {
				_ = db.Stop(t, syscall.SIGTERM)
			}
			ifB := seg.Ifaces[1]
			for _, args := range [][]string{
				{"addr", "del", "10.202.0.2/24", "dev", ifB},
				{"addr", "add", "10.202.0.12/24", "dev", ifB},
			} {
				if _, err := b.Exec(context.Background(), "ip", args...); err != nil {
					t.Fatal(err)
				}
			}
			moved := time.Now()
			if tc.restart {
				db = managedHost(t, b, bBlue, "host-b", 2, "10.202.0.12:4793", filepath.Join(dir, "b.sock"))
				db.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
			}
			const newEP = "10.202.0.12:4793"

			// The FM's table and a's directory, within a bounded time.
			var fmEP, fmLID, fmState, aEP string
			waitfor.Poll(20*time.Second, func() bool {
				fmEP, fmLID, fmState = "", "", ""
				for _, n := range fmNodes(t, fmSocket) {
					if n.Config == "host-b" {
						fmEP, fmLID, fmState = n.Endpoint, n.LID, n.State
					}
				}
				aEP = directoryEndpoint(t, da, lidB)
				return fmEP == newEP && fmState == "active" && aEP == newEP
			})
			if fmEP != newEP || fmLID != lidB || fmState != "active" {
				t.Errorf("FM's node table: host-b at %s with LID %s, %s; want %s with %s, active", fmEP, fmLID, fmState, newEP, lidB)
			}
			if aEP != newEP {
				t.Errorf("host-a's directory: %s at %q, want %s", lidB, aEP, newEP)
			}
			known := time.Since(moved)
			if got := db.HFIStatus(t).LID; got != lidB {
				t.Errorf("host-b has LID %s after the move, want %s", got, lidB)
			}
			for _, c := range []struct {
				ns   *nstest.NS
				addr string
			}{{a, "192.168.101.2"}, {b, "192.168.101.1"}, {aBlue, "192.168.102.2"}, {bBlue, "192.168.102.1"}} {
				c.ns.PingWithin(t, c.addr, 10*time.Second)
			}
			t.Logf("FIGURE move %s: host-b at %s with LID %s in the FM and host-a's directory %v after the move; pings on both switches after %v",
				tc.name, fmEP, fmLID, known.Round(time.Millisecond), time.Since(moved).Round(time.Millisecond))
		})
	}
}
