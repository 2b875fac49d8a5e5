package vnicd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// startFakeDaemon runs a daemon of cfgText (with the control socket in a
// temporary directory) on in-memory devices; no root needed.
func startFakeDaemon(t testing.TB, cfgText string) string {
	t.Helper()
	return startFakeDaemonBatch(t, cfgText, 0)
}

// startFakeDaemonBatch is startFakeDaemon with devices that read batch frames
// at a time (0: taptest's default); a small batch keeps many ports' transmit
// buffers small.
func startFakeDaemonBatch(t testing.TB, cfgText string, batch int) string {
	t.Helper()
	return startFakeDaemonWith(t, cfgText, batch, nil)
}

// startFakeDaemonWith is startFakeDaemonBatch with made(spec) called for
// every device the daemon makes, before it is made.
func startFakeDaemonWith(t testing.TB, cfgText string, batch int, made func(engine.DeviceSpec)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "vnicd.sock")
	startFakeDaemonAt(t, sock, cfgText, batch, made)
	return sock
}

// startFakeDaemonAt is startFakeDaemonWith with the control socket at sock.
func startFakeDaemonAt(t testing.TB, sock, cfgText string, batch int, made func(engine.DeviceSpec)) {
	t.Helper()
	cfg := configFreePort(t, cfgText+fmt.Sprintf("control: {socket: %q}\n", sock))
	factory := func(s engine.DeviceSpec) (tap.Netdev, error) {
		if made != nil {
			made(s)
		}
		a, _ := taptest.Pair(taptest.Options{Names: [2]string{s.Netdev.IfName, "peer"}, BatchSize: batch})
		_ = a.MoveTo(s.Netdev.NetNS, s.Netdev.IfName, nil) // placed as the TAP factory places it
		return a, nil
	}
	d, err := vnicd.NewDaemon(cfg, factory, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

const fakeStatic = `
node: {name: a, lid: 0x10, listen: "127.0.0.1:PORT"}
peers: [{lid: 0x20, address: "127.0.0.1:9"}]
multicast: [{lid: 0xF00001, members: [0x10, 0x20]}]
vnics:
  - {vport: 0, vesw: {id: 5, pkey: 0x8005}, port: {ifname: static0}}
`

func TestRuntimeVNICCommands(t *testing.T) {
	sock := startFakeDaemon(t, fakeStatic)
	var st ctl.VNICStatus
	err := ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", McastDLID: "0xF00001",
		IfName: "eth1", NetNS: "pid:1", Addresses: []string{"10.1.0.5/24"}, Owner: "cni:n:c1:eth1"}, &st)
	if err != nil {
		t.Fatal(err)
	}
	// vport 0 is the config's: the lowest free one is 1.
	if st.VPort != 1 || st.IfName != "eth1" || st.NetNS != "pid:1" || st.MAC != "02:00:01:10:00:00" ||
		len(st.Addresses) != 1 || st.Addresses[0] != "10.1.0.5/24" || st.Owner != "cni:n:c1:eth1" || st.ConfigState != "FORWARDING" {
		t.Errorf("vnic_add answered %+v", st)
	}
	for _, tc := range []struct {
		args any
		err  string
		code ctl.Code
	}{
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "eth2", Owner: "cni:n:c1:eth1"}, `owner: "cni:n:c1:eth1" already owns vport 1`, ""},
		{ctl.VNICAddArgs{VPort: 0, VESW: 2, PKey: "0x8002"}, "vport: vport 0 is in use", ""},
		{ctl.VNICAddArgs{VESW: 5, PKey: "0x8002"}, "vesw: vesw 5 is already used by vport 0", ""},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "static0"}, `ifname: "static0" is vport 0's`, ""},
		{map[string]any{"vesw": 2, "pkey": 1, "bogus": 1}, "bogus: unknown field", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x10000"}, "pkey", ctl.CodeInvalidArgument},
	} {
		if err := ctl.Call(sock, ctl.CmdVNICAdd, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) || ctl.CodeOf(err) != tc.code {
			t.Errorf("vnic_add %+v: %v (code %q); want %q, code %q", tc.args, err, ctl.CodeOf(err), tc.err, tc.code)
		}
	}
	for _, tc := range []struct {
		args any
		err  string
		code ctl.Code
	}{
		{map[string]int{"vport": 0}, "vport 0 is from the config file", ""},
		{map[string]int{"vport": 9}, "no vport 9", ctl.CodeNotFound},
		{map[string]int{"vport": 255}, "vport: 255 is out of range 0..254", ctl.CodeInvalidArgument},
		{map[string]any{}, "needs a vport or an owner", ctl.CodeInvalidArgument},
		{map[string]any{"vport": 1, "owner": "x"}, "not both", ctl.CodeInvalidArgument},
	} {
		if err := ctl.Call(sock, ctl.CmdVNICDel, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) || ctl.CodeOf(err) != tc.code {
			t.Errorf("vnic_del %+v: %v (code %q); want %q, code %q", tc.args, err, ctl.CodeOf(err), tc.err, tc.code)
		}
	}
	// A second runtime VNIC, then GC keeps c2 and removes c1.
	if err := ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "eth2", Owner: "cni:n:c2:eth2"}, &st); err != nil || st.VPort != 2 {
		t.Fatalf("second vnic_add: %+v, %v", st, err)
	}
	var del ctl.VNICDeleted
	if err := ctl.Call(sock, ctl.CmdVNICGC, ctl.VNICGCArgs{Prefix: "cni:n:", Keep: []string{"cni:n:c2:eth2"}}, &del); err != nil ||
		len(del.Deleted) != 1 || del.Deleted[0].Owner != "cni:n:c1:eth1" {
		t.Fatalf("vnic_gc: %+v, %v", del, err)
	}
	var vs []ctl.VNICStatus
	if err := ctl.Call(sock, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 2 || vs[0].VPort != 0 || vs[1].Owner != "cni:n:c2:eth2" {
		t.Fatalf("vnics after gc: %+v, %v", vs, err)
	}
	if err := ctl.Call(sock, ctl.CmdVNICGC, ctl.VNICGCArgs{}, nil); err == nil || !strings.Contains(err.Error(), "non-empty owner prefix") {
		t.Errorf("vnic_gc without prefix: %v", err)
	}
	// The freed vport 1 is the lowest free one again.
	if err := ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001"}, &st); err != nil || st.VPort != 1 || st.IfName != "vnic1" {
		t.Errorf("vnic_add after gc: %+v, %v", st, err)
	}
}

// TestStartRemovesStateTemps: what a write of a state file cut short by a
// crash left beside the control socket (the claims and runtime files'
// temporaries) is removed once the daemon owns the socket; other files
// stay.
func TestStartRemovesStateTemps(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "vnicd.sock")
	for _, n := range []string{"vnicd.runtime.json.tmp123", "vnicd.claims.json.tmp45", "vnicd.runtime.json.bad", "other.tmp1"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	startFakeDaemonAt(t, sock, fakeStatic, 0, nil)
	for n, want := range map[string]bool{"vnicd.runtime.json.tmp123": false, "vnicd.claims.json.tmp45": false,
		"vnicd.runtime.json.bad": true, "other.tmp1": true} {
		if _, err := os.Stat(filepath.Join(dir, n)); (err == nil) != want {
			t.Errorf("%s: there %v after the start, want %v", n, err == nil, want)
		}
	}
}
