package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

var (
	opafmOnce sync.Once
	opafmBin  string
	opafmErr  error
)

// opafmBinary builds opafm once per test process.
func opafmBinary(t *testing.T) string {
	t.Helper()
	opafmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "opafm-test-bin")
		if err != nil {
			opafmErr = err
			return
		}
		opafmBin = filepath.Join(dir, "opafm")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", opafmBin, "../opafm").CombinedOutput()
		if err != nil {
			opafmErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if opafmErr != nil {
		t.Fatalf("building opafm: %v", opafmErr)
	}
	return opafmBin
}

const fabricYAML = `fm:
  name: fm
  lid: 1
  listen: "10.202.0.3:4793"
  control_socket: %q
lid_pool: {start: 0xC000, end: 0xC0FF}
nodes:
  - {name: host-a, lid: 0x10}
  - {name: host-b}
vesws:
  - id: 1
    name: red
    pkey: 0x8001
    eth_mtu: 1400
    mcast_dlid: 0xF00001
    members:
      - {node: host-a, vport: 0}
      - {node: host-b, vport: 0}
%s`

const blueVESW = `  - id: 2
    name: blue
    pkey: 0x8002
    eth_mtu: 1400
    mcast_dlid: 0xF00002
    members:
      - {node: host-a, vport: 1}
      - {node: host-b, vport: 1}
`

const managedHostYAML = `node:
  name: %s
  listen: %q
  fabric_manager: %q
control:
  socket: %q
netdevs:
  0: {ifname: vnic0, addresses: [%s]}
  1: {ifname: vnic1, netns: %q, addresses: [%s]}
`

// managedHost starts a vnicd configured only with the FM's address.
func managedHost(t *testing.T, ns, blue *nstest.NS, name string, n int, socket string, extra ...string) *daemon {
	t.Helper()
	return managedHostAt(t, ns, blue, name, n, fmt.Sprintf("10.202.0.%d:4793", n), socket, extra...)
}

// managedHostAt is managedHost listening at listen.
func managedHostAt(t *testing.T, ns, blue *nstest.NS, name string, n int, listen, socket string, extra ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name+".yaml")
	fmAddr := "10.202.0.3:4793"
	if len(extra) > 0 {
		fmAddr = extra[0]
	}
	cfg := fmt.Sprintf(managedHostYAML, name, listen, fmAddr, socket,
		fmt.Sprintf("192.168.101.%d/24, fd00:101::%d/64", n, n), blue.Path(),
		fmt.Sprintf("192.168.102.%d/24, fd00:102::%d/64", n, n))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", path}
	if len(extra) > 1 {
		args = append(args, "--fabric-manager", extra[1])
	}
	cmd, err := ns.Start(context.Background(), vnicdBinary(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	return &daemon{socket: socket, cmd: cmd}
}

// waitVNICs waits until d has want ports, each in oper state.
func waitVNICs(t *testing.T, d *daemon, want int, oper string, within time.Duration) []ctl.VNICStatus {
	t.Helper()
	var v []ctl.VNICStatus
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v = nil
		if err = ctl.Call(d.socket, "vnics", nil, &v); err == nil && len(v) == want {
			ok := true
			for _, s := range v {
				ok = ok && s.OperState == oper
			}
			if ok {
				return v
			}
		}
	}
	t.Fatalf("%s: want %d VNICs %s within %v; have %+v (%v)", d.socket, want, oper, within, v, err)
	return nil
}

func hfiStatus(t *testing.T, d *daemon) ctl.HFIStatus {
	t.Helper()
	var st ctl.HFIStatus
	if err := ctl.Call(d.socket, "hfi", nil, &st); err != nil {
		t.Fatal(err)
	}
	return st
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
	if err := os.WriteFile(l.fabric, []byte(fmt.Sprintf(fabricYAML, l.fmSocket, blueVESW)), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestE2EManagedFabric(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping", "iperf3")
	lab := newManagedLab(t, "m")
	fmNS, a, b, aBlue, bBlue := lab.fmNS, lab.a, lab.b, lab.aBlue, lab.bBlue
	dir, fmSocket, fabric := lab.dir, lab.fmSocket, lab.fabric
	startFM := func() *exec.Cmd {
		cmd, err := fmNS.Start(context.Background(), opafmBinary(t), "--config", fabric)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	fmCmd := startFM()
	da := managedHost(t, a, aBlue, "host-a", 1, filepath.Join(dir, "a.sock"))
	db := managedHost(t, b, bBlue, "host-b", 2, filepath.Join(dir, "b.sock"))

	// Both vesws come up with the LIDs the FM gave; b's is extended.
	waitVNICs(t, da, 2, "FORWARDING", 15*time.Second)
	waitVNICs(t, db, 2, "FORWARDING", 15*time.Second)
	sa, sb := hfiStatus(t, da), hfiStatus(t, db)
	if sa.LID != "0x10" || sb.LID != "0xC000" || !sb.Extended {
		t.Fatalf("LIDs: host-a %s, host-b %s (extended %v); want 0x10 and 0xC000 (extended)", sa.LID, sb.LID, sb.Extended)
	}
	ping(t, a, "192.168.101.2")
	ping(t, a, "-6", "fd00:101::2")
	ping(t, aBlue, "192.168.102.2")
	ping(t, bBlue, "-6", "fd00:102::1")
	if _, err := aBlue.Exec(context.Background(), "ip", "addr", "add", "192.168.101.9/24", "dev", "vnic1"); err != nil {
		t.Fatal(err)
	}
	if out, err := aBlue.Exec(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", "vnic1", "192.168.101.2"); err == nil {
		t.Fatalf("isolation broken:\n%s", out)
	}
	for _, c := range []struct {
		client, server *nstest.NS
		addr           string
	}{{a, b, "192.168.101.2"}, {aBlue, bBlue, "192.168.102.2"}} {
		rate := iperf(t, c.client, c.server, c.addr, 2)
		t.Logf("iperf3 TCP to %s (managed): %.0f Mbit/s", c.addr, rate/1e6)
	}

	// vnicctl path between the extended-LID host and the other: special GIDs, hop limit 1.
	var pr ctl.PathStatus
	if err := ctl.Call(db.socket, "path", map[string]string{"lid": "0x10"}, &pr); err != nil {
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
	settled := mcastTraps()
	for since, deadline := time.Now(), time.Now().Add(5*time.Second); time.Since(since) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
		if n := mcastTraps(); n != settled {
			settled, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("multicast-list traps from host-b still coming 5 s after the MAC change (%d)", settled)
		}
	}
	if _, err := b.Exec(context.Background(), "ip", "maddr", "add", "01:00:5e:01:02:03", "dev", "vnic0"); err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	for mcastTraps() == settled {
		if time.Since(joined) > 3*time.Second {
			t.Fatalf("no multicast-list trap (opcode 2) from host-b at the FM 3 s after ip maddr add (%d before)", settled)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("multicast-list trap from host-b at the FM %v after ip maddr add (%d before it, from the MAC change)",
		time.Since(joined).Round(time.Millisecond), settled)

	// Remove the blue vesw and SIGHUP: both blue ports leave FORWARDING within 2 s, red keeps going.
	if err := os.WriteFile(fabric, []byte(fmt.Sprintf(fabricYAML, fmSocket, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fmCmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, d := range []*daemon{da, db} {
		for {
			var v []ctl.VNICStatus
			if err := ctl.Call(d.socket, "vnics", nil, &v); err != nil {
				t.Fatal(err)
			}
			if len(v) == 2 && v[1].OperState != "FORWARDING" && v[0].OperState == "FORWARDING" {
				break
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("blue port still forwarding 2s after SIGHUP: %+v", v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("blue vesw out of FORWARDING on both hosts %v after SIGHUP", time.Since(start).Round(time.Millisecond))
	ping(t, a, "192.168.101.2")

	// Kill and restart host-b's vnicd: same LID, traffic back within 5 s, FM untouched.
	if err := db.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = db.cmd.Wait()
	restart := time.Now()
	db = managedHost(t, b, bBlue, "host-b", 2, filepath.Join(dir, "b.sock"))
	a.PingWithin(t, "192.168.101.2", 5*time.Second)
	t.Logf("host-b restarted: traffic back after %v", time.Since(restart).Round(time.Millisecond))
	if st := hfiStatus(t, db); st.LID != "0xC000" {
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
	go func() {
		out, _ := a.Exec(ctx, "ping", "-c", "80", "-i", "0.05", "-W", "1", "192.168.101.2")
		pingDone <- out
	}()
	time.Sleep(500 * time.Millisecond)
	if err := fmCmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = fmCmd.Wait()
	time.Sleep(500 * time.Millisecond)
	fmCmd = startFM()
	out := <-pingDone
	stats := lastLines(out, 2)
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

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestE2EEmbeddedFabricManager makes host a the FM (vnicd --fabric-manager):
// both hosts, host a included, join the FM that runs inside host a's vnicd.
func TestE2EEmbeddedFabricManager(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping")
	a, b := nstest.NewNS(t, "ea"), nstest.NewNS(t, "eb")
	aBlue, bBlue := nstest.NewNS(t, "eablue"), nstest.NewNS(t, "ebblue")
	nstest.Veth(t, a, b, pfx("10.202.0.1/24"), pfx("10.202.0.2/24"), 1500)
	dir := t.TempDir()
	fabric := filepath.Join(dir, "fabric.yaml")
	cfg := strings.Replace(fmt.Sprintf(fabricYAML, filepath.Join(dir, "fm.sock"), blueVESW), "10.202.0.3:4793", "10.202.0.1:4794", 1)
	if err := os.WriteFile(fabric, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	da := managedHost(t, a, aBlue, "host-a", 1, filepath.Join(dir, "a.sock"), "10.202.0.1:4794", fabric)
	db := managedHost(t, b, bBlue, "host-b", 2, filepath.Join(dir, "b.sock"), "10.202.0.1:4794")
	waitVNICs(t, da, 2, "FORWARDING", 15*time.Second)
	waitVNICs(t, db, 2, "FORWARDING", 15*time.Second)
	if sb := hfiStatus(t, db); sb.LID != "0xC000" {
		t.Fatalf("host-b LID %s, want 0xC000 from the embedded FM's pool", sb.LID)
	}
	a.PingWithin(t, "192.168.101.2", 15*time.Second) // the directory may follow the VNICs' configuration
	bBlue.PingWithin(t, "192.168.102.1", 15*time.Second)
}
