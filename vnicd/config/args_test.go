package config

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd/engine"
)

const runtimeCfg = `
node: {name: a, lid: 0x10, listen: "127.0.0.1:4793"}
peers: [{lid: 0x20, address: "127.0.0.2:4793"}]
multicast: [{lid: 0xF00001, members: [0x10, 0x20]}, {lid: 0xF00002, members: [0x20]}]
`

func TestVNICFromArgs(t *testing.T) {
	cfg := mustParse(t, runtimeCfg)
	free := func() (uint8, bool) { return 7, true }
	for _, tc := range []struct {
		name, args, err string
		check           func(t *testing.T, v VNICConfig, owner string)
	}{
		{"minimal", `{"vesw": 1, "pkey": "0x8001"}`, "", func(t *testing.T, v VNICConfig, owner string) {
			if v.VPort != 7 || v.Port.VESW.VESWID != 1 || v.Port.VESW.PKey != 0x8001 || v.Port.VESW.EthMTU != engine.DefaultEthMTU ||
				v.Netdev.IfName != "vnic7" || v.Port.Port.ConfigState != engine.StateForwarding ||
				v.Port.Port.BaseMAC != encap.MACForLID(0x10, 1) || owner != "" {
				t.Errorf("got %+v owner %q", v, owner)
			}
		}},
		{"full", `{"vport": 3, "vesw": 2, "pkey": 32770, "eth_mtu": 1400, "mcast_dlid": "0xF00001", "mac": "02:00:00:00:00:09",
			"ifname": "eth1", "netns": "pid:42", "addresses": ["10.1.0.5/24"], "config_state": "drop_all", "owner": "cni:abc:eth1"}`, "",
			func(t *testing.T, v VNICConfig, owner string) {
				if v.VPort != 3 || v.Port.VESW.VESWID != 2 || v.Port.VESW.PKey != 0x8002 || v.Port.VESW.EthMTU != 1400 ||
					v.Port.VESW.McastDLID != 0xF00001 || v.Port.Port.BaseMAC != [6]byte{2, 0, 0, 0, 0, 9} ||
					v.Netdev.IfName != "eth1" || v.Netdev.NetNS != "pid:42" ||
					len(v.Netdev.Addresses) != 1 || v.Netdev.Addresses[0] != netip.MustParsePrefix("10.1.0.5/24") ||
					v.Port.Port.ConfigState != engine.StateDropAll || owner != "cni:abc:eth1" {
					t.Errorf("got %+v owner %q", v, owner)
				}
			}},
		{"no vesw", `{"pkey": "0x8001"}`, "vesw: required", nil},
		{"no pkey", `{"vesw": 1}`, "pkey: required", nil},
		{"bad pkey", `{"vesw": 1, "pkey": "0x8000"}`, "pkey: 0x8000 has base 0", nil},
		{"vesw 0", `{"vesw": 0, "pkey": "0x8001"}`, "vesw: 0 is out of range", nil},
		{"mtu", `{"vesw": 1, "pkey": "0x8001", "eth_mtu": 20000}`, "eth_mtu: 20000 is above the maximum", nil},
		{"group undeclared", `{"vesw": 1, "pkey": "0x8001", "mcast_dlid": "0xF00003"}`, "mcast_dlid: group 0xF00003 is not declared", nil},
		{"not a member", `{"vesw": 1, "pkey": "0x8001", "mcast_dlid": "0xF00002"}`, "is not a member of group", nil},
		{"bad mac", `{"vesw": 1, "pkey": "0x8001", "mac": "01:00:5e:00:00:01"}`, "mac: \"01:00:5e:00:00:01\": a multicast MAC", nil},
		{"bad ifname", `{"vesw": 1, "pkey": "0x8001", "ifname": "a/b"}`, "ifname: \"a/b\"", nil},
		{"bad netns", `{"vesw": 1, "pkey": "0x8001", "netns": "pid:x"}`, "netns: \"pid:x\": \"x\" is not a process ID", nil},
		{"bad address", `{"vesw": 1, "pkey": "0x8001", "addresses": ["10.1.0.5"]}`, "addresses[0]: \"10.1.0.5\": not an address with a prefix", nil},
		{"bad state", `{"vesw": 1, "pkey": "0x8001", "config_state": "up"}`, "config_state: \"up\": must be forwarding or drop_all", nil},
		{"vport range", `{"vport": 255, "vesw": 1, "pkey": "0x8001"}`, "vport: 255 is out of range", nil},
		{"unknown", `{"vesw": 1, "pkey": "0x8001", "colour": "red"}`, "bad arguments: colour: unknown field", nil},
		{"typo", `{"vesw": 1, "pkey": "0x8001", "ifnme": "x"}`, "bad arguments: ifnme: unknown field; did you mean ifname?", nil},
		{"not an object", `[1, 2]`, "bad arguments: line 1: the arguments must be an object", nil},
		{"twice", `{"vesw": 1, "vesw": 2, "pkey": "0x8001"}`, "bad arguments: vesw: given twice", nil},
		{"vesw a list", `{"vesw": [1], "pkey": "0x8001"}`, "vesw: must be a single value, not a list", nil},
		{"owner control", `{"vesw": 1, "pkey": "0x8001", "owner": "a\u0001"}`, "owner:", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, owner, err := cfg.VNICFromArgs([]byte(tc.args), free)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, v, owner)
		})
	}
}

func TestVNICFromArgsNoFreeVPort(t *testing.T) {
	cfg := mustParse(t, runtimeCfg)
	_, _, err := cfg.VNICFromArgs([]byte(`{"vesw": 1, "pkey": "0x8001"}`), func() (uint8, bool) { return 0, false })
	if err == nil || !strings.Contains(err.Error(), "every vport") {
		t.Fatalf("err = %v", err)
	}
}
