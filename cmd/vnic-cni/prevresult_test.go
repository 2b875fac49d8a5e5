package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// fakeVnicdAdd serves a control socket that answers vnic_add with st and
// vnic_del with nothing deleted; it returns the socket.
func fakeVnicdAdd(t *testing.T, st ctl.VNICStatus) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "vnicd-a.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(ctl.CmdVNICAdd, func(json.RawMessage) (any, error) { return st, nil })
	s.Handle(ctl.CmdVNICDel, func(json.RawMessage) (any, error) { return ctl.VNICDeleted{}, nil })
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })
	return sock
}

// captureStdout runs f and returns what it wrote to os.Stdout.
func captureStdout(t *testing.T, f func() error) ([]byte, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	out := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); out <- b }()
	ferr := f()
	os.Stdout = old
	w.Close()
	return <-out, ferr
}

// TestAddKeepsPrevResult: CNI SPEC.md, ADD: "If the plugin was
// supplied a prevResult as part of its input configuration, it MUST handle
// prevResult by either passing it through, or modifying it appropriately",
// and Section 5: "Plugins provided a prevResult key ... must output it as
// their result, with any possible modifications made by that plugin
// included". vnic-cni after another plugin in a chain kept only its own
// interface: the earlier plugin's interface and address were lost.
func TestAddKeepsPrevResult(t *testing.T) {
	sock := fakeVnicdAdd(t, ctl.VNICStatus{VPort: 0, IfName: "net1", MAC: "02:00:01:10:00:00", EthMTU: 1400})
	conf := `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001", "socket": "` + sock + `",
		"prevResult": {"cniVersion": "1.1.0",
			"interfaces": [{"name": "eth0", "mac": "0a:58:0a:00:00:05", "sandbox": "/var/run/netns/c1"}],
			"ips": [{"address": "10.0.0.5/24", "interface": 0}],
			"routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}]}}`
	args := &skel.CmdArgs{ContainerID: "c1", Netns: "/var/run/netns/c1", IfName: "net1", StdinData: []byte(conf)}
	out, err := captureStdout(t, func() error { return cmdAdd(args) })
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	var r current.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("result %q: %v", out, err)
	}
	if len(r.Interfaces) != 2 || r.Interfaces[0].Name != "eth0" || r.Interfaces[1].Name != "net1" ||
		r.Interfaces[1].Mac != "02:00:01:10:00:00" || len(r.IPs) != 1 || r.IPs[0].Address.String() != "10.0.0.5/24" ||
		len(r.Routes) != 1 {
		t.Errorf("result %s; want prevResult's eth0, its address and route, then net1", out)
	}
}

// TestCheckChainedPrevResult: CNI SPEC.md, CHECK: "The plugin must
// consult the prevResult to determine the expected interfaces and
// addresses" (its own: an IP's "interface" is the index of the interface
// it is on). With vnic-cni's net1 second in a chain's prevResult, CHECK
// looked for every address of the result on net1, eth0's too, and failed
// a healthy attachment.
func TestCheckChainedPrevResult(t *testing.T) {
	nstest.RequireRoot(t)
	c1 := nstest.NewNS(t, "rvchk")
	const mac = "02:00:01:10:00:00"
	hw, _ := net.ParseMAC(mac)
	l := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "net1", HardwareAddr: hw}, PeerName: "net1peer"} // goes with c1
	h := c1.Netlink()
	if err := h.LinkAdd(l); err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("10.1.0.5/24")
	if err := h.AddrAdd(l, addr); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "vnicd-a.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(ctl.CmdVNICs, func(json.RawMessage) (any, error) {
		return []ctl.VNICStatus{{IfName: "net1", MAC: mac, VESW: 1, OperState: "FORWARDING", Owner: "cni:red:c1:net1"}}, nil
	})
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })

	conf := `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001", "socket": "` + sock + `",
		"prevResult": {"cniVersion": "1.1.0",
			"interfaces": [{"name": "eth0", "mac": "0a:58:0a:00:00:05", "sandbox": "` + c1.Path() + `"},
				{"name": "net1", "mac": "` + mac + `", "sandbox": "` + c1.Path() + `"}],
			"ips": [{"address": "10.0.0.5/24", "interface": 0}, {"address": "10.1.0.5/24", "interface": 1}]}}`
	args := &skel.CmdArgs{ContainerID: "c1", Netns: c1.Path(), IfName: "net1", StdinData: []byte(conf)}
	if err := cmdCheck(args); err != nil {
		t.Errorf("CHECK of a healthy chained attachment: %v", err)
	}
	// Its own address gone: CHECK still says so.
	if err := h.AddrDel(l, addr); err != nil {
		t.Fatal(err)
	}
	if err := cmdCheck(args); err == nil || !strings.Contains(err.Error(), "lacks address 10.1.0.5/24") {
		t.Errorf("CHECK with net1's address gone: %v", err)
	}
}
