package config

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseConfigManaged(t *testing.T) {
	cfg, err := Parse([]byte(`
node:
  name: host-c
  fabric_manager: 10.0.0.100
netdevs:
  3: {ifname: eth-vesw3, netns: c1, addresses: [192.168.3.1/24]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Node.Managed() || cfg.Node.FabricManager != netip.MustParseAddrPort("10.0.0.100:4793") ||
		cfg.Node.FMLID != 1 || cfg.Node.LID != 0 || len(cfg.VNICs) != 0 {
		t.Fatalf("%+v", cfg.Node)
	}
	if nd := cfg.NetdevFor(3); nd.IfName != "eth-vesw3" || nd.NetNS != "c1" || len(nd.Addresses) != 1 {
		t.Fatalf("netdev 3: %+v", nd)
	}
	if nd := cfg.NetdevFor(4); nd.IfName != "vnic4" || nd.NetNS != "" {
		t.Fatalf("netdev 4: %+v", nd)
	}
	dir, err := cfg.Directory()
	if err != nil {
		t.Fatal(err)
	}
	if ep, ok := dir.Endpoint(1); !ok || ep != cfg.Node.FabricManager {
		t.Fatal("FM not in the directory")
	}

	for name, c := range map[string]struct{ text, field string }{
		"static needs a LID":      {"node: {name: a}", "node.lid"},
		"fm_lid multicast":        {"node: {name: a, fabric_manager: '10.0.0.1:5000', fm_lid: 0xF00001}", "node.fm_lid"},
		"bad fabric_manager":      {"node: {name: a, fabric_manager: 'no such host.invalid'}", "node.fabric_manager"},
		"trusted in managed mode": {"node: {name: a, fabric_manager: '10.0.0.1'}\ntrusted_managers: ['10.0.0.2']", "trusted_managers"},
		"bad trusted":             {"node: {name: a, lid: 2}\ntrusted_managers: [nope]", "trusted_managers[0]"},
		"bad netdevs key":         {"node: {name: a, fabric_manager: '10.0.0.1'}\nnetdevs: {x: {ifname: a}}", "netdevs.x"},
		"bad netdevs ifname":      {"node: {name: a, fabric_manager: '10.0.0.1'}\nnetdevs: {1: {ifname: 'a b'}}", "netdevs.1.ifname"},
		"netdevs in static mode":  {"node: {name: a, lid: 2}\nnetdevs: {0: {ifname: a}}", "netdevs.0"},
	} {
		_, err := Parse([]byte(c.text))
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: %v, want an error at %s", name, err, c.field)
		}
	}
	cfg, err = Parse([]byte("node: {name: a, lid: 2}\ntrusted_managers: ['10.0.0.2:4000']"))
	if err != nil || len(cfg.TrustedManagers) != 1 || cfg.TrustedManagers[0].Port() != 4000 {
		t.Fatalf("trusted: %v %v", err, cfg)
	}
}

// Two netdevs keys that are one vport (7 and 07) used to keep one entry and
// drop the other without a word, and two netdevs entries with one name in
// one namespace (or the underlay's name, or a vnics[] port's) were taken,
// though the EM would then make two netdevs of that name. Each is an error
// naming the second entry, as for vnics[].port.ifname.
func TestParseConfigNetdevsConflicts(t *testing.T) {
	const managed = "node: {name: a, lid: 5, fabric_manager: '10.0.0.1', underlay_interface: eth0}\n"
	for name, c := range map[string]struct{ text, field, reason string }{
		"one vport twice": {"netdevs:\n  7: {ifname: x}\n  0x7: {ifname: y}\n", "netdevs.7", "vport 7 is also netdevs.0x7"},
		"leading 0":       {"netdevs:\n  7: {ifname: x}\n  '07': {ifname: y}\n", "netdevs.07", "a leading 0 is ambiguous"},
		"above 254":       {"netdevs:\n  255: {ifname: y}\n", "netdevs.255", "not a vport index (0..254)"},
		"ifname twice":    {"netdevs:\n  1: {ifname: x}\n  2: {ifname: x}\n", "netdevs.2.ifname", `"x" is also netdevs.1.ifname`},
		"default ifname":  {"netdevs:\n  1: {ifname: vnic2}\n  2: {addresses: [10.1.0.1/24]}\n", "netdevs.2.ifname", `"vnic2" is also netdevs.1.ifname`},
		"same netns": {"netdevs:\n  1: {ifname: x, netns: c1}\n  2: {ifname: x, netns: /var/run/netns/c1}\n",
			"netdevs.2.ifname", `"x" is also netdevs.1.ifname`},
		"underlay": {"netdevs:\n  1: {ifname: eth0}\n", "netdevs.1.ifname", `"eth0" is also node.underlay_interface`},
		"a vnics port": {"netdevs:\n  1: {ifname: vnic0}\nvnics:\n  - vesw: {id: 1, pkey: 0x8001}\n",
			"netdevs.1.ifname", `"vnic0" is also vnics[0].port.ifname`},
	} {
		_, err := Parse([]byte(managed + c.text))
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, c.reason) {
			t.Errorf("%s: %v; want an error at %s with %q", name, err, c.field, c.reason)
		}
	}
	// Not conflicts: one name in two namespaces, and a vport's own vnics[]
	// entry, which names its netdev in place of the netdevs one.
	for name, text := range map[string]string{
		"two namespaces": "netdevs:\n  1: {ifname: x, netns: c1}\n  2: {ifname: x, netns: c2}\n  0x3: {ifname: x}\n",
		"same vport":     "netdevs:\n  0: {ifname: vnic0}\nvnics:\n  - vesw: {id: 1, pkey: 0x8001}\n",
	} {
		if _, err := Parse([]byte(managed + text)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// In managed mode the directory maps node.fm_lid to node.fabric_manager. A
// node.lid equal to it used to replace the FM's entry with the node's own
// endpoint (so management MADs to the FM went back to the node), and a peer
// with that LID was dropped from the directory; both are errors.
func TestParseConfigManagedFMLIDClash(t *testing.T) {
	for name, c := range map[string]struct{ text, field string }{
		"node.lid":        {"node: {name: a, lid: 1, listen: '10.0.0.2', fabric_manager: '10.0.0.1'}\n", "node.lid"},
		"node.lid fm_lid": {"node: {name: a, lid: 0x20, fm_lid: 0x20, listen: '10.0.0.2', fabric_manager: '10.0.0.1'}\n", "node.lid"},
		"peers[].lid":     {"node: {name: a, lid: 2, fabric_manager: '10.0.0.1'}\npeers: [{lid: 3, address: '10.0.0.4'}, {lid: 1, address: '10.0.0.3'}]\n", "peers[1].lid"},
	} {
		cfg, err := Parse([]byte(c.text))
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, "node.fm_lid") {
			if err == nil {
				dir, _ := cfg.Directory()
				ep, _ := dir.Endpoint(uint32(cfg.Node.FMLID))
				t.Errorf("%s: accepted; the directory maps the FM's LID %v to %v (node.fabric_manager %v)",
					name, cfg.Node.FMLID, ep, cfg.Node.FabricManager)
				continue
			}
			t.Errorf("%s: %v; want an error at %s", name, err, c.field)
		}
	}
	// In static mode node.fm_lid means nothing, and LID 1 is any node's.
	if _, err := Parse([]byte("node: {name: a, lid: 1}\npeers: [{lid: 2, address: '10.0.0.3'}]\n")); err != nil {
		t.Error(err)
	}
}

// TestParseConfigManagedLIDZero: in managed mode node.lid is optional, and
// configs/README.md and vnicd.example.yaml document "absent or 0 waits for
// the SM"; `lid: 0` (as a template's ${LID:-0} gives) was refused as "0 is
// not a LID".
func TestParseConfigManagedLIDZero(t *testing.T) {
	for _, text := range []string{
		"node: {name: a, fabric_manager: '10.0.0.1'}",
		"node: {name: a, fabric_manager: '10.0.0.1', lid: ~}",
		"node: {name: a, fabric_manager: '10.0.0.1', lid: 0}",
		"node: {name: a, fabric_manager: '10.0.0.1', lid: 0x0}",
	} {
		cfg, err := Parse([]byte(text))
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if cfg.Node.LID != 0 {
			t.Errorf("%s: LID %v, want 0 (the SM sets it)", text, cfg.Node.LID)
		}
		out, err := cfg.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := Parse(out); err != nil || back.Node.LID != 0 {
			t.Errorf("%s: marshalled back: %v %v", text, err, back)
		}
	}
	// A static node still needs a real LID.
	var ce *Error
	if _, err := Parse([]byte("node: {name: a, lid: 0}")); !errors.As(err, &ce) || ce.Field != "node.lid" {
		t.Errorf("static lid 0: %v, want an error at node.lid", err)
	}
}
