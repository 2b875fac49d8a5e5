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

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
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

// TestMain removes the binaries cniBins built once the tests are done.
func TestMain(m *testing.M) { e2etest.Main(m) }

// cniBins builds vnicd, vnic-cni, host-local and the others of names
// and returns their directory, the CNI bin dir.
func cniBins(t *testing.T, names ...string) string {
	t.Helper()
	return e2etest.BinDir(t, append([]string{"vnicd", "vnic-cni", "host-local"}, names...)...)
}

// startHost starts vnicd in ns with no VNICs, multicast groups red (vesw 1)
// and blue (vesw 2) on both hosts; it returns the control socket.
func startHost(t *testing.T, ns *nstest.NS, name string, lid, peer int, self, other string) string {
	t.Helper()
	return e2etest.Start(t, ns, e2etest.Host{Name: name, LID: lid, Listen: self + ":4793",
		Peers:  map[int]string{peer: other + ":4793"},
		Groups: map[int][]int{mcRed: {lidA, lidB}, mcBlue: {lidA, lidB}},
	}).Socket
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

func TestE2ECNI(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "go")
	bin := cniBins(t)
	a, b := nstest.NewNS(t, "cnia"), nstest.NewNS(t, "cnib")
	c1, c2, c3 := nstest.NewNS(t, "cnic1"), nstest.NewNS(t, "cnic2"), nstest.NewNS(t, "cnic3")
	nstest.Veth(t, a, b, netipPrefix(underlayA+"/24"), netipPrefix(underlayB+"/24"), 1500)
	sockA := startHost(t, a, "host-a", lidA, lidB, underlayA, underlayB)
	sockB := startHost(t, b, "host-b", lidB, lidA, underlayB, underlayA)

	data := t.TempDir()
	redA := netList(t, "1.0.0", "red", 1, "0x8001", mcRed, sockA, "10.1.0.10", "10.1.0.19", filepath.Join(data, "a"))
	redB := netList(t, "1.0.0", "red", 1, "0x8001", mcRed, sockB, "10.1.0.20", "10.1.0.29", filepath.Join(data, "b"))
	blueA := netList(t, "1.1.0", "blue", 2, "0x8002", mcBlue, sockA, "10.1.0.30", "10.1.0.39", filepath.Join(data, "a"))
	cni := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil)
	ctx := context.Background()
	add := func(list *libcni.NetworkConfigList, id string, ns *nstest.NS) *current.Result {
		t.Helper()
		res := cniAdd(t, cni, list, id, ns)
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
	if err := e2etest.Reaches(c1, ip2); err != nil {
		t.Errorf("c1 -> c2: %v", err)
	}
	if err := e2etest.Reaches(c2, ip1); err != nil {
		t.Errorf("c2 -> c1: %v", err)
	}
	if err := e2etest.Reaches(c3, ip1); err == nil {
		t.Errorf("c3 on vesw 2 reached c1 on vesw 1")
	}
	if err := e2etest.Reaches(c3, ip2); err == nil {
		t.Errorf("c3 on vesw 2 reached c2 on vesw 1")
	}

	for _, tc := range []struct {
		list *libcni.NetworkConfigList
		id   string
		ns   *nstest.NS
	}{{redA, "c1", c1}, {redB, "c2", c2}, {blueA, "c3", c3}} {
		if err := cni.CheckNetworkList(ctx, tc.list, cniAttach(tc.id, tc.ns)); err != nil {
			t.Errorf("CHECK %s: %v", tc.id, err)
		}
	}
	if err := cni.GetStatusNetworkList(ctx, blueA); err != nil {
		t.Errorf("STATUS: %v", err)
	}

	// A second container on the same vesw and host is refused (one port per
	// vesw and node), and the refusal leaves nothing behind.
	c4 := nstest.NewNS(t, "cnic4")
	if _, err := cni.AddNetworkList(ctx, redA, cniAttach("c4", c4)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("ADD c4 to red on host a: %v; want a refusal", err)
	}
	if _, err := c4.Netlink().LinkByName(containerIface); err == nil {
		t.Error("a refused ADD left an interface")
	}

	// DEL removes the interface; a second DEL succeeds.
	if err := cni.DelNetworkList(ctx, redA, cniAttach("c1", c1)); err != nil {
		t.Fatalf("DEL c1: %v", err)
	}
	if _, err := c1.Netlink().LinkByName(containerIface); err == nil {
		t.Error("DEL c1 left the interface")
	}
	if err := cni.DelNetworkList(ctx, redA, cniAttach("c1", c1)); err != nil {
		t.Errorf("second DEL c1: %v", err)
	}
	if err := e2etest.Reaches(c2, ip1); err == nil {
		t.Error("c1's address still answers after DEL")
	}
	// The freed vesw port takes a new container.
	if r := add(redA, "c1b", c1); r.Interfaces[0].Mac != r1.Interfaces[0].Mac {
		t.Errorf("c1b has MAC %s; want the freed port's %s", r.Interfaces[0].Mac, r1.Interfaces[0].Mac)
	}
	if err := e2etest.Reaches(c1, ip2); err != nil {
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
	if err := e2etest.Reaches(c3, r3b.IPs[0].Address.IP.String()); err != nil {
		t.Errorf("c3b pings itself: %v", err)
	}

	for _, tc := range []struct {
		list *libcni.NetworkConfigList
		id   string
		ns   *nstest.NS
	}{{redA, "c1b", c1}, {redB, "c2", c2}, {blueA, "c3b", c3}} {
		if err := cni.DelNetworkList(ctx, tc.list, cniAttach(tc.id, tc.ns)); err != nil {
			t.Errorf("DEL %s: %v", tc.id, err)
		}
	}
	var vs []ctl.VNICStatus
	for _, s := range []string{sockA, sockB} {
		if err := ctl.Call(s, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 0 {
			t.Errorf("after every DEL, vnicd at %s has %+v (%v)", s, vs, err)
		}
	}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// TestDelNetnsGone: CNI SPEC.md, DEL: "Plugins should generally
// complete a DEL action without error even if some resources are missing"
// and "MUST accept multiple DEL calls ... and return success if the
// interface in question ... [is] missing". The container's namespace is
// deleted (with the VNIC in it) before the runtime's DEL, as after a crash:
// DEL succeeds, twice, vnicd gives the vesw's port back, and a new
// container gets one on the same vesw. Static and managed vnicd.
func TestDelNetnsGone(t *testing.T) {
	e2etest.Require(t, "ip", "go")
	bin := cniBins(t, "opafm")
	cni := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil)
	ctx := context.Background()
	gone := func(t *testing.T, list *libcni.NetworkConfigList, sock string, want int) {
		t.Helper()
		c1 := nstest.NewNS(t, "rvgone1")
		if _, err := cni.AddNetworkList(ctx, list, cniAttach("gone1", c1)); err != nil {
			t.Fatalf("ADD: %v", err)
		}
		if out, err := exec.Command("ip", "netns", "delete", c1.Name()).CombinedOutput(); err != nil {
			t.Fatalf("deleting the container's namespace: %v %s", err, out)
		}
		for i := range 2 {
			if err := cni.DelNetworkList(ctx, list, cniAttach("gone1", c1)); err != nil {
				t.Errorf("DEL %d with the namespace gone: %v", i+1, err)
			}
		}
		// The port is free again: a new container gets it (a managed vnicd
		// may wait for the EM to make it again).
		c2 := nstest.NewNS(t, "rvgone2")
		if err := waitfor.Check(15*time.Second, func() error {
			_, err := cni.AddNetworkList(ctx, list, cniAttach("gone2", c2))
			return err
		}); err != nil {
			t.Fatalf("ADD of a new container after the DEL: %v", err)
		}
		if err := cni.DelNetworkList(ctx, list, cniAttach("gone2", c2)); err != nil {
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
		sock := startHost(t, a, "host-a", lidA, lidB, underlayA, underlayB)
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
		e2etest.StartFM(t, fmNS, fabric)
		h := newManagedHost(t, a, dir, "host-a", "10.204.0.1:4793")
		h.WaitVNICs(t, 1, "FORWARDING", 15*time.Second)
		gone(t, managedNet(t, "red", 1, h.Socket, "10.1.0.10", "10.1.0.19", t.TempDir()), h.Socket, 1)
	})
}

// cniAttach is the runtime's view of attachment id: containerIface in ns.
func cniAttach(id string, ns *nstest.NS) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: ns.Path(), IfName: containerIface}
}

// cniAdd runs ADD of list for attachment id as a runtime does, and checks
// what every ADD must give: one interface, containerIface in ns, with one
// address on it.
func cniAdd(t *testing.T, cni *libcni.CNIConfig, list *libcni.NetworkConfigList, id string, ns *nstest.NS) *current.Result {
	t.Helper()
	r, err := cni.AddNetworkList(context.Background(), list, cniAttach(id, ns))
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
	return res
}
