package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestDelNetnsGone: CNI SPEC.md, DEL: "Plugins should generally
// complete a DEL action without error even if some resources are missing"
// and "MUST accept multiple DEL calls ... and return success if the
// interface in question ... [is] missing". The container's namespace is
// deleted (with the VNIC in it) before the runtime's DEL, as after a crash:
// DEL succeeds, twice, vnicd gives the vesw's port back, and a new
// container gets one on the same vesw. Static and managed vnicd.
func TestDelNetnsGone(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequirePaths(t, "/dev/net/tun")
	nstest.RequireTools(t, "ip", "go")
	bin := buildBins(t)
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(bin, "opafm"), "../opafm").CombinedOutput(); err != nil {
		t.Fatalf("building opafm: %v\n%s", err, out)
	}
	cni := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil)
	ctx := context.Background()
	rt := func(id string, ns *nstest.NS) *libcni.RuntimeConf {
		return &libcni.RuntimeConf{ContainerID: id, NetNS: ns.Path(), IfName: containerIface}
	}
	gone := func(t *testing.T, list *libcni.NetworkConfigList, sock string, want int) {
		t.Helper()
		c1 := nstest.NewNS(t, "rvgone1")
		if _, err := cni.AddNetworkList(ctx, list, rt("gone1", c1)); err != nil {
			t.Fatalf("ADD: %v", err)
		}
		if out, err := exec.Command("ip", "netns", "delete", c1.Name()).CombinedOutput(); err != nil {
			t.Fatalf("deleting the container's namespace: %v %s", err, out)
		}
		for i := range 2 {
			if err := cni.DelNetworkList(ctx, list, rt("gone1", c1)); err != nil {
				t.Errorf("DEL %d with the namespace gone: %v", i+1, err)
			}
		}
		// The port is free again: a new container gets it (a managed vnicd
		// may wait for the EM to make it again).
		c2 := nstest.NewNS(t, "rvgone2")
		var err error
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, err = cni.AddNetworkList(ctx, list, rt("gone2", c2)); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("ADD of a new container after the DEL: %v", err)
		}
		if err := cni.DelNetworkList(ctx, list, rt("gone2", c2)); err != nil {
			t.Errorf("DEL gone2: %v", err)
		}
		var vs []ctl.VNICStatus
		if err := ctl.Call(sock, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != want {
			t.Errorf("vnicd has %+v (%v); want %d ports", vs, err, want)
		}
	}

	t.Run("static", func(t *testing.T) {
		a, b := nstest.NewNS(t, "rvsa"), nstest.NewNS(t, "rvsb")
		nstest.Veth(t, a, b, netipPrefix(underlayA+"/24"), netipPrefix(underlayB+"/24"), 1500)
		sock := startHost(t, filepath.Join(bin, "vnicd"), a, "host-a", lidA, lidB, underlayA, underlayB)
		gone(t, netList(t, "1.1.0", "red", 1, "0x8001", mcRed, sock, "10.1.0.10", "10.1.0.19", t.TempDir()), sock, 0)
	})

	t.Run("managed", func(t *testing.T) {
		fmNS, a := nstest.NewNS(t, "rvmfm"), nstest.NewNS(t, "rvma")
		nstest.Veth(t, a, fmNS, netipPrefix("10.204.0.1/24"), netipPrefix("10.204.0.3/24"), 1500)
		dir := t.TempDir()
		fabric := filepath.Join(dir, "fabric.yaml")
		text := `fm: {name: fm, listen: "10.204.0.3:4793", control_socket: "` + filepath.Join(dir, "fm.sock") + `"}
nodes: [{name: host-a, lid: 0x10}]
vesws:
  - {id: 1, name: red, pkey: 0x8001, eth_mtu: 1400, mcast_dlid: 0xF00001, members: [{node: host-a, vport: 0}]}
`
		if err := os.WriteFile(fabric, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := fmNS.Start(context.Background(), filepath.Join(bin, "opafm"), "--config", fabric); err != nil {
			t.Fatal(err)
		}
		h := newManagedHost(t, filepath.Join(bin, "vnicd"), a, dir, "host-a", "10.204.0.1:4793", "")
		waitPorts(t, h.sock, 1, 15*time.Second)
		gone(t, managedNet(t, "red", 1, h.sock, "10.1.0.10", "10.1.0.19", t.TempDir()), h.sock, 1)
	})
}
