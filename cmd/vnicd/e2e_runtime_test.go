package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// waitInNS waits until process pid is in ns (`ip netns exec` enters it
// after the process starts).
func waitInNS(t *testing.T, pid int, ns *nstest.NS) {
	t.Helper()
	var want unix.Stat_t
	if err := unix.Stat(ns.Path(), &want); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 5*time.Second, fmt.Sprintf("pid %d to enter %s", pid, ns.Name()), func() bool {
		var st unix.Stat_t
		err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st)
		return err == nil && st.Ino == want.Ino && st.Dev == want.Dev
	})
}

func vnicctl(t *testing.T, socket string, args ...string) string {
	t.Helper()
	out, err := exec.Command(e2etest.Bin(t, "vnicctl"), append([]string{"--socket", socket}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("vnicctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestE2EVnicctlAddDel starts two vnicds with no VNICs, adds one VNIC on
// each with `vnicctl vnic add` into a namespace of its own (by name on one
// host, by pid:N on the other), pings across and removes them with
// `vnicctl vnic del`.
func TestE2EVnicctlAddDel(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "sleep")
	a, b := nstest.NewNS(t, "rta"), nstest.NewNS(t, "rtb")
	ca, cb := nstest.NewNS(t, "rtca"), nstest.NewNS(t, "rtcb")
	nstest.Veth(t, a, b, pfx("10.201.0.1/24"), pfx("10.201.0.2/24"), 1500)
	host := func(name string, lid, peer int, self, other string) e2etest.Host {
		return e2etest.Host{Name: name, LID: lid, Listen: self + ":4793",
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidB}}}
	}
	da := e2etest.Start(t, a, host("host-a", lidA, lidB, "10.201.0.1", "10.201.0.2"))
	db := e2etest.Start(t, b, host("host-b", lidB, lidA, "10.201.0.2", "10.201.0.1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeper, err := cb.Start(ctx, "sleep", "120")
	if err != nil {
		t.Fatal(err)
	}
	waitInNS(t, sleeper.Process.Pid, cb)

	out := vnicctl(t, da.Socket, "vnic", "add", "--vesw", "1", "--pkey", "0x8001", "--mcast-dlid", "0xF00001",
		"--eth-mtu", "1400", "--ifname", "eth1", "--netns", ca.Name(), "--address", "10.1.0.1/24")
	if !strings.Contains(out, "eth1") || !strings.Contains(out, "10.1.0.1/24") {
		t.Errorf("vnic add answered:\n%s", out)
	}
	var st ctl.VNICStatus
	if err := ctl.Call(db.Socket, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", McastDLID: mcRed, EthMTU: 1400,
		IfName: "eth1", NetNS: "pid:" + strconv.Itoa(sleeper.Process.Pid), Addresses: []string{"10.1.0.2/24"}}, &st); err != nil {
		t.Fatal(err)
	}
	if st.VPort != 0 || st.IfName != "eth1" || st.MAC != "02:00:01:de:bc:0a" || st.VESW != 1 {
		t.Errorf("vnic_add on b answered %+v", st)
	}
	if _, err := cb.Netlink().LinkByName("eth1"); err != nil {
		t.Fatalf("eth1 not in %s: %v", cb.Name(), err)
	}
	e2etest.Ping(t, ca, "10.1.0.2")

	// The same checks as the config: refused with the argument's name.
	for _, tc := range []struct {
		args ctl.VNICAddArgs
		err  string
	}{
		{ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", IfName: "eth2", NetNS: ca.Name()}, "vesw: vesw 1 is already used by vport 0"},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8001", IfName: "eth1", NetNS: ca.Path()}, `ifname: "eth1" is vport 0's`},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x0000", IfName: "eth2"}, "pkey: 0x0000 has base 0"},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", McastDLID: "0xF00009"}, "mcast_dlid: group 0xF00009 is not declared"},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "eth2", NetNS: "nosuchns-" + nstest.RunID()}, "open netns"},
	} {
		if err := ctl.Call(da.Socket, ctl.CmdVNICAdd, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("vnic_add %+v: %v; want %q", tc.args, err, tc.err)
		}
	}
	var vs []ctl.VNICStatus
	if err := ctl.Call(da.Socket, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 1 {
		t.Fatalf("after refused adds, vnics = %+v, %v; want the one VNIC", vs, err)
	}

	vnicctl(t, da.Socket, "vnic", "del", "0")
	if _, err := ca.Netlink().LinkByName("eth1"); err == nil {
		t.Error("eth1 still in the container after vnic del")
	}
	if err := ctl.Call(da.Socket, ctl.CmdVNICDel, map[string]int{"vport": 0}, nil); err == nil || !strings.Contains(err.Error(), "no vport 0") {
		t.Errorf("second vnic_del: %v", err)
	}
	// The vport and vesw are free again.
	vnicctl(t, da.Socket, "vnic", "add", "--vesw", "1", "--pkey", "0x8001", "--mcast-dlid", "0xF00001",
		"--eth-mtu", "1400", "--ifname", "eth1", "--netns", ca.Path(), "--address", "10.1.0.1/24", "--owner", "test:x")
	e2etest.Ping(t, ca, "10.1.0.2")
	var del ctl.VNICDeleted
	if err := ctl.Call(da.Socket, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "test:x"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Errorf("vnic_del by owner: %+v, %v", del, err)
	}
	if err := ctl.Call(da.Socket, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "test:x"}, &del); err != nil || len(del.Deleted) != 0 {
		t.Errorf("second vnic_del by owner: %+v, %v; want nothing deleted, no error", del, err)
	}
	vnicctl(t, db.Socket, "vnic", "del", "0")
	if _, err := cb.Netlink().LinkByName("eth1"); err == nil {
		t.Error("eth1 still in the pid's namespace after vnic del")
	}

	// A namespace removed while it has a VNIC (a container gone before its
	// CNI DEL, no process left in it): vnicd does not hold it open, so the
	// kernel destroys it, with the VNIC's interface and a veth whose peer
	// is there; the VNIC goes down, and is still deleted cleanly.
	gone := nstest.RunID() + "-rtgone"
	if out, err := exec.Command("ip", "netns", "add", gone).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", gone).Run() })
	end, peer := nstest.LinkName("v"), nstest.LinkName("v")
	if out, err := exec.Command("ip", "-n", a.Name(), "link", "add", end, "type", "veth", "peer", "name", peer, "netns", gone).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	vnicctl(t, da.Socket, "vnic", "add", "--vesw", "3", "--pkey", "0x8003", "--ifname", "eth3", "--netns", gone)
	if out, err := exec.Command("ip", "netns", "del", gone).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	// The kernel destroys the namespace in a worker: bounded waits.
	if !waitfor.Poll(10*time.Second, func() bool {
		if err := ctl.Call(da.Socket, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 1 {
			t.Fatalf("vnics after the namespace's deletion: %+v, %v", vs, err)
		}
		return !vs[0].LinkUp && vs[0].OperState != "FORWARDING"
	}) {
		t.Fatalf("VNIC of a deleted namespace still %s, link up %v, 10 s on: the namespace is kept alive", vs[0].OperState, vs[0].LinkUp)
	}
	nstest.WaitLinkGone(t, a, end, 10*time.Second, "its peer's namespace was deleted, and is kept alive")
	vnicctl(t, da.Socket, "vnic", "del", "0")
	if err := ctl.Call(da.Socket, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 0 {
		t.Errorf("vnics after deleting the VNIC of a removed namespace: %+v, %v", vs, err)
	}
}

// TestE2ERuntimeRestart adds a runtime VNIC into a namespace, with an
// address, and kills host a's vnicd (SIGKILL, then SIGTERM): the interface
// stays in the namespace, carrier off, with its address, and the restarted
// vnicd takes it over, so ping works again without a new vnic_add and the
// namespace has exactly one such interface. After vnic_del, a restart does
// not bring it back. It runs with one queue and with
// node.Queues 2, where the interface is a multiqueue TAP that the restarted
// vnicd takes over with both its queues.
func TestE2ERuntimeRestart(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	for _, queues := range []int{1, 2} {
		t.Run(fmt.Sprintf("queues=%d", queues), func(t *testing.T) { testRuntimeRestart(t, queues) })
	}
}

func testRuntimeRestart(t *testing.T, queues int) {
	sfx := fmt.Sprint(queues)
	a, b := nstest.NewNS(t, "rra"+sfx), nstest.NewNS(t, "rrb"+sfx)
	ca, cb := nstest.NewNS(t, "rrca"+sfx), nstest.NewNS(t, "rrcb"+sfx)
	nstest.Veth(t, a, b, pfx("10.203.0.1/24"), pfx("10.203.0.2/24"), 1500)
	dir := t.TempDir()
	host := func(name string, lid, peer int, self, other string) e2etest.Host {
		return e2etest.Host{Name: name, LID: lid, Listen: self + ":4793", Queues: queues,
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidB}},
			Socket: filepath.Join(dir, name+".sock")}
	}
	kernelQueues := func() int {
		t.Helper()
		out, err := ca.Exec(context.Background(), "ls", "/sys/class/net/eth1/queues")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(out), "tx-")
	}
	ha := host("host-a", lidA, lidB, "10.203.0.1", "10.203.0.2")
	da := e2etest.Start(t, a, ha)
	db := e2etest.Start(t, b, host("host-b", lidB, lidA, "10.203.0.2", "10.203.0.1"))
	add := func(d *e2etest.Daemon, ns *nstest.NS, addr, owner string) {
		t.Helper()
		if err := ctl.Call(d.Socket, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", McastDLID: mcRed, EthMTU: 1400,
			IfName: "eth1", NetNS: ns.Name(), Addresses: []string{addr}, Owner: owner}, nil); err != nil {
			t.Fatal(err)
		}
	}
	add(db, cb, "10.1.0.2/24", "test:b")
	add(da, ca, "10.1.0.1/24", "test:a")
	e2etest.Ping(t, ca, "10.1.0.2")
	if n := kernelQueues(); n != queues {
		t.Errorf("eth1 has %d queues in the kernel, want %d", n, queues)
	}

	for _, sig := range []os.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		_ = da.Stop(t, sig)
		// The interface stays, with its address, carrier off.
		var l netlink.Link
		var err error
		waitfor.Poll(5*time.Second, func() bool {
			l, err = ca.Netlink().LinkByName("eth1")
			return err != nil || l.Attrs().RawFlags&unix.IFF_LOWER_UP == 0
		})
		if err != nil {
			t.Fatalf("%v: eth1 gone from the container: %v", sig, err)
		}
		if l.Type() != "tuntap" || l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0 || l.Attrs().Alias != "opavnic:host-a:vport0" {
			t.Errorf("%v: eth1 while vnicd is down: type %s, flags %#x, alias %q; want a tuntap, carrier off, tagged",
				sig, l.Type(), l.Attrs().RawFlags, l.Attrs().Alias)
		}
		if as, err := ca.Netlink().AddrList(l, netlink.FAMILY_V4); err != nil || len(as) != 1 || as[0].IPNet.String() != "10.1.0.1/24" {
			t.Errorf("%v: eth1's addresses while vnicd is down: %v, %v", sig, as, err)
		}
		restart := time.Now()
		da.Restart(t)
		if err := da.WaitUp(1, 10*time.Second); err != nil {
			t.Fatalf("%v: vnicd did not come back with its runtime VNIC: %v", sig, err)
		}
		ca.PingWithin(t, "10.1.0.2", 10*time.Second)
		t.Logf("FIGURE runtime restart: after %v, first ping reply %v after restart", sig, time.Since(restart).Round(time.Millisecond))
		if got := tuntaps(links(t, ca)); !slices.Equal(got, []string{"eth1"}) {
			t.Errorf("%v: TAPs in the container after the restart: %v, want eth1 once", sig, got)
		}
		if n := kernelQueues(); n != queues {
			t.Errorf("%v: eth1 has %d queues in the kernel after the restart, want %d", sig, n, queues)
		}
		var vs []ctl.VNICStatus
		if err := ctl.Call(da.Socket, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 1 || vs[0].Owner != "test:a" ||
			vs[0].IfName != "eth1" || vs[0].NetNS != ca.Name() || vs[0].VPort != 0 {
			t.Errorf("%v: vnicd's VNICs after the restart: %+v, %v", sig, vs, err)
		}
	}

	var del ctl.VNICDeleted
	if err := ctl.Call(da.Socket, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "test:a"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Fatalf("vnic_del: %+v, %v", del, err)
	}
	if _, err := ca.Netlink().LinkByName("eth1"); err == nil {
		t.Error("eth1 still in the container after vnic_del")
	}
	_ = da.Stop(t, syscall.SIGKILL)
	da.Restart(t)
	if err := da.WaitUp(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// A window for what must not happen: vnicd bringing the deleted VNIC
	// back after it answers.
	time.Sleep(200 * time.Millisecond)
	if got := tuntaps(links(t, ca)); len(got) != 0 {
		t.Errorf("TAPs in the container after vnic_del and a restart: %v", got)
	}
}

// TestE2ERuntimeRenamedOrMovedRestart: a runtime VNIC whose netdev someone
// renamed, or moved to another namespace, by hand is taken over where it
// is when vnicd starts again (the state file follows the netdev), not
// dropped with its persistent TAP left behind; vnic_del then removes it
// there.
func TestE2ERuntimeRenamedOrMovedRestart(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	a, b := nstest.NewNS(t, "rma"), nstest.NewNS(t, "rmb")
	ca, cb, cc := nstest.NewNS(t, "rmca"), nstest.NewNS(t, "rmcb"), nstest.NewNS(t, "rmcc")
	nstest.Veth(t, a, b, pfx("10.203.0.1/24"), pfx("10.203.0.2/24"), 1500)
	dir := t.TempDir()
	host := func(name string, lid, peer int, self, other string) e2etest.Host {
		return e2etest.Host{Name: name, LID: lid, Listen: self + ":4793",
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidB}},
			Socket: filepath.Join(dir, name+".sock")}
	}
	ha := host("host-a", lidA, lidB, "10.203.0.1", "10.203.0.2")
	da := e2etest.Start(t, a, ha)
	db := e2etest.Start(t, b, host("host-b", lidB, lidA, "10.203.0.2", "10.203.0.1"))
	for _, c := range []struct {
		d     *e2etest.Daemon
		ns    *nstest.NS
		addr  string
		owner string
	}{{db, cb, "10.1.0.2/24", "test:b"}, {da, ca, "10.1.0.1/24", "test:a"}} {
		if err := ctl.Call(c.d.Socket, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", McastDLID: mcRed, EthMTU: 1400,
			IfName: "eth1", NetNS: c.ns.Name(), Addresses: []string{c.addr}, Owner: c.owner}, nil); err != nil {
			t.Fatal(err)
		}
	}
	e2etest.Ping(t, ca, "10.1.0.2")
	ip := func(ns *nstest.NS, args ...string) {
		t.Helper()
		if out, err := ns.Exec(context.Background(), "ip", args...); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	// vnicd knows the netdev by its new place, and the state file says so.
	placed := func(ns *nstest.NS, ifname string) {
		t.Helper()
		var vs []ctl.VNICStatus
		var err error
		var b []byte
		if !waitfor.Poll(5*time.Second, func() bool {
			err = ctl.Call(da.Socket, ctl.CmdVNICs, nil, &vs)
			b, _ = os.ReadFile(vnicd.RuntimePath(da.Socket))
			return err == nil && len(vs) == 1 && vs[0].IfName == ifname && vs[0].NetNS == ns.Name() &&
				strings.Contains(string(b), `"ifname": "`+ifname+`"`) && strings.Contains(string(b), `"netns": "`+ns.Name()+`"`)
		}) {
			t.Fatalf("vnicd's VNICs %+v (%v), state file:\n%s\nwant %s in %s", vs, err, b, ifname, ns.Name())
		}
	}
	restart := func(sig os.Signal, ns *nstest.NS, ifname string) {
		t.Helper()
		_ = da.Stop(t, sig)
		da.Restart(t)
		if err := da.WaitUp(1, 10*time.Second); err != nil {
			t.Fatalf("%v: vnicd did not come back with its runtime VNIC: %v", sig, err)
		}
		ns.PingWithin(t, "10.1.0.2", 10*time.Second)
		if got := tuntaps(links(t, ns)); !slices.Equal(got, []string{ifname}) {
			t.Errorf("%v: TAPs in %s after the restart: %v, want %s once", sig, ns.Name(), got, ifname)
		}
		placed(ns, ifname)
	}

	ip(ca, "link", "set", "eth1", "name", "lan1")
	placed(ca, "lan1")
	restart(syscall.SIGTERM, ca, "lan1")

	ip(ca, "link", "set", "lan1", "netns", cc.Name())
	ip(cc, "addr", "add", "10.1.0.1/24", "dev", "lan1")
	ip(cc, "link", "set", "lan1", "up")
	placed(cc, "lan1")
	cc.PingWithin(t, "10.1.0.2", 5*time.Second)
	restart(syscall.SIGKILL, cc, "lan1")
	if got := tuntaps(links(t, ca)); len(got) != 0 {
		t.Errorf("TAPs left in %s: %v", ca.Name(), got)
	}

	var del ctl.VNICDeleted
	if err := ctl.Call(da.Socket, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "test:a"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Fatalf("vnic_del: %+v, %v", del, err)
	}
	if got := tuntaps(links(t, cc)); len(got) != 0 {
		t.Errorf("TAPs in %s after vnic_del: %v", cc.Name(), got)
	}
}
