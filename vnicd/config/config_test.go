package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// cfgBase is a valid config without VNICs: this node 0x10, peers 0xC000 and
// 0x20, group 0xF00001 with this node, group 0xF00002 without it.
const cfgBase = `
node: {name: host-a, lid: 0x10}
peers:
  - {lid: 0xC000, address: "10.200.0.2"}
  - {lid: 0x20, address: "10.200.0.3"}
multicast:
  - {lid: 0xF00001, members: [0x10, 0xC000]}
  - {lid: 0xF00002, members: [0xC000]}
`

// withVNICs is cfgBase with the given vnics list (YAML lines at indent 2).
func withVNICs(vnics string) string { return cfgBase + "vnics:\n" + vnics }

// oneVNIC is cfgBase with one VNIC on vesw 1 carrying the extra vesw and port
// fields (flow-mapping entries, each starting with ", ").
func oneVNIC(vesw, port string) string {
	return withVNICs("  - vesw: {id: 1, pkey: 0x8001" + vesw + "}\n    port: {ifname: vnic0" + port + "}\n")
}

// noEnv is a lookup with nothing set.
func noEnv(string) (string, bool) { return "", false }

func mustParse(t *testing.T, text string) *Config {
	t.Helper()
	c, err := loader.Parse([]byte(text), noEnv)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return c
}

func TestParseConfigErrors(t *testing.T) {
	long := strings.Repeat("x", 65)
	tests := []struct {
		name   string
		yaml   string
		field  string // expected ConfigError.Field
		reason string // a substring of the reason
	}{
		// node
		{"name missing", "node: {lid: 0x10}", "node.name", "required"},
		{"name empty", `node: {name: "", lid: 0x10}`, "node.name", "empty"},
		{"name bad chars", `node: {name: "a b", lid: 0x10}`, "node.name", "only letters"},
		{"name too long", "node: {name: " + long + ", lid: 0x10}", "node.name", "64"},
		{"name a list", "node: {name: [a], lid: 0x10}", "node.name", "not a list"},
		{"guid zero", "node: {name: a, lid: 0x10, guid: 0}", "node.guid", "not a GUID"},
		{"guid text", "node: {name: a, lid: 0x10, guid: abc}", "node.guid", "not an integer"},
		{"guid too large", "node: {name: a, lid: 0x10, guid: 0x10000000000000000}", "node.guid", "too large"},
		{"lid missing", "node: {name: a}", "node.lid", "required"},
		{"lid zero", "node: {name: a, lid: 0}", "node.lid", "not a LID"},
		{"lid multicast", "node: {name: a, lid: 0xF00001}", "node.lid", "not a unicast LID"},
		{"lid permissive", "node: {name: a, lid: 0xFFFFFF}", "node.lid", "not a unicast LID"},
		{"lid beyond 24 bits", "node: {name: a, lid: 0x1000000}", "node.lid", "not a 16B LID"},
		{"lid negative", "node: {name: a, lid: -1}", "node.lid", "negative"},
		{"lid float", "node: {name: a, lid: 1.5}", "node.lid", "not an integer"},
		{"lid leading zero", "node: {name: a, lid: 010}", "node.lid", "ambiguous"},
		{"lid bare 0x", "node: {name: a, lid: 0x}", "node.lid", "not an integer"},
		{"lid underscore", "node: {name: a, lid: 1_0}", "node.lid", "not an integer"},
		{"lid bool", "node: {name: a, lid: true}", "node.lid", "not an integer"},
		{"listen host name", `node: {name: a, lid: 1, listen: "localhost:4793"}`, "node.listen", "host names"},
		{"listen port 0", `node: {name: a, lid: 1, listen: ":0"}`, "node.listen", "bad port"},
		{"listen port range", `node: {name: a, lid: 1, listen: ":65536"}`, "node.listen", "bad port"},
		{"listen multicast", `node: {name: a, lid: 1, listen: "224.0.0.1:4793"}`, "node.listen", "multicast"},
		// The UDP transport carries no zone (scope id): no link-local or zoned IPv6 underlay address.
		{"listen zoned link-local", `node: {name: a, lid: 1, listen: "[fe80::1%eth0]:99"}`, "node.listen", "use a global or ULA address"},
		{"listen link-local", `node: {name: a, lid: 1, listen: "fe80::1"}`, "node.listen", "link-local or zoned"},
		{"listen zoned ULA", `node: {name: a, lid: 1, listen: "[fd00::1%eth0]:99"}`, "node.listen", "link-local or zoned"},
		{"fabric manager zoned", `node: {name: a, fabric_manager: "[fe80::9%eth0]:4793"}`, "node.fabric_manager", "use a global or ULA address"},
		{"listen IPv6 that reads as address:port", `node: {name: a, lid: 1, listen: "fd99::1:4793"}`, "node.listen", "write [fd99::1]:4793 for that port, or [fd99::1:4793]"},
		{"peer IPv6 that reads as address:port", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: \"fd99::2:4793\"}]", "peers[0].address", "also reads as address fd99::2 port 4793"},
		{"fabric manager IPv6 that reads as address:port", `node: {name: a, fabric_manager: "fd99::9:4793"}`, "node.fabric_manager", "write [fd99::9]:4793"},
		{"fabric manager link-local", `node: {name: a, fabric_manager: "fe80::9"}`, "node.fabric_manager", "link-local or zoned"},
		{"peer zoned link-local", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: \"[fe80::2%eth0]:4793\"}]", "peers[0].address", "use a global or ULA address"},
		{"peer link-local", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: \"[fe80::2]:4793\"}]", "peers[0].address", "link-local or zoned"},
		// The socket of a concrete listen address has one family: a peer of
		// the other could be neither sent to nor heard from.
		{"peer IPv6, listen IPv4", "node: {name: a, lid: 1, listen: \"10.0.0.1\"}\npeers: [{lid: 2, address: \"[fd00::2]:4793\"}]", "peers[0].address", "can reach only IPv4"},
		{"peer IPv6, listen 0.0.0.0", "node: {name: a, lid: 1, listen: \"0.0.0.0:4793\"}\npeers: [{lid: 2, address: \"fd00::2\"}]", "peers[0].address", "listen on [::]"},
		{"peer IPv4, listen IPv6", "node: {name: a, lid: 1, listen: \"[fd00::1]:4793\"}\npeers: [{lid: 2, address: \"10.0.0.2\"}]", "peers[0].address", "can reach only IPv6"},
		{"peer IPv4-mapped, listen IPv6", "node: {name: a, lid: 1, listen: \"fd00::1\"}\npeers: [{lid: 2, address: \"[::ffff:10.0.0.2]:4793\"}]", "peers[0].address", "can reach only IPv6"},
		{"fabric manager IPv6, listen IPv4", `node: {name: a, listen: "10.0.0.1", fabric_manager: "[fd00::9]:4793"}`, "node.fabric_manager", "can reach only IPv4"},
		{"trusted manager zoned", "node: {name: a, lid: 1}\ntrusted_managers: [\"[fe80::9%eth0]\"]", "trusted_managers[0]", "use a global or ULA address"},
		{"subnet prefix low bits", `node: {name: a, lid: 1, subnet_prefix: "fe80::1"}`, "node.subnet_prefix", "low 64 bits"},
		{"subnet prefix IPv4", `node: {name: a, lid: 1, subnet_prefix: "10.0.0.0"}`, "node.subnet_prefix", "IPv6"},
		{"subnet prefix length", `node: {name: a, lid: 1, subnet_prefix: "fe80::/48"}`, "node.subnet_prefix", "64"},
		{"verify_icrc yes", "node: {name: a, lid: 1, verify_icrc: yes}", "node.verify_icrc", "true or false"},
		{"busy_poll no unit", "node: {name: a, lid: 1, busy_poll: 50}", "node.busy_poll", "not a duration"},
		{"busy_poll text", "node: {name: a, lid: 1, busy_poll: on}", "node.busy_poll", "not a duration"},
		{"busy_poll negative", "node: {name: a, lid: 1, busy_poll: -1ms}", "node.busy_poll", "0 (off) to 1s"},
		{"busy_poll too long", "node: {name: a, lid: 1, busy_poll: 2s}", "node.busy_poll", "0 (off) to 1s"},
		{"busy_poll a list", "node: {name: a, lid: 1, busy_poll: [1ms]}", "node.busy_poll", "single value"},
		{"queues zero", "node: {name: a, lid: 1, queues: 0}", "node.queues", "out of range 1..16"},
		{"queues too many", "node: {name: a, lid: 1, queues: 17}", "node.queues", "out of range 1..16"},
		{"queues text", "node: {name: a, lid: 1, queues: two}", "node.queues", `"two": must be auto or a number of queues, 1..16`},
		{"queues Auto", "node: {name: a, lid: 1, queues: Auto}", "node.queues", "must be auto or a number"},
		{"queues hex word", "node: {name: a, lid: 1, queues: bad}", "node.queues", `"bad": must be auto or a number`},
		{"queues empty", "node: {name: a, lid: 1, queues: \"\"}", "node.queues", `"": must be auto or a number`},
		{"queues list", "node: {name: a, lid: 1, queues: [auto]}", "node.queues", "must be a single value"},
		{"underlay bad", `node: {name: a, lid: 1, underlay_interface: "a/b"}`, "node.underlay_interface", "'/'"},

		// peers
		{"peers not a list", "node: {name: a, lid: 1}\npeers: {lid: 2}", "peers", "must be a list"},
		{"peer not a mapping", "node: {name: a, lid: 1}\npeers: [7]", "peers[0]", "must be a mapping"},
		{"peer lid missing", "node: {name: a, lid: 1}\npeers: [{address: 10.0.0.1}]", "peers[0].lid", "required"},
		{"peer lid multicast", "node: {name: a, lid: 1}\npeers: [{lid: 0xF00001, address: 10.0.0.1}]", "peers[0].lid", "not a unicast"},
		{"peer lid is node", "node: {name: a, lid: 1}\npeers: [{lid: 1, address: 10.0.0.1}]", "peers[0].lid", "own LID"},
		{"peer lid twice", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: 10.0.0.1}, {lid: 2, address: 10.0.0.2}]", "peers[1].lid", "peers[0].lid"},
		{"peer address missing", "node: {name: a, lid: 1}\npeers: [{lid: 2}]", "peers[0].address", "required"},
		{"peer address host name", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: \"example.com:4793\"}]", "peers[0].address", "host names"},
		{"peer address unspecified", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: 0.0.0.0}]", "peers[0].address", "unspecified"},
		{"peer address port 0", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: \"10.0.0.1:0\"}]", "peers[0].address", "port 0"},
		{"peer address twice", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: 10.0.0.1}, {lid: 3, address: \"10.0.0.1:4793\"}]", "peers[1].address", "peers[0].address"},
		{"peer name bad", "node: {name: a, lid: 1}\npeers: [{lid: 2, address: 10.0.0.1, name: \"b c\"}]", "peers[0].name", "only letters"},

		// multicast
		{"group lid missing", cfgBase + "  - {members: [0x10]}", "multicast[2].lid", "required"},
		{"group lid unicast", cfgBase + "  - {lid: 0x10, members: [0x10]}", "multicast[2].lid", "not a 16B multicast"},
		{"group lid collective", cfgBase + "  - {lid: 0xF80000, members: [0x10]}", "multicast[2].lid", "collective"},
		{"group lid permissive", cfgBase + "  - {lid: 0xFFFFFF, members: [0x10]}", "multicast[2].lid", "not a 16B multicast"},
		{"group lid 32-bit form", cfgBase + "  - {lid: 0xF0000003, members: [0x10]}", "multicast[2].lid", "16B form 0xF00003"},
		{"group lid twice", cfgBase + "  - {lid: 0xF00001, members: [0x10]}", "multicast[2].lid", "declared twice"},
		{"group members missing", cfgBase + "  - {lid: 0xF00003}", "multicast[2].members", "at least one"},
		{"group members empty", cfgBase + "  - {lid: 0xF00003, members: []}", "multicast[2].members", "at least one"},
		{"group members not a list", cfgBase + "  - {lid: 0xF00003, members: 0x10}", "multicast[2].members", "must be a list"},
		{"group member unknown", cfgBase + "  - {lid: 0xF00003, members: [0x10, 0x99]}", "multicast[2].members[1]", "neither"},
		{"group member twice", cfgBase + "  - {lid: 0xF00003, members: [0x10, 0x10]}", "multicast[2].members[1]", "twice"},
		{"group member multicast", cfgBase + "  - {lid: 0xF00003, members: [0xF00001]}", "multicast[2].members[0]", "not a unicast"},
		{"group member null", cfgBase + "  - {lid: 0xF00003, members: [~]}", "multicast[2].members[0]", "required"},

		// control
		{"socket relative", cfgBase + "control: {socket: run/x.sock}", "control.socket", "absolute"},
		{"socket too long", cfgBase + "control: {socket: /" + strings.Repeat("s", 107) + "}", "control.socket", "107"},

		// vnics: identity
		{"vnics not a list", cfgBase + "vnics: {a: 1}", "vnics", "must be a list"},
		{"vnic not a mapping", cfgBase + "vnics: [1]", "vnics[0]", "must be a mapping"},
		{"vport out of range", withVNICs("  - {vport: 255, vesw: {id: 1, pkey: 0x8001}}\n"), "vnics[0].vport", "0..254"},
		{"vport twice", withVNICs("  - {vport: 3, vesw: {id: 1, pkey: 0x8001}}\n  - {vport: 3, vesw: {id: 2, pkey: 0x8001}}\n"), "vnics[1].vport", "vnics[0]"},
		{"vport default clashes", withVNICs("  - {vport: 1, vesw: {id: 1, pkey: 0x8001}}\n  - {vesw: {id: 2, pkey: 0x8001}}\n"), "vnics[1].vport", "vnics[0]"},
		{"vesw missing", withVNICs("  - {vport: 0}\n"), "vnics[0].vesw.id", "required"},
		{"vesw key twice", oneVNIC(", id: 2", ""), "vnics[0].vesw.id", "given twice"},
		{"vesw id zero", withVNICs("  - vesw: {id: 0, pkey: 0x8001}\n"), "vnics[0].vesw.id", "1..4095"},
		{"vesw id 4096", withVNICs("  - vesw: {id: 4096, pkey: 0x8001}\n"), "vnics[0].vesw.id", "1..4095"},
		{"vesw id twice", withVNICs("  - vesw: {id: 7, pkey: 0x8001}\n  - vesw: {id: 7, pkey: 0x8002}\n"), "vnics[1].vesw.id", "vnics[0]"},
		{"fabric_id", oneVNIC(", fabric_id: 1024", ""), "vnics[0].vesw.fabric_id", "0..1023"},
		{"pkey missing", withVNICs("  - vesw: {id: 1}\n"), "vnics[0].vesw.pkey", "required"},
		{"pkey base 0", withVNICs("  - vesw: {id: 1, pkey: 0x8000}\n"), "vnics[0].vesw.pkey", "base 0"},
		{"pkey too large", withVNICs("  - vesw: {id: 1, pkey: 0x18001}\n"), "vnics[0].vesw.pkey", "0x0..0xFFFF"},
		{"eth_mtu small", oneVNIC(", eth_mtu: 67", ""), "vnics[0].vesw.eth_mtu", "minimum 68"},
		{"eth_mtu large", oneVNIC(", eth_mtu: 16334", ""), "vnics[0].vesw.eth_mtu", "maximum 16333"},
		{"config_state", oneVNIC(", config_state: up", ""), "vnics[0].vesw.config_state", "forwarding or drop_all"},

		// vnics: multicast and default ports
		{"mcast_dlid unicast", oneVNIC(", mcast_dlid: 0xC000", ""), "vnics[0].vesw.mcast_dlid", "not a 16B multicast"},
		{"mcast_dlid undeclared", oneVNIC(", mcast_dlid: 0xF00009", ""), "vnics[0].vesw.mcast_dlid", "not declared"},
		{"mcast_dlid not a member", oneVNIC(", mcast_dlid: 0xF00002", ""), "vnics[0].vesw.mcast_dlid", "not a member"},
		{"default port index", oneVNIC(", default_ports: [{index: 16, dlid: 0xC000}]", ""), "vnics[0].vesw.default_ports[0].index", "0..15"},
		{"default port twice", oneVNIC(", default_ports: [{index: 2, dlid: 0xC000}, {index: 2, dlid: 0x20}]", ""), "vnics[0].vesw.default_ports[1].index", "twice"},
		{"default port dlid missing", oneVNIC(", default_ports: [{index: 2}]", ""), "vnics[0].vesw.default_ports[0].dlid", "required"},
		{"default port dlid unknown", oneVNIC(", default_ports: [{index: 2, dlid: 0x30}]", ""), "vnics[0].vesw.default_ports[0].dlid", "not a peer"},
		{"default port dlid own", oneVNIC(", default_ports: [{index: 2, dlid: 0x10}]", ""), "vnics[0].vesw.default_ports[0].dlid", "own LID"},
		{"default port dlid multicast", oneVNIC(", default_ports: [{index: 2, dlid: 0xF00001}]", ""), "vnics[0].vesw.default_ports[0].dlid", "not a unicast"},
		{"default port unknown field", oneVNIC(", default_ports: [{index: 2, lid: 0xC000}]", ""), "vnics[0].vesw.default_ports[0].lid", "unknown field"},

		// vnics: rc, sc, vl
		{"rc unused bit", oneVNIC(", rc: 8", ""), "vnics[0].vesw.rc", "bits 0x8"},
		{"rc high bits", oneVNIC(", rc: 0x10000000", ""), "vnics[0].vesw.rc", "not part"},
		{"rc text", oneVNIC(", rc: fast", ""), "vnics[0].vesw.rc", "not an integer"},
		{"rc too large", oneVNIC(", rc: 0x100000000", ""), "vnics[0].vesw.rc", "out of range"},
		{"rc map value", oneVNIC(", rc: {ipv4: 8}", ""), "vnics[0].vesw.rc.ipv4", "0..7"},
		{"rc map key", oneVNIC(", rc: {ipv5: 1}", ""), "vnics[0].vesw.rc.ipv5", "unknown field"},
		{"rc map key twice", oneVNIC(", rc: {ipv4: 1, ipv4: 2}", ""), "vnics[0].vesw.rc.ipv4", "given twice"},
		{"rc list", oneVNIC(", rc: [1]", ""), "vnics[0].vesw.rc", "single value"},
		{"sc uc short", oneVNIC(", sc: {uc: [0, 0, 0, 0, 0, 0, 0]}", ""), "vnics[0].vesw.sc.uc", "8 values"},
		{"sc uc value", oneVNIC(", sc: {uc: [0, 0, 0, 32, 0, 0, 0, 0]}", ""), "vnics[0].vesw.sc.uc[3]", "0..31"},
		{"sc mc not a list", oneVNIC(", sc: {mc: 3}", ""), "vnics[0].vesw.sc.mc", "must be a list"},
		{"sc non_vlan_mc", oneVNIC(", sc: {non_vlan_mc: 32}", ""), "vnics[0].vesw.sc.non_vlan_mc", "0..31"},
		{"sc unknown field", oneVNIC(", sc: {ucast: [0]}", ""), "vnics[0].vesw.sc.ucast", "unknown field"},
		{"vl mc value", oneVNIC(", vl: {mc: [32, 0, 0, 0, 0, 0, 0, 0]}", ""), "vnics[0].vesw.vl.mc[0]", "0..31"},
		{"vl non_vlan_uc", oneVNIC(", vl: {non_vlan_uc: 40}", ""), "vnics[0].vesw.vl.non_vlan_uc", "0..31"},

		// vnics: port
		{"port_num negative", oneVNIC("", ", port_num: -1"), "vnics[0].port.port_num", "negative"},
		{"port_num too large", oneVNIC("", ", port_num: 0x100000000"), "vnics[0].port.port_num", "out of range"},
		{"mac multicast", oneVNIC("", `, mac: "01:00:5e:00:00:01"`), "vnics[0].port.mac", "multicast"},
		{"mac zero", oneVNIC("", `, mac: "00:00:00:00:00:00"`), "vnics[0].port.mac", "zero"},
		{"mac garbage", oneVNIC("", ", mac: magic"), "vnics[0].port.mac", "not a MAC"},
		{"mac 8 bytes", oneVNIC("", `, mac: "02:00:00:00:00:00:00:01"`), "vnics[0].port.mac", "not a MAC"},
		{"ifname too long", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: abcdefghijklmnop}}\n"), "vnics[0].port.ifname", "15 bytes"},
		{"ifname space", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: \"a b\"}}\n"), "vnics[0].port.ifname", "whitespace"},
		{"ifname tab", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: \"a\\tb\"}}\n"), "vnics[0].port.ifname", "whitespace"},
		{"ifname dot", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: .}}\n"), "vnics[0].port.ifname", "not a valid"},
		{"ifname dotdot", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: ..}}\n"), "vnics[0].port.ifname", "not a valid"},
		{"ifname slash", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: a/b}}\n"), "vnics[0].port.ifname", "'/'"},
		{"ifname colon", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: \"a:b\"}}\n"), "vnics[0].port.ifname", "':'"},
		{"ifname template", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: vnic%d}}\n"), "vnics[0].port.ifname", "'%'"},
		{"netns relative path", oneVNIC("", ", netns: a/b"), "vnics[0].port.netns", "no '/'"},
		{"netns dotdot", oneVNIC("", ", netns: .."), "vnics[0].port.netns", "not a valid"},
		{"netns control", oneVNIC("", `, netns: "a\nb"`), "vnics[0].port.netns", "control"},
		{"ifname non-ASCII space", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: \"a\\u00a0b\"}}\n"), "vnics[0].port.ifname", "whitespace"},
		{"socket control", cfgBase + `control: {socket: "/run/a\tb"}`, "control.socket", "control"},
		{"ifname twice by default", withVNICs("  - {vport: 0, vesw: {id: 1, pkey: 0x8001}, port: {ifname: vnic1}}\n  - {vport: 1, vesw: {id: 2, pkey: 0x8001}}\n"), "vnics[1].port.ifname", "vnics[0].port.ifname"},
		{"ifname twice in a named netns", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: v, netns: x}}\n  - {vesw: {id: 2, pkey: 0x8001}, port: {ifname: v, netns: /var/run/netns/x}}\n"), "vnics[1].port.ifname", "same network namespace"},
		{"ifname twice under /run", withVNICs("  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: v, netns: /run/netns/x}}\n  - {vesw: {id: 2, pkey: 0x8001}, port: {ifname: v, netns: x}}\n"), "vnics[1].port.ifname", "same network namespace"},
		{"ifname is the underlay", "node: {name: a, lid: 1, underlay_interface: eth0}\nvnics:\n  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: eth0}}\n", "vnics[0].port.ifname", "node.underlay_interface"},
		{"address without prefix", oneVNIC("", ", addresses: [192.168.1.1]"), "vnics[0].port.addresses[0]", "prefix length"},
		{"address twice", oneVNIC("", ", addresses: [192.168.1.1/24, 10.0.0.1/8, 192.168.1.1/24]"), "vnics[0].port.addresses[2]", "twice"},
		{"address multicast", oneVNIC("", ", addresses: [\"ff02::1/64\"]"), "vnics[0].port.addresses[0]", "multicast"},
		{"address zone", oneVNIC("", ", addresses: [\"fe80::1%eth0/64\"]"), "vnics[0].port.addresses[0]", "prefix length"},
		{"addresses not a list", oneVNIC("", ", addresses: 10.0.0.1/8"), "vnics[0].port.addresses", "must be a list"},
		{"port unknown field", oneVNIC("", ", mtu: 9000"), "vnics[0].port.mtu", "unknown field"},

		// vnics: MAC table
		{"mac table mac multicast", oneVNIC("", `, mac_table: [{mac: "33:33:00:00:00:01", dlid: 0xC000}]`), "vnics[0].port.mac_table[0].mac", "multicast"},
		{"mac table mac zero", oneVNIC("", `, mac_table: [{mac: "00:00:00:00:00:00", dlid: 0xC000}]`), "vnics[0].port.mac_table[0].mac", "zero"},
		{"mac table mac missing", oneVNIC("", `, mac_table: [{dlid: 0xC000}]`), "vnics[0].port.mac_table[0].mac", "required"},
		{"mac table mac twice", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0xC000}, {mac: "AA-BB-CC-DD-EE-F0", dlid: 0x20}]`), "vnics[0].port.mac_table[1].mac", "twice"},
		{"mac table dlid missing", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0"}]`), "vnics[0].port.mac_table[0].dlid", "required"},
		{"mac table dlid unknown", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0x30}]`), "vnics[0].port.mac_table[0].dlid", "not a peer"},
		{"mac table dlid own", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0x10}]`), "vnics[0].port.mac_table[0].dlid", "own LID"},
		{"mac table dlid undeclared group", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0xF00007}]`), "vnics[0].port.mac_table[0].dlid", "not declared"},
		{"mac table dlid collective", oneVNIC("", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0xF80000}]`), "vnics[0].port.mac_table[0].dlid", "collective"},

		// YAML
		{"unknown top-level field", cfgBase + "nodes: {}", "nodes", "unknown field"},
		{"unknown node field", "node: {name: a, lid: 1, mtu: 9000}", "node.mtu", "unknown field"},
		{"node a scalar", "node: 5", "node", "must be a mapping"},
		{"key twice", "node:\n  name: a\n  lid: 1\n  lid: 2\n", "node.lid", "given twice"},
		{"root a list", "- a", "", "must be a mapping"},
		{"syntax", "node: {name: a\n", "", ""},
		{"two documents", "node: {name: a, lid: 1}\n---\nnode: {}\n", "", "second YAML document"},
		{"empty file", "", "node.name", "required"},

		// environment
		{"env unset", "node: {name: ${OPAVNIC_TEST_UNSET}, lid: 1}", "", "OPAVNIC_TEST_UNSET"},
		{"env bad name", "node: {name: ${1A}, lid: 1}", "", "NAME"},
		{"env bad operator", "node: {name: ${A-x}, lid: 1}", "", "NAME"},
		{"env unterminated", "node:\n  name: ${A\n  lid: 1\n", "", "unterminated"},
		{"env nested", "node: {name: ${A:-${B}}, lid: 1}", "", "cannot contain"},
		{"env in a comment", "# see ${A}\nnode: {name: a, lid: 1}", "", "A is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loader.Parse([]byte(tt.yaml), noEnv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *ConfigError", err, err)
			}
			if ce.Field != tt.field || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("got field %q reason %q; want field %q reason containing %q", ce.Field, ce.Reason, tt.field, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Errorf("Error() = %q, want the config: prefix", err)
			}
		})
	}
}

func TestParseConfigManyVNICs(t *testing.T) {
	var b strings.Builder
	for i := range MaxVPort + 2 {
		fmt.Fprintf(&b, "  - {vesw: {id: %d, pkey: 0x8001}, port: {ifname: v%d}}\n", i+1, i)
	}
	_, err := loader.Parse([]byte(withVNICs(b.String())), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || ce.Field != "vnics[255].vport" {
		t.Fatalf("err = %v, want vnics[255].vport", err)
	}
	// With MaxVPort+1 entries every default fits.
	text := withVNICs(b.String()[:strings.Index(b.String(), "  - {vesw: {id: 256")])
	c := mustParse(t, text)
	if n := len(c.VNICs); n != MaxVPort+1 || c.VNICs[n-1].VPort != MaxVPort {
		t.Errorf("%d VNICs, last vport %d", n, c.VNICs[n-1].VPort)
	}
}

// The loader's errors say "config: " and the line of the value.
func TestConfigErrorFormat(t *testing.T) {
	_, err := loader.Parse([]byte("node:\n  name: a\n  lid: 0\n"), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 3 {
		t.Errorf("err = %v, want line 3", err)
	}
	_, err = loader.Parse([]byte("node:\n  name: a\n  lid: 1\n  bogus: 1\n"), noEnv)
	if !errors.As(err, &ce) || ce.Line != 4 || ce.Error() != "config: node.bogus: unknown field (line 4)" {
		t.Errorf("err = %v, want node.bogus at line 4", err)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c := mustParse(t, `
node: {name: host-a, lid: 0x10}
vnics:
  - vesw: {id: 1, pkey: 0x8001}
  - vesw: {id: 3, pkey: 0x8002}
`)
	n := c.Node
	if n.GUID != uint64(encap.GUIDFromName("host-a")) || n.GUID == 0 {
		t.Errorf("GUID = %#x, want the derived %#x", n.GUID, uint64(encap.GUIDFromName("host-a")))
	}
	if want := netip.MustParseAddrPort("[::]:4793"); n.Listen != want {
		t.Errorf("Listen = %v, want %v", n.Listen, want)
	}
	if n.SubnetPrefix != encap.DefaultSubnetPrefix || !n.VerifyICRC || n.UnderlayInterface != "" || n.BusyPoll != 0 {
		t.Errorf("node defaults: %+v", n)
	}
	if c.Peers != nil || c.Multicast != nil {
		t.Errorf("peers %v, multicast %v, want nil", c.Peers, c.Multicast)
	}
	if c.Control.Socket != "/run/opavnic/vnicd-host-a.sock" {
		t.Errorf("socket = %q", c.Control.Socket)
	}
	if len(c.VNICs) != 2 {
		t.Fatalf("%d VNICs", len(c.VNICs))
	}
	for i, v := range c.VNICs {
		vesw := encap.VESWID(1 + 2*i)
		want := VNICConfig{
			VPort: uint8(i),
			Port: engine.PortConfig{
				VESW: engine.VESWConfig{VESWID: vesw, PKey: encap.PKey(0x8001 + i), EthMTU: 1500},
				Port: engine.VPortConfig{
					PortNum:     uint32(i),
					BaseMAC:     encap.MACForLID(0x10, vesw),
					ConfigState: engine.StateForwarding,
					EncapSLID:   0x10,
				},
			},
			Netdev: engine.NetdevConfig{IfName: []string{"vnic0", "vnic1"}[i]},
		}
		if !reflect.DeepEqual(v, want) {
			t.Errorf("vnics[%d] =\n%+v\nwant\n%+v", i, v, want)
		}
	}
	// An empty string or null is the default too.
	c = mustParse(t, `
node: {name: n, lid: 1, listen: "", subnet_prefix: ~, guid: null}
control: {socket: ""}
vnics:
  - vesw: {id: 1, pkey: 0x8001, eth_mtu: ~, config_state: ""}
    port: {mac: "", ifname: "", netns: "", port_num: ~}
`)
	if c.Node.Listen.Port() != DefaultUDPPort || c.Node.GUID != uint64(encap.GUIDFromName("n")) || c.Control.Socket != DefaultControlSocket("n") ||
		c.VNICs[0].Port.VESW.EthMTU != engine.DefaultEthMTU || c.VNICs[0].Netdev.IfName != "vnic0" ||
		c.VNICs[0].Port.Port.BaseMAC != encap.MACForLID(1, 1) || c.VNICs[0].Port.Port.ConfigState != engine.StateForwarding {
		t.Errorf("empty values did not take the defaults: %+v", c)
	}
}

func TestDeriveNodeGUID(t *testing.T) {
	seen := map[uint64]string{}
	for _, name := range []string{"", "a", "host-a", "host-b", "x.y_z-1"} {
		g := uint64(encap.GUIDFromName(name))
		if g == 0 || g>>56&3 != 2 {
			t.Errorf("uint64(encap.GUIDFromName(%q)) = %#016x: want locally administered, individual", name, g)
		}
		if g != uint64(encap.GUIDFromName(name)) {
			t.Errorf("uint64(encap.GUIDFromName(%q)) is not deterministic", name)
		}
		if prev, dup := seen[g]; dup {
			t.Errorf("%q and %q derive the same GUID", name, prev)
		}
		seen[g] = name
	}
}

func TestParseConfigValues(t *testing.T) {
	c := mustParse(t, cfgBase+`
control: {socket: "@vnicd-a"}
vnics:
  - vport: 7
    vesw:
      id: 4095
      fabric_id: 1023
      pkey: 0x7FFF
      eth_mtu: 16333
      mcast_dlid: 0xF00001
      default_ports: [{index: 0, dlid: 0xC000}, {index: 15, dlid: 0x20}, {index: 4, dlid: 0xC000}]
      rc: 0x07654321
      sc: {uc: [0, 1, 2, 3, 4, 5, 6, 31], mc: [8, 9, 10, 11, 12, 13, 14, 15], non_vlan_uc: 16, non_vlan_mc: 17}
      vl: {uc: [1, 1, 1, 1, 1, 1, 1, 1], mc: [2, 2, 2, 2, 2, 2, 2, 2], non_vlan_uc: 3, non_vlan_mc: 4}
      config_state: drop_all
    port:
      port_num: 0xFFFFFFFF
      mac: "02:AA:BB:CC:DD:EE"
      ifname: "eth.7-x_y"
      netns: /proc/1/ns/net
      addresses: ["192.168.101.1/24", "fd00:101::1/64"]
      mac_table:
        - {mac: "aa:bb:cc:dd:ee:01", dlid: 0xC000}
        - {mac: "aabb.ccdd.ee02", dlid: 0xF00002}
`)
	v := c.VNICs[0]
	want := VNICConfig{
		VPort: 7,
		Port: engine.PortConfig{
			VESW: engine.VESWConfig{
				FabricID:    1023,
				VESWID:      4095,
				DefPortMask: 1<<0 | 1<<4 | 1<<15,
				PKey:        0x7FFF,
				McastDLID:   0xF00001,
				UcastDLID:   [16]uint32{0: 0xC000, 4: 0xC000, 15: 0x20},
				RC:          0x07654321,
				EthMTU:      16333,
			},
			Port: engine.VPortConfig{
				PortNum:     0xFFFFFFFF,
				BaseMAC:     [6]byte{0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE},
				ConfigState: engine.StateDropAll,
				EncapSLID:   0x10,
				SC: encap.SCMap{
					PCPToSCUC: [8]uint8{0, 1, 2, 3, 4, 5, 6, 31},
					PCPToSCMC: [8]uint8{8, 9, 10, 11, 12, 13, 14, 15},
					NonVLANUC: 16,
					NonVLANMC: 17,
				},
				PCPToVLUC: [8]uint8{1, 1, 1, 1, 1, 1, 1, 1},
				PCPToVLMC: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2},
				NonVLANVL: [2]uint8{3, 4},
			},
		},
		Netdev: engine.NetdevConfig{
			IfName: "eth.7-x_y",
			NetNS:  "/proc/1/ns/net",
			Addresses: []netip.Prefix{
				netip.MustParsePrefix("192.168.101.1/24"),
				netip.MustParsePrefix("fd00:101::1/64"),
			},
		},
		MACTable: []engine.MACEntry{
			{MAC: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x01}, DLID: 0xC000},
			{MAC: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x02}, DLID: 0xF00002},
		},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("vnic =\n%+v\nwant\n%+v", v, want)
	}
	if c.Control.Socket != "@vnicd-a" {
		t.Errorf("socket = %q", c.Control.Socket)
	}
	wantPeers := []Peer{
		{LID: 0xC000, Addr: netip.MustParseAddrPort("10.200.0.2:4793")},
		{LID: 0x20, Addr: netip.MustParseAddrPort("10.200.0.3:4793")},
	}
	if !reflect.DeepEqual(c.Peers, wantPeers) {
		t.Errorf("peers = %v, want %v", c.Peers, wantPeers)
	}
	wantGroups := []MulticastGroup{{0xF00001, []uint32{0x10, 0xC000}}, {0xF00002, []uint32{0xC000}}}
	if !reflect.DeepEqual(c.Multicast, wantGroups) {
		t.Errorf("multicast = %v, want %v", c.Multicast, wantGroups)
	}
}

func TestParseConfigRCMap(t *testing.T) {
	for _, tt := range []struct {
		name, rc string
		want     uint32
	}{
		{"integer", "0x07654321", 0x07654321},
		{"decimal", "1", 1},
		{"empty map", "{}", 0},
		{"one class", "{ipv4_tcp: 5}", 5 << encap.RCIPv4TCP},
		{"every class", "{default: 1, ipv4: 2, ipv4_udp: 3, ipv4_tcp: 4, ipv6: 5, ipv6_tcp: 6, ipv6_udp: 7}", 0x07654321},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, oneVNIC(", rc: "+tt.rc, ""))
			if got := c.VNICs[0].Port.VESW.RC; got != tt.want {
				t.Errorf("rc = %#x, want %#x", got, tt.want)
			}
		})
	}
	c := mustParse(t, withVNICs(`  - vesw:
      id: 1
      pkey: 0x8001
      rc:
        ipv6_udp: 7
        default: 2
`))
	if got, want := c.VNICs[0].Port.VESW.RC, uint32(7<<encap.RCIPv6UDP|2); got != want {
		t.Errorf("block map rc = %#x, want %#x", got, want)
	}
	// The map form picks the same RC as encap.SelectRC reads back.
	c = mustParse(t, oneVNIC(", rc: {ipv6_tcp: 6, ipv4_udp: 3}", ""))
	rc := c.VNICs[0].Port.VESW.RC
	if rc>>encap.RCIPv6TCP&7 != 6 || rc>>encap.RCIPv4UDP&7 != 3 || rc&^(7<<encap.RCIPv6TCP|7<<encap.RCIPv4UDP) != 0 {
		t.Errorf("rc = %#x", rc)
	}
}

func TestParseConfigNumbers(t *testing.T) {
	for _, tt := range []struct {
		text string
		want encap.LID
	}{
		{"16", 16}, {"0x10", 16}, {"0X1f", 31}, {"0o20", 16}, {"0b10000", 16}, {`"0x10"`, 16}, {"'16'", 16}, {"0xEFFFFF", 0xEFFFFF}, {"0xC000", 0xC000},
	} {
		c := mustParse(t, "node: {name: a, lid: "+tt.text+"}")
		if c.Node.LID != tt.want {
			t.Errorf("lid: %s = %v, want %v", tt.text, c.Node.LID, tt.want)
		}
	}
}

// TestParseConfigListenFamily: peers of the listen socket's family, or of
// both with [::], are taken.
func TestParseConfigListenFamily(t *testing.T) {
	for _, tt := range []struct{ listen, peer string }{
		{"10.0.0.1", "10.0.0.2"},
		{"10.0.0.1", "[::ffff:10.0.0.2]:4793"},
		{"[::ffff:10.0.0.1]:4793", "10.0.0.2"},
		{"0.0.0.0:4793", "10.0.0.2"},
		{"fd00::1", "[fd00::2]:4793"},
		{"[::]:4793", "10.0.0.2"},
		{"[::]:4793", "fd00::2"},
		{":4793", "10.0.0.2"},
	} {
		c := mustParse(t, `node: {name: a, lid: 1, listen: "`+tt.listen+`"}
peers: [{lid: 2, address: "`+tt.peer+`"}]`)
		if len(c.Peers) != 1 {
			t.Errorf("listen %s, peer %s: %d peers", tt.listen, tt.peer, len(c.Peers))
		}
	}
	c := mustParse(t, `node: {name: a, listen: "fd00::1", fabric_manager: "[fd00::9]:4793"}`)
	if got := c.Node.FabricManager.String(); got != "[fd00::9]:4793" {
		t.Errorf("fabric manager = %s", got)
	}
}

func TestParseConfigAddresses(t *testing.T) {
	for _, tt := range []struct {
		listen string
		want   string
	}{
		{":5000", "[::]:5000"},
		{"10.0.0.1", "10.0.0.1:4793"},
		{"10.0.0.1:99", "10.0.0.1:99"},
		{"0.0.0.0:4793", "0.0.0.0:4793"},
		{"::1", "[::1]:4793"},
		{"[::1]", "[::1]:4793"},
		{"[fd00::1]:99", "[fd00::1]:99"},
		{"[fd99::2:4793]", "[fd99::2:4793]:4793"}, // bracketed: the address, as written
		{"fd99::2:abcd", "[fd99::2:abcd]:4793"},   // its last group is not a port in decimal
		{"fd99::4793", "[fd99::4793]:4793"},       // "fd99:" is no address
		{"[::ffff:10.0.0.1]:99", "10.0.0.1:99"},
		{"169.254.0.2", "169.254.0.2:4793"},          // IPv4 link-local needs no zone
		{"[::ffff:169.254.0.2]", "169.254.0.2:4793"}, // nor IPv4-mapped
	} {
		c := mustParse(t, `node: {name: a, lid: 1, listen: "`+tt.listen+`"}`)
		if got := c.Node.Listen.String(); got != tt.want {
			t.Errorf("listen %q = %s, want %s", tt.listen, got, tt.want)
		}
		if tt.listen[0] == ':' || strings.HasPrefix(tt.listen, "0.0.0.0") {
			continue // listen-only forms
		}
		c = mustParse(t, `node: {name: a, lid: 1}
peers: [{lid: 2, address: "`+tt.listen+`"}]`)
		if got := c.Peers[0].Addr.String(); got != tt.want {
			t.Errorf("peer address %q = %s, want %s", tt.listen, got, tt.want)
		}
	}
	c := mustParse(t, `node: {name: a, lid: 1, subnet_prefix: "fec0:0:0:1::/64"}`)
	if c.Node.SubnetPrefix != 0xFEC0000000000001 {
		t.Errorf("subnet prefix = %#x", c.Node.SubnetPrefix)
	}
}

func TestParseConfigNetdevPlacement(t *testing.T) {
	// The same ifname in different namespaces is fine.
	c := mustParse(t, withVNICs(`  - {vesw: {id: 1, pkey: 0x8001}, port: {ifname: eth0}}
  - {vesw: {id: 2, pkey: 0x8001}, port: {ifname: eth0, netns: blue}}
  - {vesw: {id: 3, pkey: 0x8001}, port: {ifname: eth0, netns: /var/run/netns/red}}
`))
	if got := []string{c.VNICs[0].Netdev.NetNS, c.VNICs[1].Netdev.NetNS, c.VNICs[2].Netdev.NetNS}; !reflect.DeepEqual(got, []string{"", "blue", "/var/run/netns/red"}) {
		t.Errorf("netns = %q", got)
	}
}

// The expansion rules are internal/envexpand's (tested there); an error in
// a config file is a *ConfigError with the line of the reference.
func TestParseConfigEnvError(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	_, err := loader.Parse([]byte("node: {name: a, lid: 1}\n\npeers: [{lid: ${UNSET}}]\n"), lookup)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 3 || ce.Field != "" || !strings.Contains(ce.Reason, "UNSET is not set") {
		t.Errorf("err = %#v, want line 3, UNSET is not set", err)
	}
}

func TestParseConfigEnv(t *testing.T) {
	t.Setenv("OPAVNIC_TEST_LID", "0xC000")
	t.Setenv("OPAVNIC_TEST_NAME", "from-env")
	c, err := Parse([]byte("node: {name: ${OPAVNIC_TEST_NAME}, lid: ${OPAVNIC_TEST_LID}, listen: \"${OPAVNIC_TEST_UNSET:-10.0.0.1}\"}"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.Name != "from-env" || c.Node.LID != 0xC000 || c.Node.Listen.String() != "10.0.0.1:4793" {
		t.Errorf("node = %+v", c.Node)
	}
}

func loadDemo(t *testing.T, host string) *Config {
	t.Helper()
	c, err := Load(filepath.Join("..", "..", "configs", "demo", "host-"+host+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDemoConfigs(t *testing.T) {
	for _, run := range []string{"", "run42"} {
		name, prefix := "OPAVNIC_RUN unset", "opavnic-demo"
		if run != "" {
			name, prefix = "OPAVNIC_RUN="+run, run
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv("OPAVNIC_RUN", run)
			if run == "" {
				os.Unsetenv("OPAVNIC_RUN") // t.Setenv restores it afterwards
			}
			for _, h := range []struct {
				host     string
				lid      encap.LID
				peer     encap.LID
				self     string
				peerAddr string
			}{
				{"a", 0x10, 0xC000, "10.200.0.1:4793", "10.200.0.2:4793"},
				{"b", 0xC000, 0x10, "10.200.0.2:4793", "10.200.0.1:4793"},
			} {
				c := loadDemo(t, h.host)
				n := "1"
				if h.host == "b" {
					n = "2"
				}
				if c.Node.Name != "host-"+h.host || c.Node.LID != h.lid || c.Node.Listen.String() != h.self {
					t.Errorf("host %s node = %+v", h.host, c.Node)
				}
				if len(c.Peers) != 1 || c.Peers[0].LID != h.peer || c.Peers[0].Addr.String() != h.peerAddr {
					t.Errorf("host %s peers = %+v", h.host, c.Peers)
				}
				wantGroups := []MulticastGroup{{0xF00001, []uint32{0x10, 0xC000}}, {0xF00002, []uint32{0x10, 0xC000}}}
				if !reflect.DeepEqual(c.Multicast, wantGroups) {
					t.Errorf("host %s multicast = %v", h.host, c.Multicast)
				}
				if want := "/run/opavnic/" + prefix + "-" + h.host + ".sock"; c.Control.Socket != want {
					t.Errorf("host %s socket = %q, want %q", h.host, c.Control.Socket, want)
				}
				if len(c.VNICs) != 2 {
					t.Fatalf("host %s: %d VNICs", h.host, len(c.VNICs))
				}
				for i, w := range []struct {
					vesw  encap.VESWID
					pkey  encap.PKey
					mcast uint32
					netns string
					addrs []string
				}{
					{1, 0x8001, 0xF00001, "", []string{"192.168.101." + n + "/24", "fd00:101::" + n + "/64"}},
					{2, 0x8002, 0xF00002, prefix + "-" + h.host + "-blue", []string{"192.168.102." + n + "/24", "fd00:102::" + n + "/64"}},
				} {
					v := c.VNICs[i]
					vw, p := v.Port.VESW, v.Port.Port
					if v.VPort != uint8(i) || vw.VESWID != w.vesw || vw.PKey != w.pkey || vw.McastDLID != w.mcast || vw.EthMTU != 1500 {
						t.Errorf("host %s vnics[%d] vesw = %+v", h.host, i, vw)
					}
					if p.EncapSLID != h.lid.To16B() || p.BaseMAC != encap.MACForLID(h.lid, w.vesw) || p.ConfigState != engine.StateForwarding {
						t.Errorf("host %s vnics[%d] port = %+v", h.host, i, p)
					}
					var addrs []string
					for _, a := range v.Netdev.Addresses {
						addrs = append(addrs, a.String())
					}
					if v.Netdev.IfName != []string{"vnic0", "vnic1"}[i] || v.Netdev.NetNS != w.netns || !reflect.DeepEqual(addrs, w.addrs) {
						t.Errorf("host %s vnics[%d] netdev = %+v", h.host, i, v.Netdev)
					}
				}
			}
		})
	}
}

// TestDemoMACsRoute checks that each demo host's default MAC carries its LID
// where the other host's transmit path looks (docs/linux-compat.md §2.3).
func TestDemoMACsRoute(t *testing.T) {
	a, b := loadDemo(t, "a"), loadDemo(t, "b")
	for i := range a.VNICs {
		if got := encap.DLIDFromMAC(a.VNICs[i].Port.Port.BaseMAC[:]); got != b.Peers[0].LID.To16B() {
			t.Errorf("a.vnics[%d] MAC routes to %#x", i, got)
		}
		if got := encap.DLIDFromMAC(b.VNICs[i].Port.Port.BaseMAC[:]); got != a.Peers[0].LID.To16B() {
			t.Errorf("b.vnics[%d] MAC routes to %#x", i, got)
		}
	}
}

func TestExampleConfig(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "configs", "vnicd.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example writes out each default; the parse must equal that of a
	// config that leaves them all out (apart from the examples of optional
	// lists and the explicit GUID).
	min := mustParse(t, `
node: {name: host-a, lid: 0x10, guid: 0x0211750100000001}
peers: [{lid: 0xC000, address: "10.200.0.2", name: host-b}]
multicast: [{lid: 0xF00001, members: [0x10, 0xC000]}]
vnics:
  - vesw: {id: 1, pkey: 0x8001, mcast_dlid: 0xF00001, default_ports: [{index: 0, dlid: 0xC000}]}
    port:
      addresses: ["192.168.101.1/24", "fd00:101::1/64"]
      mac_table: [{mac: "aa:bb:cc:dd:ee:ff", dlid: 0xC000}]
`)
	if !reflect.DeepEqual(c, min) {
		t.Errorf("example =\n%+v\nwant the defaults\n%+v", c, min)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	files := []string{
		filepath.Join("..", "..", "configs", "vnicd.example.yaml"),
		filepath.Join("..", "..", "configs", "demo", "host-a.yaml"),
		filepath.Join("..", "..", "configs", "demo", "host-b.yaml"),
		filepath.Join("..", "..", "configs", "demo", "managed-host-a.yaml"),
		filepath.Join("..", "..", "configs", "demo", "managed-host-b.yaml"),
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c, noEnv)
		})
	}
	t.Run("every field set", func(t *testing.T) {
		c := mustParse(t, cfgBase+`
vnics:
  - vport: 9
    vesw: {id: 2, pkey: 0x8002, fabric_id: 5, eth_mtu: 9000, mcast_dlid: 0xF00001, rc: {ipv6_udp: 7, default: 1},
           default_ports: [{index: 3, dlid: 0x20}], config_state: drop_all,
           sc: {uc: [1, 2, 3, 4, 5, 6, 7, 8], non_vlan_mc: 9}, vl: {mc: [1, 1, 1, 1, 1, 1, 1, 1], non_vlan_uc: 2}}
    port: {port_num: 77, mac: "12:34:56:78:9a:bc", ifname: "true", netns: "0x10", addresses: ["10.1.1.1/8"],
           mac_table: [{mac: "aa:bb:cc:dd:ee:ff", dlid: 0xF00002}]}
`)
		roundTrip(t, c, noEnv)
	})
	t.Run("managed with a LID and netdevs", func(t *testing.T) {
		c := mustParse(t, `node: {name: m, lid: 0xC000, fabric_manager: "10.0.0.9:4793", fm_lid: 0x20}
netdevs:
  "3": {ifname: pod3, netns: blue, addresses: [10.3.0.1/24, "fd00::1/64"]}
  "0": {}
`)
		roundTrip(t, c, noEnv)
	})
	t.Run("busy poll", func(t *testing.T) {
		for _, in := range []string{"0", "0s", "500us", "500µs", "1ms", "1s", "1.5ms"} {
			c := mustParse(t, "node: {name: a, lid: 1, busy_poll: "+in+"}")
			want, _ := time.ParseDuration(in)
			if c.Node.BusyPoll != want {
				t.Errorf("busy_poll %s = %v, want %v", in, c.Node.BusyPoll, want)
			}
			roundTrip(t, c, noEnv)
		}
	})
	t.Run("queues", func(t *testing.T) {
		for in, want := range map[string]int{"": QueuesAuto, "queues: auto,": QueuesAuto, "queues: 1,": 1, "queues: 2,": 2, "queues: 16,": 16} {
			c := mustParse(t, "node: {name: a, "+in+" lid: 1}")
			if c.Node.Queues != want {
				t.Errorf("%q: queues = %d, want %d", in, c.Node.Queues, want)
			}
			roundTrip(t, c, noEnv)
		}
	})
	t.Run("static with trusted managers", func(t *testing.T) {
		c := mustParse(t, cfgBase+"trusted_managers: [\"10.0.0.9:4793\", \"[fd00::9]:4000\"]\n")
		if len(c.TrustedManagers) != 2 {
			t.Fatalf("trusted managers %v", c.TrustedManagers)
		}
		roundTrip(t, c, noEnv)
	})
	t.Run("dollar text", func(t *testing.T) {
		c := mustParse(t, "node: {name: a, lid: 1}\ncontrol: {socket: \"/run/$${X}/$$${X}/$x/$\"}")
		if c.Control.Socket != "/run/${X}/$${X}/$x/$" {
			t.Fatalf("socket = %q", c.Control.Socket)
		}
		roundTrip(t, c, noEnv)
	})
}

func roundTrip(t *testing.T, c *Config, lookup func(string) (string, bool)) {
	t.Helper()
	text, err := c.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	back, err := loader.Parse(text, lookup)
	if err != nil {
		t.Fatalf("parse of Marshal output: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip changed the config:\n%+v\n%+v\n%s", c, back, text)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestSummary(t *testing.T) {
	s := loadDemo(t, "a").Summary()
	lines := strings.Split(s, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "node host-a lid 0x10") ||
		!strings.Contains(lines[1], "vnic vnic0 vport 0 vesw 1 pkey 0x8001") ||
		!strings.Contains(lines[2], "netns opavnic-demo-a-blue 192.168.102.1/24") {
		t.Errorf("Summary =\n%s", s)
	}
}

func TestSummaryManaged(t *testing.T) {
	c, err := Load("../../configs/demo/managed-host-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(c.Summary(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "node host-a managed by the fabric manager at 10.200.0.3:4793") ||
		lines[1] != "netdev vport 0 vnic0 netns - 192.168.101.1/24 fd00:101::1/64" ||
		!strings.HasPrefix(lines[2], "netdev vport 1 vnic1 netns opavnic-demo-a-blue ") {
		t.Errorf("Summary =\n%s", c.Summary())
	}
}

func TestMaxEthMTU(t *testing.T) {
	// A full-size frame at the largest MTU fills the largest 16B packet.
	if got := encap.VNICPacketLen(engine.MaxEthMTU + vlanEthHLen); got > encap.MaxPacketLen {
		t.Errorf("packet at eth_mtu %d is %d bytes, over %d", engine.MaxEthMTU, got, encap.MaxPacketLen)
	}
	if engine.MaxEthMTU != 16333 {
		t.Errorf("MaxEthMTU = %d, want 16333", engine.MaxEthMTU)
	}
}

// fuzzEnv is a fixed environment for the fuzz target.
func fuzzEnv(k string) (string, bool) {
	if k == "OPAVNIC_RUN" {
		return "fz", true
	}
	return "", false
}

func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"vnicd.example.yaml", "demo/host-a.yaml", "demo/host-b.yaml", "demo/managed-host-a.yaml", "demo/managed-host-b.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "configs", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"node: {name: a, lid: 1}",
		oneVNIC(", rc: {ipv4: 1, ipv6_udp: 7}, sc: {uc: [1, 2, 3, 4, 5, 6, 7, 8]}", `, mac: "02:00:00:00:00:01", addresses: [10.0.0.1/8]`),
		oneVNIC(", default_ports: [{index: 1, dlid: 0xC000}]", `, mac_table: [{mac: "aa:bb:cc:dd:ee:f0", dlid: 0xF00001}]`),
		"node: &n {name: a, lid: 1}\npeers: [{<<: *n, address: 10.0.0.1}]",
		"node:\n  name: ${OPAVNIC_RUN:-x}\n  lid: 0x10\n  lid: 0x11\n",
		"vnics: [{vesw: {id: 1, pkey: 1, rc: {default: *a}}}]",
		"- a\n---\nb",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loader.Parse(data, fuzzEnv)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			return
		}
		roundTrip(t, c, fuzzEnv)
	})
}

// A peer at this node's own concrete listen address used to be taken: the
// directory (which maps node.lid to node.listen) then mapped two LIDs to
// this one HFI, and what was sent to the peer was sent to this node. It is
// refused as two peers at one endpoint are.
func TestParseConfigPeerAtOwnListen(t *testing.T) {
	for name, text := range map[string]string{
		"bare":      "node: {name: a, lid: 2, listen: '10.0.0.2'}\npeers: [{lid: 3, address: '10.0.0.2'}]\n",
		"port":      "node: {name: a, lid: 2, listen: '10.0.0.2:5000'}\npeers: [{lid: 3, address: '10.0.0.2:5000'}]\n",
		"v4-mapped": "node: {name: a, lid: 2, listen: '10.0.0.2'}\npeers: [{lid: 3, address: '[::ffff:10.0.0.2]:4793'}]\n",
	} {
		_, err := Parse([]byte(text))
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != "peers[0].address" || !strings.Contains(ce.Reason, "node.listen") {
			t.Errorf("%s: %v; want an error at peers[0].address naming node.listen", name, err)
		}
	}
	for name, text := range map[string]string{
		"other port":  "node: {name: a, lid: 2, listen: '10.0.0.2:5000'}\npeers: [{lid: 3, address: '10.0.0.2'}]\n",
		"unspecified": "node: {name: a, lid: 2, listen: ':4793'}\npeers: [{lid: 3, address: '10.0.0.2'}]\n",
	} {
		if _, err := Parse([]byte(text)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
func TestNetdevKeyPID(t *testing.T) {
	if NetdevKey("pid:12", "eth0") != NetdevKey("/proc/12/ns/net", "eth0") {
		t.Error("pid:12 and /proc/12/ns/net are different keys")
	}
	if NetdevKey("pid:12", "eth0") == NetdevKey("pid:13", "eth0") {
		t.Error("pid:12 and pid:13 are the same key")
	}
}
