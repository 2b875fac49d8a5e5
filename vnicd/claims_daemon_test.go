package vnicd_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// The claim tests run a managed vnicd on in-memory devices, with no FM: the
// EM's VESWPortInfo Sets and DeleteVESWs are applied through the node's
// agent (EMSetPort, EMDeleteVESW). Namespaces are plain files (a claim
// names its namespace by path and checks it by inode), so no root is
// needed; cmd/vnic-cni's TestE2ECNIManaged does it with the kernel.

const fakeManaged = `node: {name: m, listen: "127.0.0.1:PORT", fabric_manager: "127.0.0.1:9"}
netdevs:
  2: {ifname: host2}
`

// fakeNode is a managed daemon on fake devices that can be stopped and
// started again on the same control socket (and so the same claims file).
type fakeNode struct {
	t    *testing.T
	sock string
	cfg  string

	mu       sync.Mutex
	d        *vnicd.Daemon
	devs     map[uint8]*taptest.Device // the latest device of each vport
	attaches []engine.DeviceSpec       // factory calls asking to attach
	attachOK bool
	removed  []string // netns/ifname the daemon asked to delete
	stop     func()
	// onPersist, when set, runs first in every SetPersist of a device; its
	// error fails the call.
	onPersist func(vport uint8, on bool) error
	log       *zap.Logger // the next start's logger; nil for none
}

// hookedDevice is a fake device whose SetPersist runs the node's onPersist.
type hookedDevice struct {
	*taptest.Device
	n     *fakeNode
	vport uint8
}

func (h hookedDevice) SetPersist(on bool, tag string) error {
	h.n.mu.Lock()
	f := h.n.onPersist
	h.n.mu.Unlock()
	if f != nil {
		if err := f(h.vport, on); err != nil {
			return err
		}
	}
	return h.Device.SetPersist(on, tag)
}

func (n *fakeNode) setOnPersist(f func(vport uint8, on bool) error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onPersist = f
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	return newFakeNodeConfig(t, fakeManaged)
}

// newFakeNodeConfig is newFakeNode with the config cfgText (PORT for the
// HFI's port, a free one at each start; the control socket is added).
func newFakeNodeConfig(t *testing.T, cfgText string) *fakeNode {
	t.Helper()
	n := &fakeNode{t: t, sock: filepath.Join(t.TempDir(), "vnicd.sock"), attachOK: true}
	n.cfg = cfgText + fmt.Sprintf("control: {socket: %q}\n", n.sock)
	n.start()
	t.Cleanup(func() { n.halt() })
	return n
}

// configFreePort parses cfgText with PORT replaced by a UDP port on
// 127.0.0.1 that was free a moment ago.
func configFreePort(t testing.TB, cfgText string) *config.Config {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(cfgText, "PORT", strconv.Itoa(port))))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (n *fakeNode) start() {
	t := n.t
	t.Helper()
	// A free port at every start: between a halt and the next start another
	// test binary may take the last one.
	cfg := configFreePort(t, n.cfg)
	n.mu.Lock()
	n.devs = map[uint8]*taptest.Device{}
	n.mu.Unlock()
	factory := func(s engine.DeviceSpec) (tap.Netdev, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if s.Attach != "" {
			n.attaches = append(n.attaches, s)
			if !n.attachOK {
				return nil, fmt.Errorf("no netdev %s there: %w", s.Netdev.IfName, os.ErrNotExist)
			}
		}
		a, _ := taptest.Pair(taptest.Options{Names: [2]string{s.Netdev.IfName, "peer"}})
		if s.Attach != "" || s.Netdev.NetNS != "" {
			_ = a.MoveTo(s.Netdev.NetNS, s.Netdev.IfName, nil)
		}
		if s.Attach != "" {
			_ = a.SetPersist(true, s.Attach)
		}
		n.devs[s.VPort] = a
		return hookedDevice{Device: a, n: n, vport: s.VPort}, nil
	}
	vnicd.SetStartRemoveTAP(func(netns, name string, match func(string) bool) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.removed = append(n.removed, netns+"/"+name)
		return nil
	})
	d, err := vnicd.NewDaemon(cfg, factory, n.log)
	vnicd.SetStartRemoveTAP(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	n.d = d
	n.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func (n *fakeNode) halt() {
	if n.stop != nil {
		n.stop()
		n.stop = nil
	}
}

// record returns copies of the attach requests and removals so far.
func (n *fakeNode) record() ([]engine.DeviceSpec, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]engine.DeviceSpec(nil), n.attaches...), append([]string(nil), n.removed...)
}

func (n *fakeNode) setAttachOK(ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.attachOK = ok
}

func (n *fakeNode) dev(vport uint8) *taptest.Device {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.devs[vport]
}

// emSet is the EM's VESWPortInfo Set of vport on vesw (pkey 0x8000|vesw,
// MAC 02:00:<vesw>:00:00:<vport>, mcast 0xF00000|vesw).
func (n *fakeNode) emSet(vport uint8, vesw uint16) {
	n.t.Helper()
	var pc engine.PortConfig
	pc.VESW = engine.VESWConfig{VESWID: encap.VESWID(vesw), PKey: encap.PKey(0x8000 | vesw), EthMTU: 1400, McastDLID: 0xF00000 | uint32(vesw)}
	pc.Port = engine.VPortConfig{BaseMAC: [6]byte{2, 0, byte(vesw), 0, 0, vport}, ConfigState: engine.StateForwarding}
	if err := n.d.EMSetPort(vport, pc); err != nil {
		n.t.Fatalf("EM set of vport %d on vesw %d: %v", vport, vesw, err)
	}
}

// ask is the answer of a command of n's (a ctl.Client method), failing the
// test on an error.
func ask[T any](n *fakeNode, cmd func(*ctl.Client, context.Context) (T, error)) T {
	n.t.Helper()
	v, err := cmd(ctl.NewClient(n.sock), n.t.Context())
	if err != nil {
		n.t.Fatal(err)
	}
	return v
}

func (n *fakeNode) claims() []ctl.Claim {
	n.t.Helper()
	return ask(n, (*ctl.Client).Claims)
}

// waitClaims waits (at most 5 s) until the claims answer ok.
func (n *fakeNode) waitClaims(what string, ok func([]ctl.Claim) bool) {
	n.t.Helper()
	var cs []ctl.Claim
	if !waitfor.Poll(5*time.Second, func() bool { cs = n.claims(); return ok(cs) }) {
		n.t.Fatalf("%s: claims are %+v", what, cs)
	}
}

// nsFile is a stand-in for a namespace: a file, known by its inode.
func nsFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClaimsManaged(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	n.emSet(1, 2)
	n.emSet(2, 3) // the host's (netdevs.2)
	c1 := nsFile(t, "c1")

	var st ctl.VNICStatus
	err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", EthMTU: 1400, McastDLID: "0xF00001",
		IfName: "eth0", NetNS: c1, Addresses: []string{"10.1.0.5/24"}, Owner: "cni:red:c1:eth0"}, &st)
	if err != nil {
		t.Fatal(err)
	}
	if st.VPort != 0 || st.IfName != "eth0" || st.NetNS != c1 || st.MAC != "02:00:01:00:00:00" || st.Owner != "cni:red:c1:eth0" || st.VESW != 1 ||
		len(st.Addresses) != 1 || st.Addresses[0] != "10.1.0.5/24" {
		t.Errorf("claim answered %+v", st)
	}
	if on, tag := n.dev(0).Persistent(); !on || tag != "opavnic:m:vport0" {
		t.Errorf("claimed netdev persistent %v, tag %q", on, tag)
	}
	if cs := n.claims(); len(cs) != 1 || cs[0].State != ctl.ClaimActive || cs[0].Home != "vnic0" || cs[0].IfName != "eth0" {
		t.Errorf("claims %+v", cs)
	}
	for _, tc := range []struct {
		args ctl.VNICAddArgs
		err  string
		code ctl.Code
	}{
		{ctl.VNICAddArgs{VESW: 1, NetNS: c1, IfName: "eth1"}, "no free port: vesw 1 has 1 port on node m: vport 0, claimed by cni:red:c1:eth0", ctl.CodeNoFreePort},
		{ctl.VNICAddArgs{VESW: 3, NetNS: c1}, "vport 2, kept for the host", ctl.CodeNoFreePort},
		{ctl.VNICAddArgs{VESW: 9, NetNS: c1}, "vesw 9 has no port on node m: this node has not been configured by the fabric manager yet", ctl.CodeNoFreePort},
		{ctl.VNICAddArgs{VESW: 2, PKey: "0x8001", NetNS: c1}, "pkey: 0x8001, but the EM gave vesw 2 pkey 0x8002", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2, EthMTU: 1500, NetNS: c1}, "eth_mtu: 1500, but the EM gave vesw 2 eth_mtu 1400", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2, NetNS: c1, Owner: "cni:red:c1:eth0"}, `owner: "cni:red:c1:eth0" already holds vport 0`, ""},
		{ctl.VNICAddArgs{VESW: 2, NetNS: c1, MAC: "02:00:00:00:00:09"}, "mac: the EM sets", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2}, "netns: required", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2, NetNS: filepath.Join(t.TempDir(), "gone")}, "netns:", ctl.CodeInvalidArgument},
		{ctl.VNICAddArgs{VESW: 2, VPort: 7, NetNS: c1}, "vport: node m has no vport 7", ctl.CodeNotFound},
	} {
		if err := ctl.Call(n.sock, ctl.CmdVNICAdd, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.err) || ctl.CodeOf(err) != tc.code {
			t.Errorf("vnic_add %+v: %v (code %q); want %q, code %q", tc.args, err, ctl.CodeOf(err), tc.err, tc.code)
		}
	}
	// The refusals moved nothing.
	if d := n.dev(1); d.NetNS() != "" || d.Name() != "vnic1" {
		t.Errorf("vport 1 after refusals: %s in %q", d.Name(), d.NetNS())
	}
	b, err := os.ReadFile(vnicd.ClaimsPath(n.sock))
	if err != nil || !strings.Contains(string(b), `"owner": "cni:red:c1:eth0"`) {
		t.Errorf("claims file: %s, %v", b, err)
	}

	// DEL by owner ends the claim: home under its old name, not persistent;
	// a second DEL deletes nothing and succeeds.
	var del ctl.VNICDeleted
	if err := ctl.Call(n.sock, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "cni:red:c1:eth0"}, &del); err != nil ||
		len(del.Deleted) != 1 || del.Deleted[0].Owner != "cni:red:c1:eth0" || del.Deleted[0].VPort != 0 {
		t.Fatalf("vnic_del: %+v, %v", del, err)
	}
	if d := n.dev(0); d.NetNS() != "" || d.Name() != "vnic0" {
		t.Errorf("released netdev is %s in %q", d.Name(), d.NetNS())
	}
	if on, _ := n.dev(0).Persistent(); on {
		t.Error("released netdev still persistent")
	}
	if err := ctl.Call(n.sock, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "cni:red:c1:eth0"}, &del); err != nil || len(del.Deleted) != 0 {
		t.Errorf("second vnic_del: %+v, %v", del, err)
	}
	one := 1
	if err := ctl.Call(n.sock, ctl.CmdVNICDel, ctl.VNICDelArgs{VPort: &one}, nil); ctl.CodeOf(err) != ctl.CodeNotFound || !strings.Contains(err.Error(), "vport 1 is not claimed") {
		t.Errorf("vnic_del of an unclaimed vport: %v", err)
	}
	if cs := n.claims(); len(cs) != 0 {
		t.Errorf("claims after DEL: %+v", cs)
	}

	// The EM moves a claimed port to another vesw: the claim ends.
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: c1, Owner: "o2"}, &st); err != nil || st.IfName != "vnic0" {
		t.Fatalf("claim keeping the name: %+v, %v", st, err)
	}
	n.emSet(0, 4)
	n.waitClaims("after the EM moved vport 0 to vesw 4", func(cs []ctl.Claim) bool { return len(cs) == 0 })
	if d := n.dev(0); d.NetNS() != "" {
		t.Errorf("netdev of a port moved to another vesw stays in %q", d.NetNS())
	}

	// The EM takes a claimed port off its vesw (DeleteVESW): it stays in
	// the container; back on the same vesw, the claim goes on.
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 2, NetNS: c1, IfName: "net1", Owner: "o3"}, &st); err != nil {
		t.Fatal(err)
	}
	if err := n.d.EMDeleteVESW(1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the reconciler had its chance
	n.emSet(1, 2)
	// The same window after the EM's Set.
	time.Sleep(100 * time.Millisecond)
	if cs := n.claims(); len(cs) != 1 || cs[0].Owner != "o3" || n.dev(1).NetNS() != c1 {
		t.Errorf("after DeleteVESW and back: claims %+v, netdev in %q", cs, n.dev(1).NetNS())
	}

	// GC keeps the listed owners and ends the others.
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 4, NetNS: c1, Owner: "cni:x:keep:eth0"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Call(n.sock, ctl.CmdVNICGC, ctl.VNICGCArgs{Prefix: "cni:x:", Keep: []string{"cni:x:keep:eth0"}}, &del); err != nil || len(del.Deleted) != 0 {
		t.Errorf("gc keeping the only one: %+v, %v", del, err)
	}
	if err := ctl.Call(n.sock, ctl.CmdVNICGC, ctl.VNICGCArgs{Prefix: "cni:x:"}, &del); err != nil ||
		len(del.Deleted) != 1 || del.Deleted[0].Owner != "cni:x:keep:eth0" {
		t.Errorf("gc: %+v, %v", del, err)
	}
	if cs := n.claims(); len(cs) != 1 || cs[0].Owner != "o3" {
		t.Errorf("claims after gc: %+v", cs)
	}
}

// TestClaimsRestart stops and starts a managed daemon with claims: a claim
// whose namespace is gone ends at start; the others wait until the EM makes
// their port again and are taken over where they are, unless the EM makes
// the port on another vesw.
func TestClaimsRestart(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	n.emSet(1, 2)
	n.emSet(3, 5)
	c1, c2, c3 := nsFile(t, "c1"), nsFile(t, "c2"), nsFile(t, "c3")
	for _, a := range []ctl.VNICAddArgs{
		{VESW: 1, NetNS: c1, IfName: "eth0", Owner: "keep"},
		{VESW: 2, NetNS: c2, IfName: "eth0", Owner: "ns-gone"},
		{VESW: 5, NetNS: c3, IfName: "eth0", Owner: "vesw-changes"},
	} {
		if err := ctl.Call(n.sock, ctl.CmdVNICAdd, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	n.halt()
	if err := os.Remove(c2); err != nil {
		t.Fatal(err)
	}
	n.start()
	if cs := n.claims(); len(cs) != 2 || cs[0].Owner != "keep" || cs[0].State != ctl.ClaimPending || cs[1].Owner != "vesw-changes" {
		t.Fatalf("claims after the restart: %+v", cs)
	}
	var vs []ctl.VNICStatus
	if err := ctl.Call(n.sock, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 0 {
		t.Fatalf("ports before the EM: %+v, %v", vs, err)
	}
	// A pending claim holds its vport: no second claim on it meanwhile.
	n.emSet(0, 1)
	n.emSet(1, 2)
	n.emSet(3, 6)
	attaches, removed := n.record()
	if len(attaches) != 1 || attaches[0].VPort != 0 || attaches[0].Attach != "opavnic:m:vport0" ||
		attaches[0].Netdev.NetNS != c1 || attaches[0].Netdev.IfName != "eth0" {
		t.Errorf("attach requests %+v", attaches)
	}
	if cs := n.claims(); len(cs) != 1 || cs[0].Owner != "keep" || cs[0].State != ctl.ClaimActive {
		t.Errorf("claims once the EM made the ports: %+v", cs)
	}
	if len(removed) != 1 || removed[0] != c3+"/eth0" {
		t.Errorf("netdevs removed: %v; want the one of the claim whose vesw changed", removed)
	}
	if err := ctl.Call(n.sock, ctl.CmdVNICs, nil, &vs); err != nil || len(vs) != 3 || vs[0].Owner != "keep" || vs[0].NetNS != c1 ||
		vs[0].IfName != "eth0" || vs[1].NetNS != "" || vs[2].VESW != 6 || vs[2].NetNS != "" {
		t.Errorf("ports after the EM: %+v, %v", vs, err)
	}

	// A claim whose netdev cannot be taken over ends; the port is made anew.
	n.halt()
	n.setAttachOK(false)
	n.start()
	n.emSet(0, 1)
	if cs := n.claims(); len(cs) != 0 {
		t.Errorf("claims after a failed take-over: %+v", cs)
	}
	if d := n.dev(0); d == nil || d.NetNS() != "" || d.Name() != "vnic0" {
		t.Errorf("port after a failed take-over: %+v", d)
	}
	// A pending claim ended by DEL before the EM made its port: its netdev
	// is deleted where it is.
	n.setAttachOK(true)
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: c1, Owner: "late"}, nil); err != nil {
		t.Fatal(err)
	}
	n.halt()
	_, before := n.record()
	n.start()
	var del ctl.VNICDeleted
	if err := ctl.Call(n.sock, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "late"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Fatalf("DEL of a pending claim: %+v, %v", del, err)
	}
	_, removed = n.record()
	if removed = removed[len(before):]; len(removed) != 1 || removed[0] != c1+"/vnic0" || len(n.claims()) != 0 {
		t.Errorf("DEL of a pending claim removed %v, claims %+v", removed, n.claims())
	}
}

// TestClaimNoPortMessages: a claim on a vesw with no port here says whether
// the FM has configured the node yet (a LID, the SM heard within 3 s, a
// port made) before it blames the fabric config.
func TestClaimNoPortMessages(t *testing.T) {
	n := newFakeNode(t)
	c1 := nsFile(t, "c1")
	add := func(what, want string) {
		t.Helper()
		err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 9, NetNS: c1}, nil)
		if err == nil || !strings.Contains(err.Error(), "no free port: vesw 9 has no port on node m: "+want) {
			t.Errorf("%s: %v; want %q", what, err, want)
		}
	}
	notYet := "this node has not been configured by the fabric manager yet (not joined, or the FM is unreachable); try again"
	add("before the FM", notYet)
	n.emSet(0, 1) // ports, but no LID and no SM heard
	add("with a port, no LID", notYet)
	n.d.HeardFromSM(0x10)
	add("joined, with a port on another vesw", "the EM made none (the fabric config has no member of vesw 9 on this node)")

	m := newFakeNode(t)
	m.d.HeardFromSM(0x11)
	if err := ctl.Call(m.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 9, NetNS: c1}, nil); err == nil ||
		!strings.Contains(err.Error(), "the EM has made no port on this node yet") {
		t.Errorf("joined, no port: %v", err)
	}
}

// TestClaimsUnreadableFileKept: a claims state file that cannot be read
// (damaged, or a newer version's) is set aside at start, not overwritten
// by the next claim's save: it is the only record of where the claimed
// netdevs of the last run are.
func TestClaimsUnreadableFileKept(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	n.emSet(1, 2)
	n.halt()
	bad := `{"version": 2, "node": "m", "claims": [{"vport": 0, "vesw": 1, "netns": "/x", "ifname": "eth0", "home": "vnic0", "ns_dev": 1, "ns_ino": 2, "new": 1}]}`
	if err := os.WriteFile(vnicd.ClaimsPath(n.sock), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	n.start()
	if cs := n.claims(); len(cs) != 0 {
		t.Fatalf("claims after the restart: %+v", cs)
	}
	n.emSet(0, 1)
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: nsFile(t, "c1"), IfName: "eth0", Owner: "new"}, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(vnicd.ClaimsPath(n.sock) + ".bad"); err != nil || string(b) != bad {
		t.Errorf("the unreadable claims file set aside: %q, %v", b, err)
	}
}

// TestClaimRenamedOrMovedRestart: a claimed port's netdev renamed or moved
// to another namespace by hand (the link watcher's EventPlace) is where the
// claim, and its state file, say it is, so that a restarted vnicd takes it
// over there, not where the claim put it.
func TestClaimRenamedOrMovedRestart(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	c1, c2 := nsFile(t, "c1"), nsFile(t, "c2")
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: c1, IfName: "eth0", Owner: "o"}, nil); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	d := n.d
	n.mu.Unlock()
	d.NetdevPlaced(0, "lan0", c2)
	if cs := n.claims(); len(cs) != 1 || cs[0].IfName != "lan0" || cs[0].NetNS != c2 {
		t.Fatalf("claims after the move: %+v", cs)
	}
	b, err := os.ReadFile(vnicd.ClaimsPath(n.sock))
	if err != nil || !strings.Contains(string(b), `"ifname": "lan0"`) || !strings.Contains(string(b), `"netns": "`+c2+`"`) {
		t.Fatalf("claims file after the move: %v\n%s", err, b)
	}
	n.halt()
	n.start()
	n.emSet(0, 1)
	attaches, _ := n.record()
	if len(attaches) != 1 || attaches[0].Netdev.NetNS != c2 || attaches[0].Netdev.IfName != "lan0" {
		t.Errorf("attach requests %+v, want lan0 in %s", attaches, c2)
	}
	if cs := n.claims(); len(cs) != 1 || cs[0].State != ctl.ClaimActive || cs[0].IfName != "lan0" {
		t.Errorf("claims after the restart: %+v", cs)
	}
}
