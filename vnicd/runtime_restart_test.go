package vnicd_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// The runtime restart tests run a static vnicd on in-memory devices, with
// namespaces as plain files (known by their inode), as the claim tests do;
// cmd/vnicd's TestE2ERuntimeRestart does it with the kernel.

const fakeStaticTwoGroups = `node: {name: s, lid: 0x10, listen: "127.0.0.1:PORT"}
peers: [{lid: 0x20, address: "127.0.0.1:9"}]
multicast:
  - {lid: 0xF00001, members: [0x10, 0x20]}
  - {lid: 0xF00002, members: [0x10, 0x20]}
vnics:
  - {vport: 0, vesw: {id: 5, pkey: 0x8005}, port: {ifname: static0}}
`

const groupTwo = "  - {lid: 0xF00002, members: [0x10, 0x20]}\n"

func (n *fakeNode) vnics() []ctl.VNICStatus {
	n.t.Helper()
	return ask(n, (*ctl.Client).VNICs)
}

func owners(vs []ctl.VNICStatus) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Owner)
	}
	return out
}

// TestRuntimeRestart stops and starts a static daemon with runtime VNICs:
// their TAPs are persistent and tagged, and the state file keeps them; at
// start, one whose namespace is gone is dropped, one that no longer passes
// the checks (its multicast group left the config) is dropped and its TAP
// removed, and the others are added again on their vports, their TAPs
// taken over where they are. vnic_del ends one for good.
func TestRuntimeRestart(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	c1, c2, c3 := nsFile(t, "c1"), nsFile(t, "c2"), nsFile(t, "c3")
	for _, a := range []ctl.VNICAddArgs{
		{VESW: 1, PKey: "0x8001", McastDLID: "0xF00001", NetNS: c1, IfName: "eth0", Addresses: []string{"10.1.0.5/24"}, Owner: "keep"},
		{VESW: 2, PKey: "0x8002", NetNS: c2, IfName: "eth0", Owner: "ns-gone"},
		{VESW: 3, PKey: "0x8003", McastDLID: "0xF00002", NetNS: c3, IfName: "eth0", Owner: "invalid"},
		{VESW: 4, PKey: "0x8004", IfName: "rt4", Owner: "own-ns"},
	} {
		if err := ctl.Call(n.sock, ctl.CmdVNICAdd, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	for vp := uint8(1); vp <= 4; vp++ {
		if on, tag := n.dev(vp).Persistent(); !on || tag != "opavnic:s:vport"+string('0'+rune(vp)) {
			t.Errorf("vport %d: persistent %v, tag %q", vp, on, tag)
		}
	}
	if on, _ := n.dev(0).Persistent(); on {
		t.Error("the config's VNIC is persistent")
	}
	b, err := os.ReadFile(vnicd.RuntimePathOf(n.sock))
	if err != nil || !strings.Contains(string(b), `"owner": "keep"`) || !strings.Contains(string(b), `"version": 1`) {
		t.Fatalf("state file: %v\n%s", err, b)
	}

	n.halt()
	if err := os.Remove(c2); err != nil {
		t.Fatal(err)
	}
	n.cfg = strings.Replace(n.cfg, groupTwo, "", 1)
	n.start()
	vs := n.vnics()
	if got := owners(vs); !slices.Equal(got, []string{"", "keep", "own-ns"}) {
		t.Fatalf("VNICs after the restart: %+v", vs)
	}
	if v := vs[1]; v.VPort != 1 || v.IfName != "eth0" || v.NetNS != c1 || v.VESW != 1 || len(v.Addresses) != 1 {
		t.Errorf("restored VNIC %+v", v)
	}
	if v := vs[2]; v.VPort != 4 || v.IfName != "rt4" || v.NetNS != "" {
		t.Errorf("restored VNIC in vnicd's namespace %+v", v)
	}
	attaches, removed := n.record()
	var att []string
	for _, a := range attaches {
		att = append(att, a.Netdev.NetNS+"/"+a.Netdev.IfName+" "+a.Attach)
	}
	if want := []string{c1 + "/eth0 opavnic:s:vport1", "/rt4 opavnic:s:vport4"}; !slices.Equal(att, want) {
		t.Errorf("attach requests %q, want %q", att, want)
	}
	if want := []string{c3 + "/eth0"}; !slices.Equal(removed, want) {
		t.Errorf("netdevs removed %q, want %q (the invalid one's; the gone namespace's went with it)", removed, want)
	}
	b, _ = os.ReadFile(vnicd.RuntimePathOf(n.sock))
	if strings.Contains(string(b), "ns-gone") || strings.Contains(string(b), "invalid") || !strings.Contains(string(b), "own-ns") {
		t.Errorf("state file after the restart:\n%s", b)
	}
	// The restored VNICs count as runtime ones: a second add is refused,
	// and vnic_del ends one for good.
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 7, PKey: "0x8007", Owner: "keep"}, nil); err == nil ||
		!strings.Contains(err.Error(), "already owns vport 1") {
		t.Errorf("second add of an owner: %v", err)
	}
	dev1 := n.dev(1)
	var del ctl.VNICDeleted
	if err := ctl.Call(n.sock, ctl.CmdVNICDel, ctl.VNICDelArgs{Owner: "keep"}, &del); err != nil || len(del.Deleted) != 1 {
		t.Fatalf("vnic_del: %+v, %v", del, err)
	}
	if on, _ := dev1.Persistent(); on {
		t.Error("a deleted VNIC's TAP is still persistent (the kernel would keep it)")
	}
	n.halt()
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{"", "own-ns"}) {
		t.Errorf("VNICs after vnic_del and a restart: %q", got)
	}

	// A TAP that cannot be taken over (deleted while vnicd was down): the
	// VNIC is dropped, not made again.
	n.halt()
	n.setAttachOK(false)
	_, before := n.record()
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{""}) {
		t.Errorf("VNICs after a failed take-over: %q", got)
	}
	if _, removed = n.record(); !slices.Equal(removed[len(before):], []string{"/rt4"}) {
		t.Errorf("removed after a failed take-over: %q", removed[len(before):])
	}
	n.setAttachOK(true)
	n.halt()
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{""}) {
		t.Errorf("VNICs at the next start: %q", got)
	}
}

// TestRuntimeCorruptStateFile: vnicd starts with a state file it cannot
// read as if there were none, and the next vnic_add writes a good one.
func TestRuntimeCorruptStateFile(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	n.halt()
	for _, bad := range []string{`{"version": 1, "vnics": [{"vport": 1, "colour": "red"}]}`, `{"version": 7}`, `{"vers`} {
		if err := os.WriteFile(vnicd.RuntimePathOf(n.sock), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		n.start()
		if got := owners(n.vnics()); !slices.Equal(got, []string{""}) {
			t.Errorf("%s: VNICs %q", bad, got)
		}
		n.halt()
	}
	n.start()
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", Owner: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	n.halt()
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{"", "x"}) {
		t.Errorf("VNICs after a good save and a restart: %q", got)
	}
	// The last file that could not be read was set aside, not overwritten
	// by the good save.
	if b, err := os.ReadFile(vnicd.RuntimePathOf(n.sock) + ".bad"); err != nil || string(b) != `{"vers` {
		t.Errorf("the unreadable state file set aside: %q, %v", b, err)
	}
}

// TestRuntimeRestartConfigClash: a runtime VNIC whose interface a VNIC added
// to the config now names is dropped, and its TAP removed, before the
// config's VNIC is made (the kernel would refuse the name).
func TestRuntimeRestartConfigClash(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", IfName: "rt1", Owner: "clash"}, nil); err != nil {
		t.Fatal(err)
	}
	n.halt()
	n.cfg = strings.Replace(n.cfg, "control:", "  - {vport: 7, vesw: {id: 9, pkey: 0x8009}, port: {ifname: rt1}}\ncontrol:", 1)
	n.start()
	vs := n.vnics()
	if len(vs) != 2 || vs[0].Owner != "" || vs[1].VPort != 7 || vs[1].Owner != "" {
		t.Errorf("VNICs after the restart: %+v", vs)
	}
	if _, removed := n.record(); !slices.Equal(removed, []string{"/rt1"}) {
		t.Errorf("removed %q, want the runtime VNIC's TAP", removed)
	}
	if attaches, _ := n.record(); len(attaches) != 0 {
		t.Errorf("attach requests %+v", attaches)
	}
}

// TestSecondDaemonLeavesStateFile: a vnicd started on the control socket
// of a running one fails (the socket is in use) without touching the
// running one's runtime file, even one it cannot read, which a daemon that
// owns the socket sets aside as .bad.
func TestSecondDaemonLeavesStateFile(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	path := vnicd.RuntimePathOf(n.sock)
	if err := os.WriteFile(path, []byte(`{"vers`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := vnicd.NewDaemon(configFreePort(t, n.cfg), func(s engine.DeviceSpec) (tap.Netdev, error) {
		a, _ := taptest.Pair(taptest.Options{Names: [2]string{s.Netdev.IfName, "peer"}})
		return a, nil
	}, nil); err == nil {
		t.Fatal("a second vnicd on the same control socket started")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != `{"vers` {
		t.Errorf("the running daemon's runtime file after the second start: %q, %v", b, err)
	}
	if _, err := os.Stat(path + ".bad"); err == nil {
		t.Error("the second vnicd set the running daemon's runtime file aside")
	}
}
