package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

var (
	vnicctlOnce sync.Once
	vnicctlBin  string
	vnicctlErr  error
)

// vnicctlBinary builds cmd/vnicctl once (beside the test's vnicd binary).
func vnicctlBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(vnicdBinary(t))
	vnicctlOnce.Do(func() {
		vnicctlBin = filepath.Join(dir, "vnicctl")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", vnicctlBin, "../vnicctl").CombinedOutput()
		if err != nil {
			vnicctlErr = err
			vnicctlBin = string(out)
		}
	})
	if vnicctlErr != nil {
		t.Fatalf("building vnicctl: %v\n%s", vnicctlErr, vnicctlBin)
	}
	return vnicctlBin
}

// waitInNS waits until process pid is in ns (`ip netns exec` enters it
// after the process starts).
func waitInNS(t *testing.T, pid int, ns *nstest.NS) {
	t.Helper()
	var want unix.Stat_t
	if err := unix.Stat(ns.Path(), &want); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var st unix.Stat_t
		if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st); err == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not enter %s", pid, ns.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func vnicctl(t *testing.T, socket string, args ...string) string {
	t.Helper()
	out, err := exec.Command(vnicctlBinary(t), append([]string{"--socket", socket}, args...)...).CombinedOutput()
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
	nstest.RequireRoot(t)
	nstest.RequirePaths(t, "/dev/net/tun")
	nstest.RequireTools(t, "ip", "ping", "sleep")
	a, b := nstest.NewNS(t, "rta"), nstest.NewNS(t, "rtb")
	ca, cb := nstest.NewNS(t, "rtca"), nstest.NewNS(t, "rtcb")
	nstest.Veth(t, a, b, pfx("10.201.0.1/24"), pfx("10.201.0.2/24"), 1500)
	host := func(name string, lid, peer int, self, other string) hostSpec {
		return hostSpec{name: name, lid: lid, listen: self + ":4793",
			peers:  map[int]string{peer: other + ":4793"},
			groups: map[int][]int{mcRed: {lidA, lidB}}}
	}
	da := startVnicd(t, a, host("host-a", lidA, lidB, "10.201.0.1", "10.201.0.2"))
	db := startVnicd(t, b, host("host-b", lidB, lidA, "10.201.0.2", "10.201.0.1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeper, err := cb.Start(ctx, "sleep", "120")
	if err != nil {
		t.Fatal(err)
	}
	waitInNS(t, sleeper.Process.Pid, cb)

	out := vnicctl(t, da.socket, "vnic", "add", "--vesw", "1", "--pkey", "0x8001", "--mcast-dlid", "0xF00001",
		"--eth-mtu", "1400", "--ifname", "eth1", "--netns", ca.Name(), "--address", "10.1.0.1/24")
	if !strings.Contains(out, "eth1") || !strings.Contains(out, "10.1.0.1/24") {
		t.Errorf("vnic add answered:\n%s", out)
	}
	var st vnicd.VNICStatus
	if err := vnicd.Call(db.socket, "vnic_add", vnicd.VNICAddArgs{VESW: 1, PKey: "0x8001", McastDLID: mcRed, EthMTU: 1400,
		IfName: "eth1", NetNS: "pid:" + strconv.Itoa(sleeper.Process.Pid), Addresses: []string{"10.1.0.2/24"}}, &st); err != nil {
		t.Fatal(err)
	}
	if st.VPort != 0 || st.IfName != "eth1" || st.MAC != "02:00:01:de:bc:0a" || st.VESW != 1 {
		t.Errorf("vnic_add on b answered %+v", st)
	}
	if _, err := cb.Netlink().LinkByName("eth1"); err != nil {
		t.Fatalf("eth1 not in %s: %v", cb.Name(), err)
	}
	ping(t, ca, "10.1.0.2")

	// The same checks as the config: refused with the argument's name.
	for _, tc := range []struct {
		args vnicd.VNICAddArgs
		err  string
	}{
		{vnicd.VNICAddArgs{VESW: 1, PKey: "0x8001", IfName: "eth2", NetNS: ca.Name()}, "vesw: vesw 1 is already used by vport 0"},
		{vnicd.VNICAddArgs{VESW: 2, PKey: "0x8001", IfName: "eth1", NetNS: ca.Path()}, `ifname: "eth1" is vport 0's`},
		{vnicd.VNICAddArgs{VESW: 2, PKey: "0x0000", IfName: "eth2"}, "pkey: 0x0000 has base 0"},
		{vnicd.VNICAddArgs{VESW: 2, PKey: "0x8002", McastDLID: "0xF00009"}, "mcast_dlid: group 0xF00009 is not declared"},
		{vnicd.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "eth2", NetNS: "nosuchns-" + nstest.RunID()}, "open netns"},
	} {
		if err := vnicd.Call(da.socket, "vnic_add", tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("vnic_add %+v: %v; want %q", tc.args, err, tc.err)
		}
	}
	var vs []vnicd.VNICStatus
	if err := vnicd.Call(da.socket, "vnics", nil, &vs); err != nil || len(vs) != 1 {
		t.Fatalf("after refused adds, vnics = %+v, %v; want the one VNIC", vs, err)
	}

	vnicctl(t, da.socket, "vnic", "del", "0")
	if _, err := ca.Netlink().LinkByName("eth1"); err == nil {
		t.Error("eth1 still in the container after vnic del")
	}
	if err := vnicd.Call(da.socket, "vnic_del", map[string]int{"vport": 0}, nil); err == nil || !strings.Contains(err.Error(), "no vport 0") {
		t.Errorf("second vnic_del: %v", err)
	}
	// The vport and vesw are free again.
	vnicctl(t, da.socket, "vnic", "add", "--vesw", "1", "--pkey", "0x8001", "--mcast-dlid", "0xF00001",
		"--eth-mtu", "1400", "--ifname", "eth1", "--netns", ca.Path(), "--address", "10.1.0.1/24", "--owner", "test:x")
	ping(t, ca, "10.1.0.2")
	var del vnicd.VNICDeleted
	if err := vnicd.Call(da.socket, "vnic_del", vnicd.VNICDelArgs{Owner: "test:x"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Errorf("vnic_del by owner: %+v, %v", del, err)
	}
	if err := vnicd.Call(da.socket, "vnic_del", vnicd.VNICDelArgs{Owner: "test:x"}, &del); err != nil || len(del.Deleted) != 0 {
		t.Errorf("second vnic_del by owner: %+v, %v; want nothing deleted, no error", del, err)
	}
	vnicctl(t, db.socket, "vnic", "del", "0")
	if _, err := cb.Netlink().LinkByName("eth1"); err == nil {
		t.Error("eth1 still in the pid's namespace after vnic del")
	}

	// A namespace removed while it has a VNIC (a container gone before its
	// CNI DEL): vnicd holds it open, so the VNIC is still deleted cleanly.
	gone := nstest.RunID() + "-rtgone"
	if out, err := exec.Command("ip", "netns", "add", gone).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", gone).Run() })
	vnicctl(t, da.socket, "vnic", "add", "--vesw", "3", "--pkey", "0x8003", "--ifname", "eth3", "--netns", gone)
	if out, err := exec.Command("ip", "netns", "del", gone).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	vnicctl(t, da.socket, "vnic", "del", "0")
	if err := vnicd.Call(da.socket, "vnics", nil, &vs); err != nil || len(vs) != 0 {
		t.Errorf("vnics after deleting the VNIC of a removed namespace: %+v, %v", vs, err)
	}
}
