package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// The end-to-end test runs libcni against the real plugin and host-local,
// with two real vnicds in namespaces joined by a veth, and three container
// namespaces. It needs root; unprivileged runs skip it.

const (
	lidA, lidB     = 0x10, 0x20
	mcRed, mcBlue  = 0xF00001, 0xF00002
	underlayA      = "10.202.0.1"
	underlayB      = "10.202.0.2"
	containerIface = "eth0"
)

// buildBins builds vnicd, vnic-cni and host-local into a temporary
// directory, the CNI bin dir.
func buildBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"vnicd", "../vnicd"},
		{"vnic-cni", "."},
		{"host-local", "github.com/containernetworking/plugins/plugins/ipam/host-local"},
	} {
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(dir, b.out), b.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir
}

// startHost starts vnicd in ns with no VNICs, multicast groups red (vesw 1)
// and blue (vesw 2) on both hosts; it returns the control socket.
func startHost(t *testing.T, bin string, ns *nstest.NS, name string, lid, peer int, self, other string) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "vnicd.sock")
	cfg := fmt.Sprintf(`node: {name: %s, lid: %#x, listen: "%s:4793"}
peers: [{lid: %#x, address: "%s:4793"}]
multicast:
  - {lid: %#x, members: [%#x, %#x]}
  - {lid: %#x, members: [%#x, %#x]}
control: {socket: %q}
`, name, lid, self, peer, other, mcRed, lidA, lidB, mcBlue, lidA, lidB, sock)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Start(context.Background(), bin, "--config", path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ctl.Call(sock, "vnics", nil, nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("vnicd %s did not come up", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sock
}

// netList is a conflist of one vnic-cni network with host-local.
func netList(t *testing.T, version, name string, vesw int, pkey string, mcast int, sock, rangeStart, rangeEnd, dataDir string) *libcni.NetworkConfigList {
	t.Helper()
	text := fmt.Sprintf(`{"cniVersion": %q, "name": %q, "plugins": [{"type": "vnic-cni", "vesw": %d, "pkey": %q,
		"mcast_dlid": "%#x", "mtu": 1400, "socket": %q,
		"ipam": {"type": "host-local", "dataDir": %q,
			"ranges": [[{"subnet": "10.1.0.0/24", "rangeStart": %q, "rangeEnd": %q}]]}}]}`,
		version, name, vesw, pkey, mcast, sock, dataDir, rangeStart, rangeEnd)
	l, err := libcni.ConfListFromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ping(ns *nstest.NS, addr string) error {
	_, err := ns.Exec(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "1", addr)
	return err
}

func TestE2ECNI(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequirePaths(t, "/dev/net/tun")
	nstest.RequireTools(t, "ip", "ping", "go")
	bin := buildBins(t)
	a, b := nstest.NewNS(t, "cnia"), nstest.NewNS(t, "cnib")
	c1, c2, c3 := nstest.NewNS(t, "cnic1"), nstest.NewNS(t, "cnic2"), nstest.NewNS(t, "cnic3")
	nstest.Veth(t, a, b, netipPrefix(underlayA+"/24"), netipPrefix(underlayB+"/24"), 1500)
	sockA := startHost(t, filepath.Join(bin, "vnicd"), a, "host-a", lidA, lidB, underlayA, underlayB)
	sockB := startHost(t, filepath.Join(bin, "vnicd"), b, "host-b", lidB, lidA, underlayB, underlayA)

	data := t.TempDir()
	redA := netList(t, "1.0.0", "red", 1, "0x8001", mcRed, sockA, "10.1.0.10", "10.1.0.19", filepath.Join(data, "a"))
	redB := netList(t, "1.0.0", "red", 1, "0x8001", mcRed, sockB, "10.1.0.20", "10.1.0.29", filepath.Join(data, "b"))
	blueA := netList(t, "1.1.0", "blue", 2, "0x8002", mcBlue, sockA, "10.1.0.30", "10.1.0.39", filepath.Join(data, "a"))
	cni := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil)
	ctx := context.Background()
	rt := func(id string, ns *nstest.NS) *libcni.RuntimeConf {
		return &libcni.RuntimeConf{ContainerID: id, NetNS: ns.Path(), IfName: containerIface}
	}

	add := func(list *libcni.NetworkConfigList, id string, ns *nstest.NS) *current.Result {
		t.Helper()
		r, err := cni.AddNetworkList(ctx, list, rt(id, ns))
		if err != nil {
			t.Fatalf("ADD %s to %s: %v", id, list.Name, err)
		}
		res, err := current.NewResultFromResult(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Interfaces) != 1 || res.Interfaces[0].Name != containerIface || res.Interfaces[0].Sandbox != ns.Path() ||
			len(res.IPs) != 1 || res.IPs[0].Interface == nil || *res.IPs[0].Interface != 0 {
			t.Fatalf("ADD %s: result %s", id, r)
		}
		l, err := ns.Netlink().LinkByName(containerIface)
		if err != nil {
			t.Fatalf("ADD %s: %s not in the container: %v", id, containerIface, err)
		}
		if l.Attrs().HardwareAddr.String() != res.Interfaces[0].Mac || l.Attrs().MTU != 1400 {
			t.Errorf("ADD %s: link MAC %s MTU %d, result MAC %s", id, l.Attrs().HardwareAddr, l.Attrs().MTU, res.Interfaces[0].Mac)
		}
		return res
	}
	r1 := add(redA, "c1", c1)
	r2 := add(redB, "c2", c2)
	r3 := add(blueA, "c3", c3)
	ip1, ip2 := r1.IPs[0].Address.IP.String(), r2.IPs[0].Address.IP.String()
	if r1.Interfaces[0].Mac != "02:00:01:10:00:00" || r3.Interfaces[0].Mac != "02:00:02:10:00:00" {
		t.Errorf("MACs %s, %s; want the ones derived from host a's LID and vesws 1 and 2", r1.Interfaces[0].Mac, r3.Interfaces[0].Mac)
	}

	// c1 and c2 share vesw 1 across the hosts; c3 is on vesw 2.
	if err := ping(c1, ip2); err != nil {
		t.Errorf("c1 -> c2: %v", err)
	}
	if err := ping(c2, ip1); err != nil {
		t.Errorf("c2 -> c1: %v", err)
	}
	if err := ping(c3, ip1); err == nil {
		t.Errorf("c3 on vesw 2 reached c1 on vesw 1")
	}
	if err := ping(c3, ip2); err == nil {
		t.Errorf("c3 on vesw 2 reached c2 on vesw 1")
	}

	for _, tc := range []struct {
		list *libcni.NetworkConfigList
		id   string
		ns   *nstest.NS
	}{{redA, "c1", c1}, {redB, "c2", c2}, {blueA, "c3", c3}} {
		if err := cni.CheckNetworkList(ctx, tc.list, rt(tc.id, tc.ns)); err != nil {
			t.Errorf("CHECK %s: %v", tc.id, err)
		}
	}
	if err := cni.GetStatusNetworkList(ctx, blueA); err != nil {
		t.Errorf("STATUS: %v", err)
	}

	// A second container on the same vesw and host is refused (one port per
	// vesw and node), and the refusal leaves nothing behind.
	c4 := nstest.NewNS(t, "cnic4")
	if _, err := cni.AddNetworkList(ctx, redA, rt("c4", c4)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("ADD c4 to red on host a: %v; want a refusal", err)
	}
	if _, err := c4.Netlink().LinkByName(containerIface); err == nil {
		t.Error("a refused ADD left an interface")
	}

	// DEL removes the interface; a second DEL succeeds.
	if err := cni.DelNetworkList(ctx, redA, rt("c1", c1)); err != nil {
		t.Fatalf("DEL c1: %v", err)
	}
	if _, err := c1.Netlink().LinkByName(containerIface); err == nil {
		t.Error("DEL c1 left the interface")
	}
	if err := cni.DelNetworkList(ctx, redA, rt("c1", c1)); err != nil {
		t.Errorf("second DEL c1: %v", err)
	}
	if err := ping(c2, ip1); err == nil {
		t.Error("c1's address still answers after DEL")
	}
	// The freed vesw port takes a new container.
	if r := add(redA, "c1b", c1); r.Interfaces[0].Mac != r1.Interfaces[0].Mac {
		t.Errorf("c1b has MAC %s; want the freed port's %s", r.Interfaces[0].Mac, r1.Interfaces[0].Mac)
	}
	if err := ping(c1, ip2); err != nil {
		t.Errorf("c1b -> c2: %v", err)
	}

	lease := filepath.Join(data, "a", "blue", r3.IPs[0].Address.IP.String())
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("host-local has no lease file for c3: %v", err)
	}
	// GC (spec 1.1.0) of the blue network with no valid attachments removes
	// c3's VNIC; the red ones stay.
	if err := cni.GCNetworkList(ctx, blueA, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{}}); err != nil {
		t.Fatalf("GC blue: %v", err)
	}
	if _, err := c3.Netlink().LinkByName(containerIface); err == nil {
		t.Error("GC left c3's interface")
	}
	if _, err := c1.Netlink().LinkByName(containerIface); err != nil {
		t.Errorf("GC of blue removed red's c1b: %v", err)
	}
	// host-local released c3's address (it keeps one file per lease).
	if _, err := os.Stat(lease); !os.IsNotExist(err) {
		t.Errorf("after GC, host-local still holds c3's lease %s: %v", lease, err)
	}
	r3b := add(blueA, "c3b", c3)
	if err := ping(c3, r3b.IPs[0].Address.IP.String()); err != nil {
		t.Errorf("c3b pings itself: %v", err)
	}

	for _, tc := range []struct {
		list *libcni.NetworkConfigList
		id   string
		ns   *nstest.NS
	}{{redA, "c1b", c1}, {redB, "c2", c2}, {blueA, "c3b", c3}} {
		if err := cni.DelNetworkList(ctx, tc.list, rt(tc.id, tc.ns)); err != nil {
			t.Errorf("DEL %s: %v", tc.id, err)
		}
	}
	var vs []ctl.VNICStatus
	for _, s := range []string{sockA, sockB} {
		if err := ctl.Call(s, "vnics", nil, &vs); err != nil || len(vs) != 0 {
			t.Errorf("after every DEL, vnicd at %s has %+v (%v)", s, vs, err)
		}
	}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
