package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2ECNIManaged runs libcni with vnic-cni and host-local against two
// managed vnicds and an opafm, in namespaces joined by a bridge: pods claim
// the ports the EM made, ping across a vesw and not across two; a pool runs
// out with a clear error; DEL, GC, vnicd restarts (killed and stopped), a
// DEL while vnicd is down, and EM reconfigurations each leave things as
// README "Containers" says.

// managedVESWs are the fabric's vesws, with host-b's red member, host-a's
// blue one and host-a's yellow one left to fill in.
const managedVESWs = `  - {id: 1, name: red, pkey: 0x8001, eth_mtu: 1400, mcast_dlid: 0xF00001,
     members: [{node: host-a, vport: 0}%s]}
  - {id: 2, name: blue, pkey: 0x8002, eth_mtu: 1400, mcast_dlid: 0xF00002,
     members: [%s{node: host-b, vport: 1}]}
  - {id: 3, name: green, pkey: 0x8003, eth_mtu: 1400, mcast_dlid: 0xF00003,
     members: [{node: host-a, vport: 2}]}
  - {id: 4, name: yellow, pkey: 0x8004, eth_mtu: 1400, mcast_dlid: 0xF00004,
     members: [%s]}
`

// fabricText is the fabric with host-b's red member or not, and host-a's
// vport 1 on blue or on yellow.
func fabricText(sock string, bOnRed, aOnBlue bool) string {
	red, blue, yellow := "", "", ""
	if bOnRed {
		red = ", {node: host-b, vport: 0}"
	}
	if aOnBlue {
		blue = "{node: host-a, vport: 1}, "
	} else {
		yellow = "{node: host-a, vport: 1}"
	}
	return e2etest.FabricNodes("10.204.0.3:4793", sock, 0) + fmt.Sprintf(managedVESWs, red, blue, yellow)
}

// newManagedHost starts a vnicd in ns that knows only the FM, with its
// control socket and config in dir; host-a keeps vport 2 for itself
// (netdevs), so no container may claim it.
func newManagedHost(t *testing.T, ns *nstest.NS, dir, name, listen string, netdevs ...e2etest.Netdev) *e2etest.Daemon {
	t.Helper()
	return e2etest.Launch(t, ns, e2etest.Host{Name: name, Listen: listen, FabricManager: "10.204.0.3:4793",
		Socket: filepath.Join(dir, name+".sock"), Netdevs: netdevs})
}

// waitVESW waits (at most within) until vport is on vesw (0: none).
func waitVESW(t *testing.T, sock string, vport uint8, vesw uint16, within time.Duration) {
	t.Helper()
	var vs []ctl.VNICStatus
	if waitfor.Poll(within, func() bool {
		vs = nil
		_ = ctl.Call(sock, ctl.CmdVNICs, nil, &vs)
		return slices.ContainsFunc(vs, func(v ctl.VNICStatus) bool { return v.VPort == vport && v.VESW == vesw })
	}) {
		return
	}
	t.Fatalf("%s: vport %d not on vesw %d within %v: %+v", sock, vport, vesw, within, vs)
}

// managedNet is a conflist of one vnic-cni network on a managed node:
// only the vesw (the EM has the rest) and host-local's range.
func managedNet(t *testing.T, name string, vesw int, sock, rangeStart, rangeEnd, dataDir string) *libcni.NetworkConfigList {
	t.Helper()
	text := fmt.Sprintf(`{"cniVersion": "1.1.0", "name": %q, "plugins": [{"type": "vnic-cni", "vesw": %d, "socket": %q,
		"ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": "10.1.0.0/24", "rangeStart": %q, "rangeEnd": %q}]]}}]}`,
		name, vesw, sock, dataDir, rangeStart, rangeEnd)
	l, err := libcni.ConfListFromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var rttRE = regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)`)

// pingRTT pings 5 times, 0.2 s apart, and returns the min/avg/max RTT line.
func pingRTT(t *testing.T, ns *nstest.NS, addr string) string {
	t.Helper()
	out, err := ns.Exec(context.Background(), "ping", "-c", "5", "-i", "0.2", "-W", "1", addr)
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", addr, ns.Name(), err, out)
	}
	m := rttRE.FindStringSubmatch(string(out))
	if m == nil {
		return "?"
	}
	return fmt.Sprintf("min/avg/max %s/%s/%s ms", m[1], m[2], m[3])
}

// podLink returns the pod's interface, or nil when it has none.
func podLink(t *testing.T, ns *nstest.NS) net.HardwareAddr {
	t.Helper()
	l, err := ns.Netlink().LinkByName(containerIface)
	if err != nil {
		return nil
	}
	return l.Attrs().HardwareAddr
}

func TestE2ECNIManaged(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "go")
	bin := cniBins(t, "opafm")
	fmNS, a, b := nstest.NewNS(t, "cmfm"), nstest.NewNS(t, "cma"), nstest.NewNS(t, "cmb")
	pa, pb, pc, pd := nstest.NewNS(t, "cmpa"), nstest.NewNS(t, "cmpb"), nstest.NewNS(t, "cmpc"), nstest.NewNS(t, "cmpd")
	nstest.Bridge(t, 1500,
		nstest.Member{NS: a, Addr: netipPrefix("10.204.0.1/24")},
		nstest.Member{NS: b, Addr: netipPrefix("10.204.0.2/24")},
		nstest.Member{NS: fmNS, Addr: netipPrefix("10.204.0.3/24")})
	dir := t.TempDir()
	fmSock, fabric := filepath.Join(dir, "fm.Socket"), filepath.Join(dir, "fabric.yaml")
	setFabric := func(bOnRed, aOnBlue bool) {
		t.Helper()
		if err := os.WriteFile(fabric, []byte(fabricText(fmSock, bOnRed, aOnBlue)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setFabric(true, true)
	fmCmd := e2etest.StartFM(t, fmNS, fabric)
	reloadFM := func() {
		t.Helper()
		if err := fmCmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	ha := newManagedHost(t, a, dir, "host-a", "10.204.0.1:4793", e2etest.Netdev{VPort: 2, IfName: "green0"})
	hb := newManagedHost(t, b, dir, "host-b", "10.204.0.2:4793")
	ha.WaitVNICs(t, 3, "FORWARDING", 15*time.Second)
	hb.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)

	data := t.TempDir()
	redA := managedNet(t, "red", 1, ha.Socket, "10.1.0.10", "10.1.0.19", filepath.Join(data, "a"))
	redB := managedNet(t, "red", 1, hb.Socket, "10.1.0.20", "10.1.0.29", filepath.Join(data, "b"))
	// With the EM's pkey, MTU and multicast DLID spelled out, as a static
	// network has them: they match, so the claim goes through.
	blueA := netList(t, "1.1.0", "blue", 2, "0x8002", 0xF00002, ha.Socket, "10.1.0.30", "10.1.0.39", filepath.Join(data, "a"))
	greenA := managedNet(t, "green", 3, ha.Socket, "10.1.0.40", "10.1.0.49", filepath.Join(data, "a"))
	cni := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil)
	ctx := context.Background()
	add := func(list *libcni.NetworkConfigList, id string, ns *nstest.NS, mac [6]byte) string {
		t.Helper()
		res := cniAdd(t, cni, list, id, ns)
		want := net.HardwareAddr(mac[:]).String()
		if res.Interfaces[0].Mac != want {
			t.Fatalf("ADD %s: MAC %s; want the EM's %s", id, res.Interfaces[0].Mac, want)
		}
		if got := podLink(t, ns); got.String() != want {
			t.Errorf("ADD %s: the pod's %s has MAC %v, want %s", id, containerIface, got, want)
		}
		return res.IPs[0].Address.IP.String()
	}
	// The MACs the EM gives (derived from the LIDs: host-a 0x10, host-b
	// the pool's first, 0xC000).
	macRedA, macRedB := encap.MACForLID(0x10, 1), encap.MACForLID(0xC000, 1)
	macBlueA := encap.MACForLID(0x10, 2)

	ipA := add(redA, "pa", pa, macRedA)
	ipB := add(redB, "pb", pb, macRedB)
	ipC := add(blueA, "pc", pc, macBlueA)
	if l, err := a.Netlink().LinkByName("vnic0"); err == nil {
		t.Errorf("host-a's vnic0 is still in vnicd's namespace after the claim: %+v", l.Attrs())
	}
	t.Logf("pods: pa %s (red, host-a), pb %s (red, host-b), pc %s (blue, host-a)", ipA, ipB, ipC)
	t.Logf("ping pa -> pb across red: %s", pingRTT(t, pa, ipB))
	t.Logf("ping pb -> pa across red: %s", pingRTT(t, pb, ipA))
	for _, dst := range []string{ipA, ipB} {
		e2etest.Silent(t, pc, dst, 2*time.Second, "blue pod to a red one")
	}
	for _, c := range []struct {
		list *libcni.NetworkConfigList
		id   string
		ns   *nstest.NS
	}{{redA, "pa", pa}, {redB, "pb", pb}, {blueA, "pc", pc}} {
		if err := cni.CheckNetworkList(ctx, c.list, cniAttach(c.id, c.ns)); err != nil {
			t.Errorf("CHECK %s: %v", c.id, err)
		}
	}

	// Host-a's only red port is claimed: a second pod is refused, clearly,
	// and left with nothing; green's port is the host's.
	if _, err := cni.AddNetworkList(ctx, redA, cniAttach("pd", pd)); err == nil ||
		!strings.Contains(err.Error(), "no free port: vesw 1 has 1 port on node host-a: vport 0, claimed by cni:red:pa:eth0") {
		t.Errorf("ADD pd to red on host-a: %v; want the pool's refusal", err)
	} else {
		t.Logf("pool exhausted: %v", err)
	}
	if _, err := cni.AddNetworkList(ctx, greenA, cniAttach("pd", pd)); err == nil || !strings.Contains(err.Error(), "vport 2, kept for the host") {
		t.Errorf("ADD pd to green on host-a: %v; want a refusal (the host's port)", err)
	}
	if podLink(t, pd) != nil {
		t.Error("a refused ADD left an interface in pd")
	}

	// DEL gives the port back to vnicd, under its name; a second DEL
	// succeeds; a new pod takes the port.
	if err := cni.DelNetworkList(ctx, redA, cniAttach("pa", pa)); err != nil {
		t.Fatalf("DEL pa: %v", err)
	}
	if podLink(t, pa) != nil {
		t.Error("DEL pa left the interface")
	}
	if _, err := a.Netlink().LinkByName("vnic0"); err != nil {
		t.Errorf("vnic0 not back in host-a's namespace: %v", err)
	}
	if err := cni.DelNetworkList(ctx, redA, cniAttach("pa", pa)); err != nil {
		t.Errorf("second DEL pa: %v", err)
	}
	e2etest.Silent(t, pb, ipA, 2*time.Second, "after DEL pa")
	ipA = add(redA, "pa2", pa, macRedA)
	t.Logf("ping pa2 -> pb after DEL and ADD: %s", pingRTT(t, pa, ipB))

	// vnicd killed on host-b: pb keeps its interface (carrier off) and
	// address; the restarted vnicd takes it over when the EM makes the
	// port again, with no CNI call.
	_ = hb.Stop(t, syscall.SIGKILL)
	if podLink(t, pb) == nil {
		t.Fatal("pb lost its interface when host-b's vnicd was killed")
	}
	hb.Restart(t)
	took := pa.PingWithin(t, ipB, 15*time.Second)
	t.Logf("host-b's vnicd killed and restarted: pa -> pb answers %v after the start", took.Round(time.Millisecond))
	if cs := hb.Claims(t); len(cs) != 1 || cs[0].State != ctl.ClaimActive || cs[0].Owner != "cni:red:pb:eth0" {
		t.Errorf("host-b's claims after the restart: %+v", cs)
	}
	if err := cni.CheckNetworkList(ctx, redB, cniAttach("pb", pb)); err != nil {
		t.Errorf("CHECK pb after the restart: %v", err)
	}

	// vnicd stopped cleanly on host-a: the same.
	_ = ha.Stop(t, syscall.SIGTERM)
	if podLink(t, pa) == nil || podLink(t, pc) == nil {
		t.Fatal("pods lost their interfaces when host-a's vnicd stopped")
	}
	ha.Restart(t)
	took = pb.PingWithin(t, ipA, 15*time.Second)
	t.Logf("host-a's vnicd stopped and restarted: pb -> pa answers %v after the start", took.Round(time.Millisecond))
	ha.WaitVNICs(t, 3, "FORWARDING", 10*time.Second)
	if err := cni.CheckNetworkList(ctx, blueA, cniAttach("pc", pc)); err != nil {
		t.Errorf("CHECK pc after the restart: %v", err)
	}

	// The EM takes host-b's red member away: pb keeps its interface, down;
	// back in the fabric, pb is reachable again.
	setFabric(false, true)
	reloadFM()
	waitVESW(t, hb.Socket, 0, 0, 10*time.Second)
	e2etest.Silent(t, pa, ipB, 3*time.Second, "host-b's red member removed")
	if podLink(t, pb) == nil {
		t.Error("pb lost its interface when the EM removed its member")
	}
	if err := cni.CheckNetworkList(ctx, redB, cniAttach("pb", pb)); err == nil || !strings.Contains(err.Error(), "on no vesw (the EM took it off vesw 1)") {
		t.Errorf("CHECK pb while its port is off its vesw: %v", err)
	} else {
		t.Logf("CHECK pb while off its vesw: %v", err)
	}
	setFabric(true, true)
	reloadFM()
	took = pa.PingWithin(t, ipB, 10*time.Second)
	t.Logf("host-b's red member back: pa -> pb answers %v after the reload", took.Round(time.Millisecond))

	// The EM moves host-a's vport 1 from blue to yellow: the claim ends and
	// the port leaves pc, which never sits on a vesw it did not ask for.
	setFabric(true, false)
	reloadFM()
	if !waitfor.Poll(10*time.Second, func() bool { return podLink(t, pc) == nil }) {
		t.Fatal("pc still has its interface 10 s after the EM moved its port to yellow")
	}
	if err := cni.DelNetworkList(ctx, blueA, cniAttach("pc", pc)); err != nil {
		t.Errorf("DEL pc after its claim ended: %v", err)
	}

	// DEL while host-a's vnicd is down: the plugin removes the interface;
	// the restarted vnicd ends the claim and has its port back.
	_ = ha.Stop(t, syscall.SIGKILL)
	if err := cni.DelNetworkList(ctx, redA, cniAttach("pa2", pa)); err != nil {
		t.Errorf("DEL pa2 with vnicd down: %v", err)
	}
	if podLink(t, pa) != nil {
		t.Error("DEL with vnicd down left pa's interface")
	}
	ha.Restart(t)
	ha.WaitVNICs(t, 3, "FORWARDING", 15*time.Second)
	if cs := ha.Claims(t); len(cs) != 0 {
		t.Errorf("host-a's claims after a DEL while it was down: %+v", cs)
	}
	if _, err := a.Netlink().LinkByName("vnic0"); err != nil {
		t.Errorf("vnic0 not back in host-a's namespace: %v", err)
	}

	// GC of red on host-b with no valid attachments ends pb's claim.
	if err := cni.GCNetworkList(ctx, redB, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{}}); err != nil {
		t.Fatalf("GC red on host-b: %v", err)
	}
	if podLink(t, pb) != nil {
		t.Error("GC left pb's interface")
	}
	for _, h := range []*e2etest.Daemon{ha, hb} {
		if cs := h.Claims(t); len(cs) != 0 {
			t.Errorf("%s: claims at the end: %+v", h.Host.Name, cs)
		}
		for _, v := range h.WaitVNICs(t, map[string]int{"host-a": 3, "host-b": 2}[h.Host.Name], "FORWARDING", 5*time.Second) {
			if v.NetNS != "" || v.Owner != "" {
				t.Errorf("%s: port at the end: %+v", h.Host.Name, v)
			}
		}
	}
}
