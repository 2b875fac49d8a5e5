package topology_test

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/opaswitch/topology"
)

const sample = `
switches:
  - {name: leaf1, address: 10.210.0.1, ports: 8}
  - {name: spine1, address: 10.210.0.2, guid: 0x1234}
hosts:
  - {name: host-a, endpoint: "10.210.1.1:4793"}
  - {name: fm, endpoint: "10.210.1.9:4794"}
cables:
  - [leaf1/1, host-a]
  - [leaf1/2, fm]
  - [leaf1/8, spine1/1]
`

func TestParse(t *testing.T) {
	top, err := topology.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	leaf, spine := top.Switch("leaf1"), top.Switch("spine1")
	if leaf == nil || leaf.NumPorts != 8 || leaf.GUID == 0 || spine.NumPorts != topology.DefaultPorts || spine.GUID != 0x1234 {
		t.Fatalf("switches %+v", top.Switches)
	}
	if up, ok := top.Uplink("host-a"); !ok || up != netip.MustParseAddrPort("10.210.0.1:5001") {
		t.Errorf("host-a's uplink %v, %v; want leaf1 port 1's endpoint", up, ok)
	}
	if p, ok := top.Peer(topology.End{Switch: "spine1", Port: 1}); !ok || p != (topology.End{Switch: "leaf1", Port: 8}) {
		t.Errorf("spine1/1's peer %v, %v", p, ok)
	}
	if _, ok := top.Peer(topology.End{Switch: "spine1", Port: 2}); ok {
		t.Error("an uncabled port has a peer")
	}
	again, err := topology.Parse(top.Marshal())
	if err != nil {
		t.Fatalf("the marshalled file: %v\n%s", err, top.Marshal())
	}
	if !reflect.DeepEqual(again, top) {
		t.Errorf("the marshalled file reads back as\n%+v\nnot\n%+v", again, top)
	}
}

func TestParseErrors(t *testing.T) {
	base := "switches: [{name: s1, address: 10.0.0.1, ports: 4}]\nhosts: [{name: h1, endpoint: \"10.0.1.1:4793\"}, {name: h2, endpoint: \"10.0.1.2:4793\"}]\n"
	for _, tc := range []struct{ text, field, want string }{
		{"switches: [{name: s1, address: 10.0.0.1, color: red}]\n", "switches[0].color", "unknown"},
		{"switches: [{address: 10.0.0.1}]\n", "switches[0].name", "required"},
		{"switches: [{name: s1}]\n", "switches[0].address", "required"},
		{"switches: [{name: s1, address: 10.0.0.1, ports: 255}]\n", "switches[0].ports", ""},
		{"switches: [{name: s1, address: 10.0.0.1}, {name: s1, address: 10.0.0.2}]\n", "switches[1].name", "also"},
		{"switches: [{name: s1, address: 10.0.0.1}, {name: s2, address: 10.0.0.1, base_port: 5010}]\n", "switches[1].address", "also"},
		{base + "cables: [[s1/1, h1], [s1/1, h2]]\n", "cables[1][0]", "already cabled"},
		{base + "cables: [[s1/5, h1]]\n", "cables[0][0]", "ports 1 to 4"},
		{base + "cables: [[s2/1, h1]]\n", "cables[0][0]", "no switch"},
		{base + "cables: [[h1, h2]]\n", "cables[0]", "two hosts"},
		{base + "cables: [[s1/1, h9]]\n", "cables[0][1]", "no host"},
		{base + "cables: [[s1/1]]\n", "cables[0]", "two ends"},
		{"hosts: [{name: h1, endpoint: \"10.0.1.1\"}]\n", "hosts[0].endpoint", "ADDRESS:PORT"},
	} {
		_, err := topology.Parse([]byte(tc.text))
		var te *topology.Error
		if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error on %s saying %q", tc.text, err, tc.field, tc.want)
		}
	}
}

func TestFatTree(t *testing.T) {
	top, err := topology.FatTree(topology.FatTreeSpec{Leaves: 2, Spines: 2, HostsPerLeaf: 2,
		SwitchAddress: netip.MustParseAddr("10.220.0.1"),
		HostEndpoint:  func(i int) netip.AddrPort { return netip.MustParseAddrPort(fmt.Sprintf("10.220.1.%d:4793", i+1)) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Switches) != 4 || len(top.Hosts) != 4 || len(top.Cables) != 4+4 {
		t.Fatalf("%d switches, %d hosts, %d cables", len(top.Switches), len(top.Hosts), len(top.Cables))
	}
	if p, ok := top.Peer(topology.End{Switch: "leaf2", Port: 4}); !ok || p != (topology.End{Switch: "spine2", Port: 2}) {
		t.Errorf("leaf2/4's peer %v", p)
	}
	if up, _ := top.Uplink("host3"); up != top.Switch("leaf2").Endpoint(1) {
		t.Errorf("host3's uplink %v", up)
	}
	if _, err := topology.FatTree(topology.FatTreeSpec{Leaves: 300, Spines: 1, HostsPerLeaf: 1}); err == nil {
		t.Error("a fat tree of 300 leaves was made")
	}
}
