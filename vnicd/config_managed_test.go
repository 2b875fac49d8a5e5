package vnicd

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseConfigManaged(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
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
		_, err := ParseConfig([]byte(c.text))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: %v, want an error at %s", name, err, c.field)
		}
	}
	cfg, err = ParseConfig([]byte("node: {name: a, lid: 2}\ntrusted_managers: ['10.0.0.2:4000']"))
	if err != nil || len(cfg.TrustedManagers) != 1 || cfg.TrustedManagers[0].Port() != 4000 {
		t.Fatalf("trusted: %v %v", err, cfg)
	}
}
