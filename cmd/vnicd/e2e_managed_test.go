package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// fabricYAML is the managed fabric of the e2e tests, for an FM at listen
// whose control socket is socket: hosts a and b on vesw 1 (red), and extra
// vesws.
func fabricYAML(listen, socket, extra string) string {
	return e2etest.FabricNodes(listen, socket, 1) + veswYAML(1, "red", 0) + extra
}

// veswYAML is vesw id of the fabric, with PKEY 0x8000+id and multicast
// group 0xF00000+id, and vport of hosts a and b as its members.
func veswYAML(id int, name string, vport int) string {
	return fmt.Sprintf("  - {id: %d, name: %s, pkey: %#x, eth_mtu: 1400, mcast_dlid: %#x,\n"+
		"     members: [{node: host-a, vport: %d}, {node: host-b, vport: %d}]}\n", id, name, 0x8000+id, 0xF00000+id, vport, vport)
}

// blueVESW is the fabric's vesw 2, on vport 1 of hosts a and b.
var blueVESW = veswYAML(2, "blue", 1)

// managedHost starts a vnicd configured only with the FM's address
// (10.202.0.3:4793, or fm[0]) and the names, places and addresses of its
// two ports' netdevs: vnic0 (red, 192.168.101.n) in ns and vnic1 (blue,
// 192.168.102.n) in blue; it listens at listen ("": 10.202.0.n:4793); fm[1]
// is the fabric config of an FM it runs itself (--fabric-manager).
func managedHost(t *testing.T, ns, blue *nstest.NS, name string, n int, listen, socket string, fm ...string) *e2etest.Daemon {
	t.Helper()
	h := e2etest.Host{Name: name, Listen: listen, FabricManager: "10.202.0.3:4793", Socket: socket,
		Netdevs: []e2etest.Netdev{
			{VPort: 0, IfName: "vnic0", Addrs: []string{fmt.Sprintf("192.168.101.%d/24", n), fmt.Sprintf("fd00:101::%d/64", n)}},
			{VPort: 1, IfName: "vnic1", NetNS: blue.Path(), Addrs: []string{fmt.Sprintf("192.168.102.%d/24", n), fmt.Sprintf("fd00:102::%d/64", n)}},
		}}
	if listen == "" {
		h.Listen = fmt.Sprintf("10.202.0.%d:4793", n)
	}
	var args []string
	if len(fm) > 0 {
		h.FabricManager = fm[0]
	}
	if len(fm) > 1 {
		args = []string{"--fabric-manager", fm[1]}
	}
	return e2etest.Launch(t, ns, h, args...)
}

// managedLab is the managed fabric of the e2e tests: hosts a and b (each
// with a "blue" namespace for its vesw 2 VNIC) and the FM's namespace on one
// bridge (10.202.0.1, .2, .3), and fabricYAML written for an opafm whose
// control socket is fmSocket. Nothing is started.
type managedLab struct {
	fmNS, a, b, aBlue, bBlue *nstest.NS
	seg                      *nstest.Segment
	dir, fmSocket, fabric    string
}

// newManagedLab makes the namespaces, named with prefix (FM "<p>fm", hosts
// "<p>a", "<p>b", "<p>ablue", "<p>bblue"), the bridge and the fabric file.
func newManagedLab(t *testing.T, prefix string) *managedLab {
	t.Helper()
	l := &managedLab{fmNS: nstest.NewNS(t, prefix+"fm"), a: nstest.NewNS(t, prefix+"a"), b: nstest.NewNS(t, prefix+"b"),
		aBlue: nstest.NewNS(t, prefix+"ablue"), bBlue: nstest.NewNS(t, prefix+"bblue"), dir: t.TempDir()}
	l.seg = nstest.Bridge(t, 1500,
		nstest.Member{NS: l.a, Addr: pfx("10.202.0.1/24")},
		nstest.Member{NS: l.b, Addr: pfx("10.202.0.2/24")},
		nstest.Member{NS: l.fmNS, Addr: pfx("10.202.0.3/24")})
	l.fmSocket = filepath.Join(l.dir, "opafm.sock")
	l.fabric = filepath.Join(l.dir, "fabric.yaml")
	if err := os.WriteFile(l.fabric, []byte(fabricYAML("10.202.0.3:4793", l.fmSocket, blueVESW)), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestE2EManagedFabric(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "iperf3")
	lab := newManagedLab(t, "m")
	fmNS, a, b, aBlue, bBlue := lab.fmNS, lab.a, lab.b, lab.aBlue, lab.bBlue
	dir, fmSocket, fabric := lab.dir, lab.fmSocket, lab.fabric
	fmCmd := e2etest.StartFM(t, fmNS, fabric)
	da := managedHost(t, a, aBlue, "host-a", 1, "", filepath.Join(dir, "a.sock"))
	db := managedHost(t, b, bBlue, "host-b", 2, "", filepath.Join(dir, "b.sock"))

	// Both vesws come up with the LIDs the FM gave; b's is extended.
	da.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
	db.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
	sa, sb := da.HFIStatus(t), db.HFIStatus(t)
	if sa.LID != "0x10" || sb.LID != "0xC000" || !sb.Extended {
		t.Fatalf("LIDs: host-a %s, host-b %s (extended %v); want 0x10 and 0xC000 (extended)", sa.LID, sb.LID, sb.Extended)
	}
	pingBothSwitches(t, a, aBlue, bBlue)
	if err := e2etest.Reaches(aBlue, "-I", "vnic1", "192.168.101.2"); err == nil {
		t.Fatal("isolation broken: host-b's red address answered on the blue switch")
	}
	for _, c := range []struct {
		client, server *nstest.NS
		addr           string
	}{{a, b, "192.168.101.2"}, {aBlue, bBlue, "192.168.102.2"}} {
		rate := e2etest.Iperf(t, c.client, c.server, c.addr, 2, 1)
		t.Logf("iperf3 TCP to %s (managed): %.0f Mbit/s", c.addr, rate/1e6)
	}

	// vnicctl path between the extended-LID host and the other: special GIDs, hop limit 1.
	var pr ctl.PathStatus
	if err := ctl.Call(db.Socket, ctl.CmdPath, map[string]string{"lid": "0x10"}, &pr); err != nil {
		t.Fatalf("path from host-b to 0x10: %v", err)
	}
	sgid, dgid := encap.GID(netipAddr(t, pr.SGID).As16()), encap.GID(netipAddr(t, pr.DGID).As16())
	if !sgid.IsOPA() || sgid.LID() != 0xC000 || !dgid.IsOPA() || dgid.LID() != 0x10 || pr.HopLimit != 1 {
		t.Fatalf("path record %+v: want special GIDs for 0xC000 -> 0x10 and hop limit 1", pr)
	}
	t.Logf("path host-b -> 0x10: SGID %s DGID %s hop_limit %d", pr.SGID, pr.DGID, pr.HopLimit)

	// A MAC change to a globally administered MAC: trap, MAC tables, ping works within 2 s.
	if _, err := b.Exec(context.Background(), "ip", "link", "set", "vnic0", "address", "00:1b:21:0a:0b:0c"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(context.Background(), "ip", "neigh", "flush", "dev", "vnic0"); err != nil {
		t.Fatal(err)
	}
	took := a.PingWithin(t, "192.168.101.2", 2*time.Second)
	t.Logf("ping to the new globally administered MAC answered %v after the change", took.Round(time.Millisecond))

	// A multicast group joined on host-b's red VNIC: the FM hears one more
	// trap with opcode 2 (multicast list change) within 3 s (vnicd reads the
	// list every second). The MAC change above changed the list too (a new
	// IPv6 solicited-node group), so its traps are let settle first.
	fmOut := fmCmd.Stdout.(fmt.Stringer)
	mcastTraps := func() int {
		n := 0
		for _, line := range strings.Split(fmOut.String(), "\n") {
			if strings.Contains(line, "VEMA trap") && strings.Contains(line, `"node": "host-b"`) &&
				strings.Contains(line, `"vesw": 1,`) && strings.Contains(line, `"opcode": 2`) {
				n++
			}
		}
		return n
	}
	settled := waitfor.Steady(t, 5*time.Second, 1500*time.Millisecond, "host-b's multicast-list traps after the MAC change", mcastTraps)
	if _, err := b.Exec(context.Background(), "ip", "maddr", "add", "01:00:5e:01:02:03", "dev", "vnic0"); err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	if !waitfor.Poll(3*time.Second, func() bool { return mcastTraps() != settled }) {
		t.Fatalf("no multicast-list trap (opcode 2) from host-b at the FM 3 s after ip maddr add (%d before)", settled)
	}
	t.Logf("multicast-list trap from host-b at the FM %v after ip maddr add (%d before it, from the MAC change)",
		time.Since(joined).Round(time.Millisecond), settled)

	// Remove the blue vesw and SIGHUP: both blue ports leave FORWARDING within 2 s, red keeps going.
	if err := os.WriteFile(fabric, []byte(fabricYAML("10.202.0.3:4793", fmSocket, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fmCmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, d := range []*e2etest.Daemon{da, db} {
		var v []ctl.VNICStatus
		if !waitfor.Poll(2*time.Second-time.Since(start), func() bool {
			v = d.VNICs(t)
			return len(v) == 2 && v[1].OperState != "FORWARDING" && v[0].OperState == "FORWARDING"
		}) {
			t.Fatalf("blue port still forwarding 2s after SIGHUP: %+v", v)
		}
	}
	t.Logf("blue vesw out of FORWARDING on both hosts %v after SIGHUP", time.Since(start).Round(time.Millisecond))
	e2etest.Ping(t, a, "192.168.101.2")

	// Kill and restart host-b's vnicd: same LID, traffic back within 5 s, FM untouched.
	_ = db.Stop(t, syscall.SIGKILL)
	restart := time.Now()
	db.Restart(t)
	a.PingWithin(t, "192.168.101.2", 5*time.Second)
	t.Logf("host-b restarted: traffic back after %v", time.Since(restart).Round(time.Millisecond))
	if st := db.HFIStatus(t); st.LID != "0xC000" {
		t.Fatalf("host-b rejoined with LID %s, want 0xC000", st.LID)
	}

	// The FM keeps host-b's learned MAC in its MAC file, beside its socket,
	// for its next run.
	if b, err := os.ReadFile(fm.MACFilePath(fmSocket)); err != nil || !strings.Contains(string(b), `"learned": "00:1b:21:0a:0b:0c"`) {
		t.Fatalf("the FM's MAC file (%v) lacks host-b's learned MAC:\n%s", err, b)
	}

	// Kill and restart the FM while traffic runs: the traffic never stops.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pingDone := make(chan []byte, 1)
	// answered waits until host-a's red port has received n more frames
	// (the ping's replies, 20 a second).
	answered := func(n uint64, what string) {
		t.Helper()
		from := da.Counters(t, 0)["rx_packets"]
		waitfor.Until(t, 5*time.Second, fmt.Sprintf("%d ping replies at host-a %s", n, what), func() bool {
			return da.Counters(t, 0)["rx_packets"] >= from+n
		})
	}
	go func() {
		out, _ := a.Exec(ctx, "ping", "-c", "80", "-i", "0.05", "-W", "1", "192.168.101.2")
		pingDone <- out
	}()
	answered(10, "before the FM is killed")
	if err := fmCmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = fmCmd.Wait()
	answered(10, "while the FM is down")
	fmCmd = e2etest.StartFM(t, fmNS, fabric)
	out := <-pingDone
	stats := e2etest.LastLines(out, 2)
	if !strings.Contains(stats, " 0% packet loss") {
		t.Fatalf("traffic disturbed by the FM restart:\n%s", stats)
	}
	t.Logf("during the FM restart: %s", stats)
	_ = fmCmd
}

func netipAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("GID %q: %v", s, err)
	}
	return a
}

// TestE2EEmbeddedFabricManager makes host a the FM (vnicd --fabric-manager):
// both hosts, host a included, join the FM that runs inside host a's vnicd.
func TestE2EEmbeddedFabricManager(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	lab := newEmbeddedLab(t, "e")
	da := managedHost(t, lab.a, lab.aBlue, "host-a", 1, "", filepath.Join(lab.dir, "a.sock"), embeddedFM, lab.fabric)
	db := managedHost(t, lab.b, lab.bBlue, "host-b", 2, "", filepath.Join(lab.dir, "b.sock"), embeddedFM)
	da.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
	db.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
	if sb := db.HFIStatus(t); sb.LID != "0xC000" {
		t.Fatalf("host-b LID %s, want 0xC000 from the embedded FM's pool", sb.LID)
	}
	lab.a.PingWithin(t, "192.168.101.2", 15*time.Second) // the directory may follow the VNICs' configuration
	lab.bBlue.PingWithin(t, "192.168.102.1", 15*time.Second)
}

// embeddedFM is where the FM of newEmbeddedLab listens.
const embeddedFM = "10.202.0.1:4794"

// newEmbeddedLab is newManagedLab for an FM in host a's namespace (fmNS is
// a), at embeddedFM, with a veth between the hosts and loopback up in a.
func newEmbeddedLab(t *testing.T, prefix string) *managedLab {
	t.Helper()
	l := &managedLab{a: nstest.NewNS(t, prefix+"a"), b: nstest.NewNS(t, prefix+"b"),
		aBlue: nstest.NewNS(t, prefix+"ablue"), bBlue: nstest.NewNS(t, prefix+"bblue"), dir: t.TempDir()}
	l.fmNS = l.a
	nstest.Veth(t, l.a, l.b, pfx("10.202.0.1/24"), pfx("10.202.0.2/24"), 1500)
	if _, err := l.a.Exec(context.Background(), "ip", "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	l.fmSocket = filepath.Join(l.dir, "fm.sock")
	l.fabric = filepath.Join(l.dir, "fabric.yaml")
	cfg := fabricYAML(embeddedFM, l.fmSocket, blueVESW)
	if err := os.WriteFile(l.fabric, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}
