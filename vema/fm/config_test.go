package fm

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

func TestParseConfigDefaults(t *testing.T) {
	c := mustConfig(t, "fm: {name: x}\nvesws: [{id: 3, pkey: 0x8003, members: []}]\n")
	if c.FM.LID != 1 || c.FM.Listen.String() != "[::]:4793" || c.FM.SubnetPrefix != 0xFE80000000000000 ||
		c.FM.ControlSocket != "/run/opavnic/opafm-x.sock" || c.FM.GUID != uint64(encap.GUIDFromName("x")) {
		t.Errorf("fm defaults: %+v", c.FM)
	}
	if c.Pool != (LIDPool{DefaultPoolStart, DefaultPoolEnd}) {
		t.Errorf("pool default %+v", c.Pool)
	}
	v := c.VESWs[0]
	if v.Name != "vesw3" || v.EthMTU != 1500 || !v.AdminUp || v.McastDLID != 0 {
		t.Errorf("vesw defaults: %+v", v)
	}
}

// An empty string in a string field takes its default, as in vnicd's
// config (configs/README.md, "How a file is read"): a template's
// ${VAR:-} leaves the field to the default.
func TestParseConfigEmptyStringDefaults(t *testing.T) {
	c := mustConfig(t, `fm: {name: x, listen: "", subnet_prefix: "", control_socket: ""}
nodes: [{name: a}]
vesws: [{id: 3, pkey: 0x8003, admin_state: "", members: [{node: a, vport: 0, mac: ""}]}]
`)
	if c.FM.Listen.String() != "[::]:4793" || c.FM.SubnetPrefix != 0xFE80000000000000 || c.FM.ControlSocket != "/run/opavnic/opafm-x.sock" {
		t.Errorf("fm with empty strings: %+v", c.FM)
	}
	if v := c.VESWs[0]; !v.AdminUp || v.Members[0].MAC != ([6]byte{}) {
		t.Errorf("vesw with empty strings: admin up %v, member mac %v", v.AdminUp, v.Members[0].MAC)
	}
}

func TestShippedConfigsParse(t *testing.T) {
	for _, p := range []string{"../../configs/fabric.example.yaml", "../../configs/demo/fabric.yaml"} {
		c, err := LoadConfig(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(c.VESWs) != 2 {
			t.Errorf("%s: %d vesws", p, len(c.VESWs))
		}
	}
	c, err := LoadConfig("../../configs/demo/fabric.yaml")
	if err == nil {
		if n, _ := c.Node("host-a"); n.LID != 0x10 || c.Pool.Start != 0xC000 || c.VESWs[1].McastDLID != 0xF00002 {
			t.Errorf("demo fabric: host-a %+v pool %+v", n, c.Pool)
		}
	}
}

func TestSummary(t *testing.T) {
	c, err := LoadConfig("../../configs/demo/fabric.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fm demo lid 0x1 guid 0x%016X listen 10.200.0.3:4793 subnet_prefix fe80:: control /run/opavnic/opavnic-demo-fm.sock",
		"lid_pool 0xC000..0xC0FF",
		"node host-a lid 0x10 guid by name",
		"node host-b lid pool guid by name",
		"vesw 1 red pkey 0x8001 mtu 1500 mcast 0xF00001 up members host-a/0 host-b/0",
		"vesw 2 blue pkey 0x8002 mtu 1500 mcast 0xF00002 up members host-a/1 host-b/1",
	}
	want[0] = fmt.Sprintf(want[0], uint64(encap.GUIDFromName("demo")))
	if got := c.Summary(); got != strings.Join(want, "\n") {
		t.Errorf("Summary =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// A value may be a YAML alias of another.
func TestParseConfigAlias(t *testing.T) {
	c := mustConfig(t, "fm: {name: x}\nnodes: [{name: a}]\nvesws: [{id: 1, pkey: &p 0x8001, eth_mtu: &m 9000}, {id: 2, pkey: *p, eth_mtu: *m}]\n")
	if v := c.VESWs[1]; v.PKey != 0x8001 || v.EthMTU != 9000 {
		t.Errorf("vesw 2: pkey %v, eth_mtu %d; want the aliased 0x8001, 9000", v.PKey, v.EthMTU)
	}
}

// The subnet prefix takes the forms vnicd's node.subnet_prefix takes.
func TestParseConfigSubnetPrefix(t *testing.T) {
	for _, tc := range []struct {
		text string
		want uint64
	}{
		{"fe80::", 0xFE80000000000000},
		{"fe80::/64", 0xFE80000000000000},
		{"fec0:0:0:1::", 0xFEC0000000000001},
		{"fec0:0:0:1::/64", 0xFEC0000000000001},
	} {
		c := mustConfig(t, "fm: {name: x, subnet_prefix: '"+tc.text+"'}\n")
		if c.FM.SubnetPrefix != tc.want {
			t.Errorf("%s: prefix %#x, want %#x", tc.text, c.FM.SubnetPrefix, tc.want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	const base = "fm: {name: x}\nnodes: [{name: a}, {name: b, lid: 0x20}]\n"
	for _, tc := range []struct {
		name, text, field, reason string
	}{
		{"unknown top field", "fm: {name: x}\nbogus: 1\n", "bogus", "unknown field"},
		{"unknown fm field", "fm: {name: x, lidd: 3}\n", "fm.lidd", "unknown field"},
		{"missing fm name", "fm: {lid: 2}\n", "fm.name", "required"},
		// Names go into logs, NodeDescription matching and the socket path.
		{"fm name escape", "fm: {name: \"x\\e[31m\"}\n", "fm.name", "control character"},
		{"node name CR", "fm: {name: x}\nnodes: [{name: \"a\\rb\"}]\n", "nodes[0].name", "control character"},
		{"socket control", "fm: {name: x, control_socket: \"/run/a\\x01.sock\"}\n", "fm.control_socket", "control character"},
		{"bad listen", "fm: {name: x, listen: 'nope:1:2'}\n", "fm.listen", "ADDRESS"},
		{"listen zoned link-local", "fm: {name: x, listen: '[fe80::1%eth0]:4793'}\n", "fm.listen", "use a global or ULA address"},
		{"listen link-local", "fm: {name: x, listen: 'fe80::1'}\n", "fm.listen", "link-local or zoned"},
		// Go bound it as 0.0.0.0 while directory() pushed the group as the
		// FM's endpoint.
		{"listen multicast", "fm: {name: x, listen: '224.0.0.7:4793'}\n", "fm.listen", "multicast"},
		{"listen multicast v6", "fm: {name: x, listen: '[ff02::1]:4793'}\n", "fm.listen", "multicast"},
		{"listen IPv6 that reads as address:port", "fm: {name: x, listen: 'fd99::9:4793'}\n", "fm.listen", "write [fd99::9]:4793 for that port, or [fd99::9:4793]"},
		{"bad prefix", "fm: {name: x, subnet_prefix: 'fe80::1'}\n", "fm.subnet_prefix", "interface ID half"},
		{"vesws a mapping", "fm: {name: x}\nvesws: {id: 1}\n", "vesws", "must be a list, not a mapping"},
		{"fm a string", "fm: x\n", "fm", "must be a mapping"},
		{"file a list", "- a\n", "", "the file must be a mapping (fm, lid_pool, nodes, vesws)"},
		{"lid leading 0", "fm: {name: x, lid: 010}\n", "fm.lid", "leading 0 is ambiguous"},
		{"lid underscore", "fm: {name: x, lid: 1_0}\n", "fm.lid", "not an integer"},
		{"lid negative", "fm: {name: x, lid: -1}\n", "fm.lid", "negative"},
		{"lid a list", "fm: {name: x, lid: [1]}\n", "fm.lid", "must be a single value, not a list"},
		{"fm twice", "fm: {name: x}\nfm: {name: y}\n", "fm", "given twice (first at line 1)"},
		{"rc key twice", base + "vesws: [{id: 1, pkey: 1, rc: {ipv4: 1, ipv4: 2}}]\n", "vesws[0].rc.ipv4", "given twice"},
		{"sc null entry", base + "vesws: [{id: 1, pkey: 1, sc: {uc: [0, ~, 0, 0, 0, 0, 0, 0]}}]\n", "vesws[0].sc.uc[1]", "required"},
		{"prefix length", "fm: {name: x, subnet_prefix: 'fe80::/48'}\n", "fm.subnet_prefix", "must be 64"},
		{"prefix zone", "fm: {name: x, subnet_prefix: 'fe80::%eth0'}\n", "fm.subnet_prefix", "not an IPv6 prefix"},
		{"prefix IPv4", "fm: {name: x, subnet_prefix: '10.0.0.0'}\n", "fm.subnet_prefix", "not an IPv6 prefix"},
		{"relative socket", "fm: {name: x, control_socket: a.sock}\n", "fm.control_socket", "absolute"},
		{"bare @ socket", "fm: {name: x, control_socket: '@'}\n", "fm.control_socket", "absolute"},
		{"pool reversed", "fm: {name: x}\nlid_pool: {start: 0xC100, end: 0xC000}\n", "lid_pool.end", "below"},
		{"pool multicast", "fm: {name: x}\nlid_pool: {start: 0xF00000}\n", "lid_pool.start", "out of range"},
		{"duplicate node", "fm: {name: x}\nnodes: [{name: a}, {name: a}]\n", "nodes[1].name", "twice"},
		{"node lid = fm lid", "fm: {name: x}\nnodes: [{name: a, lid: 1}]\n", "nodes[0].lid", "FM"},
		{"duplicate guid", "fm: {name: x}\nnodes: [{name: a, guid: 5}, {name: b, guid: 5}]\n", "nodes[1].guid", `also node "a"'s`},
		// Its GID would name two ports, and the SA answer the FM's LID for it.
		{"node guid = fm guid", "fm: {name: x, guid: 7}\nnodes: [{name: a, guid: 7}]\n", "nodes[0].guid", "the FM (fm.guid)"},
		{"duplicate lid", "fm: {name: x}\nnodes: [{name: a, lid: 0x20}, {name: b, lid: 0x20}]\n", "nodes[1].lid", "already"},
		{"vesw id 0", base + "vesws: [{id: 0, pkey: 0x8001}]\n", "vesws[0].id", "out of range"},
		{"vesw id big", base + "vesws: [{id: 4096, pkey: 0x8001}]\n", "vesws[0].id", "out of range"},
		{"vesw no pkey", base + "vesws: [{id: 1}]\n", "vesws[0].pkey", "required"},
		{"vesw pkey zero", base + "vesws: [{id: 1, pkey: 0x8000}]\n", "vesws[0].pkey", "no partition"},
		{"vesw twice", base + "vesws: [{id: 1, pkey: 1}, {id: 1, pkey: 2}]\n", "vesws[1].id", "twice"},
		{"mcast unicast", base + "vesws: [{id: 1, pkey: 1, mcast_dlid: 0xC000}]\n", "vesws[0].mcast_dlid", "multicast"},
		{"mcast collective", base + "vesws: [{id: 1, pkey: 1, mcast_dlid: 0xF80001}]\n", "vesws[0].mcast_dlid", "collective"},
		{"mcast permissive", base + "vesws: [{id: 1, pkey: 1, mcast_dlid: 0xFFFFFF}]\n", "vesws[0].mcast_dlid", "not a 16B multicast"},
		// As vnicd's config says it: the 16B form is what to write.
		{"mcast 32-bit", base + "vesws: [{id: 1, pkey: 1, mcast_dlid: 0xF0000001}]\n", "vesws[0].mcast_dlid", "32-bit multicast LID; write its 16B form 0xF00001"},
		{"mcast not a number", base + "vesws: [{id: 1, pkey: 1, mcast_dlid: red}]\n", "vesws[0].mcast_dlid", ""},
		{"vport in two vesws", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0}]}, {id: 2, pkey: 2, members: [{node: b, vport: 0}, {node: a, vport: 0}]}]\n",
			"vesws[1].members[1]", "already a member of vesw 1"},
		{"mtu small", base + "vesws: [{id: 1, pkey: 1, eth_mtu: 10}]\n", "vesws[0].eth_mtu", "out of range"},
		{"member unknown node", base + "vesws: [{id: 1, pkey: 1, members: [{node: z, vport: 0}]}]\n", "vesws[0].members[0].node", "not listed"},
		{"member no vport", base + "vesws: [{id: 1, pkey: 1, members: [{node: a}]}]\n", "vesws[0].members[0].vport", "required"},
		{"member twice", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0}, {node: a, vport: 0}]}]\n", "vesws[0].members[1]", "twice"},
		{"member mac multicast", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0, mac: '01:00:00:00:00:01'}]}]\n", "vesws[0].members[0].mac", "multicast"},
		{"member mac shared", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0, mac: '02:00:00:00:00:01'}, {node: b, vport: 0, mac: '02:00:00:00:00:01'}]}]\n",
			"vesws[0].members[1].mac", "already members[0]'s mac"},
		{"member bad ip", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0, ip: [nope]}]}]\n", "vesws[0].members[0].ip[0]", "not an address"},
		{"member unknown field", base + "vesws: [{id: 1, pkey: 1, members: [{node: a, vport: 0, vlan: 3}]}]\n", "vesws[0].members[0].vlan", "unknown field"},
		{"default port both", base + "vesws: [{id: 1, pkey: 1, default_ports: [{index: 0, dlid: 5, node: a}]}]\n", "vesws[0].default_ports[0]", "not both"},
		{"default port node", base + "vesws: [{id: 1, pkey: 1, default_ports: [{index: 0, node: q}]}]\n", "vesws[0].default_ports[0].node", "not listed"},
		{"default port index", base + "vesws: [{id: 1, pkey: 1, default_ports: [{index: 16, dlid: 5}]}]\n", "vesws[0].default_ports[0].index", "out of range"},
		{"rc bits", base + "vesws: [{id: 1, pkey: 1, rc: 0x8}]\n", "vesws[0].rc", "not part of a 3-bit field"},
		{"rc key", base + "vesws: [{id: 1, pkey: 1, rc: {ipx: 1}}]\n", "vesws[0].rc.ipx", "unknown"},
		{"sc length", base + "vesws: [{id: 1, pkey: 1, sc: {uc: [1, 2]}}]\n", "vesws[0].sc.uc", "8 values"},
		{"sc value", base + "vesws: [{id: 1, pkey: 1, sc: {non_vlan_uc: 32}}]\n", "vesws[0].sc.non_vlan_uc", "out of range"},
		{"admin state", base + "vesws: [{id: 1, pkey: 1, admin_state: sideways}]\n", "vesws[0].admin_state", "up or down"},
		{"env unset", "fm: {name: ${OPAFM_TEST_SURELY_UNSET}}\n", "", "not set"},
		{"two documents", "fm: {name: x}\n---\nfm: {name: y}\n", "", "second YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.text))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Error(), tc.reason) || !strings.HasPrefix(ce.Error(), "fabric config: ") {
				t.Errorf("got %q (field %q), want field %q and %q after \"fabric config: \"", ce.Error(), ce.Field, tc.field, tc.reason)
			}
		})
	}
}

func TestParseConfigEnv(t *testing.T) {
	os.Setenv("OPAFM_TEST_LID", "0x5")
	defer os.Unsetenv("OPAFM_TEST_LID")
	c := mustConfig(t, "fm: {name: '${OPAFM_TEST_NAME:-dflt}', lid: ${OPAFM_TEST_LID}}\n")
	if c.FM.Name != "dflt" || c.FM.LID != 5 {
		t.Errorf("fm = %+v", c.FM)
	}
}

// FuzzParseConfig: any text either parses into a config whose invariants
// hold or fails with a *ConfigError; nothing panics.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(testFabric))
	for _, p := range []string{"../../configs/fabric.example.yaml", "../../configs/demo/fabric.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("fm: {name: x}\nvesws: [{id: 1, pkey: 1, rc: {ipv4: 3}, sc: {uc: [1,2,3,4,5,6,7,8]}}]\n"))
	f.Add([]byte("fm: {name: ${A:-b}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loader.Parse(data, func(string) (string, bool) { return "", false })
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		if c.FM.Name == "" || c.FM.LID == 0 || c.Pool.Start > c.Pool.End {
			t.Fatalf("accepted a config that breaks invariants: %+v", c.FM)
		}
		for _, v := range c.VESWs {
			if !v.ID.IsValid() || !v.PKey.IsValid() {
				t.Fatalf("accepted vesw %+v", v)
			}
			for _, m := range v.Members {
				if _, ok := c.Node(m.Node); !ok {
					t.Fatalf("member of unknown node %q accepted", m.Node)
				}
			}
		}
	})
}

// configs/README.md's fm.control_socket may be @name, an abstract socket
// (which has no MAC file beside it); the loader used to refuse it as not an
// absolute path.
func TestParseConfigAbstractControlSocket(t *testing.T) {
	cfg, err := ParseConfig([]byte("fm: {name: x, control_socket: '@opafm-x'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FM.ControlSocket != "@opafm-x" || MACFilePath(cfg.FM.ControlSocket) != "" {
		t.Errorf("control socket %q, MAC file %q", cfg.FM.ControlSocket, MACFilePath(cfg.FM.ControlSocket))
	}
}

// A fixed MAC may repeat across vesws: each is its own Ethernet segment
// with its own MAC table.
func TestConfigSameMACTwoVESWs(t *testing.T) {
	_, err := ParseConfig([]byte("fm: {name: x}\nnodes: [{name: a}, {name: b}]\nvesws:\n" +
		"  - {id: 1, pkey: 1, members: [{node: a, vport: 0, mac: '02:00:00:00:00:01'}]}\n" +
		"  - {id: 2, pkey: 2, members: [{node: b, vport: 0, mac: '02:00:00:00:00:01'}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
}
