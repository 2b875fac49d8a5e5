package vnicd

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

func TestPickPort(t *testing.T) {
	u8 := func(v uint8) *uint8 { return &v }
	ports := []candidate{
		{vport: 0, vesw: 1},
		{vport: 1, vesw: 2, claimed: true, owner: "cni:n:c1:eth0"},
		{vport: 2, vesw: 3, host: true},
		{vport: 4, vesw: 5},
		{vport: 3, vesw: 5, claimed: true},
	}
	for _, tc := range []struct {
		name      string
		vesw      uint16
		want      *uint8
		notJoined bool // the FM has not configured the node (Mgmt.joined)
		noPorts   bool // the EM has made no port on the node
		vport     uint8
		err       string // substring; "" for success
	}{
		{name: "free port on the vesw", vesw: 1, vport: 0},
		{name: "the free one beside a claimed one", vesw: 5, vport: 4},
		{name: "asked-for free vport", vesw: 1, want: u8(0), vport: 0},
		{name: "claimed", vesw: 2, err: "no free port: vesw 2 has 1 port on node n1: vport 1, claimed by cni:n:c1:eth0 (a node has one port per vesw"},
		{name: "kept for the host", vesw: 3, err: "no free port: vesw 3 has 1 port on node n1: vport 2, kept for the host by vnicd's config (netdevs)"},
		{name: "no port on the vesw", vesw: 7, err: "no free port: vesw 7 has no port on node n1: the EM made none (the fabric config has no member of vesw 7 on this node)"},
		{name: "not configured by the FM yet", vesw: 7, notJoined: true, noPorts: true,
			err: "no free port: vesw 7 has no port on node n1: this node has not been configured by the fabric manager yet (not joined, or the FM is unreachable); try again"},
		{name: "FM unreachable, other ports made", vesw: 7, notJoined: true,
			err: "no free port: vesw 7 has no port on node n1: this node has not been configured by the fabric manager yet (not joined, or the FM is unreachable); try again"},
		{name: "joined, no port made yet", vesw: 7, noPorts: true,
			err: "no free port: vesw 7 has no port on node n1: the EM has made no port on this node yet (it has not configured the node yet: try again; or the fabric config has no member on this node)"},
		{name: "not joined, a free port on the vesw", vesw: 1, notJoined: true, vport: 0},
		{name: "asked-for vport on another vesw", vesw: 1, want: u8(4), err: "vport: vport 4 is on vesw 5, not vesw 1"},
		{name: "asked-for vport missing", vesw: 1, want: u8(9), err: "vport: node n1 has no vport 9"},
		{name: "asked-for vport claimed", vesw: 5, want: u8(3), err: "no free port: vport 3, claimed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := ports
			if tc.noPorts {
				ps = nil
			}
			got, err := pickPort("n1", tc.vesw, tc.want, ps, !tc.notJoined)
			switch {
			case tc.err == "" && (err != nil || got != tc.vport):
				t.Errorf("got vport %d, %v; want %d", got, err, tc.vport)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %d, %v; want an error with %q", got, err, tc.err)
			case tc.err != "" && strings.HasPrefix(tc.err, "no free port") && !errors.Is(err, ctl.ErrNoFreePort):
				t.Errorf("%v does not wrap ErrNoFreePort", err)
			}
		})
	}
	// Two ports on one vesw cannot happen on one node; the message still
	// counts them.
	_, err := pickPort("n1", 5, nil, []candidate{{vport: 3, vesw: 5, claimed: true, owner: "a"}, {vport: 4, vesw: 5, host: true}}, true)
	if err == nil || !strings.Contains(err.Error(), "vesw 5 has 2 ports on node n1: vport 3, claimed by a; vport 4, kept for the host") {
		t.Errorf("two ports: %v", err)
	}
}

func TestClaimFromArgs(t *testing.T) {
	r, err := config.ClaimFromArgs([]byte(`{"vesw": 1, "pkey": "0x8001", "eth_mtu": 1400, "mcast_dlid": "0xF00001", "ifname": "eth0",
		"netns": "/var/run/netns/c1", "addresses": ["10.1.0.5/24"], "owner": "cni:red:c1:eth0", "vport": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.VESW != 1 || *r.PKey != 0x8001 || *r.EthMTU != 1400 || *r.McastDLID != 0xF00001 || *r.VPort != 3 ||
		r.Netdev.IfName != "eth0" || r.Netdev.NetNS != "/var/run/netns/c1" || len(r.Netdev.Addresses) != 1 || r.Owner != "cni:red:c1:eth0" {
		t.Errorf("request %+v", r)
	}
	r, err = config.ClaimFromArgs([]byte(`{"vesw": "0x2", "netns": "pid:12"}`))
	if err != nil || r.VESW != 2 || r.PKey != nil || r.EthMTU != nil || r.McastDLID != nil || r.VPort != nil || r.Netdev.IfName != "" {
		t.Errorf("minimal request %+v, %v", r, err)
	}
	for _, tc := range []struct{ args, err string }{
		{`{"netns": "c1"}`, "vesw: required"},
		{`{"vesw": 4096, "netns": "c1"}`, "vesw: 4096 is out of range 1..4095"},
		{`{"vesw": 1}`, "netns: required on a managed node"},
		{`{"vesw": 1, "netns": "c1", "mac": "02:00:00:00:00:01"}`, "mac: the EM sets the MACs"},
		{`{"vesw": 1, "netns": "c1", "config_state": "drop_all"}`, "config_state: the EM sets"},
		{`{"vesw": 1, "netns": "a/b"}`, "netns:"},
		{`{"vesw": 1, "netns": "c1", "ifname": "a:b"}`, "ifname:"},
		{`{"vesw": 1, "netns": "c1", "addresses": ["10.1.0.5"]}`, "addresses[0]:"},
		{`{"vesw": 1, "netns": "c1", "mcast_dlid": "0x10"}`, "mcast_dlid:"},
		{`{"vesw": 1, "netns": "c1", "bogus": 1}`, "bogus: unknown field"},
	} {
		if _, err := config.ClaimFromArgs([]byte(tc.args)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want %q", tc.args, err, tc.err)
		}
	}
}

// TestStatePaths: the state files sit beside the control socket, named
// after it; an abstract socket has none.
func TestStatePaths(t *testing.T) {
	for _, tc := range []struct{ socket, claims, runtime string }{
		{"/run/opavnic/vnicd.sock", "/run/opavnic/vnicd.claims.json", "/run/opavnic/vnicd.runtime.json"},
		{"/run/opavnic/vnicd-a", "/run/opavnic/vnicd-a.claims.json", "/run/opavnic/vnicd-a.runtime.json"},
		{"@vnicd", "", ""},
		{"", "", ""},
		{"/tmp/x/host-b.sock.sock2", "/tmp/x/host-b.sock.sock2.claims.json", "/tmp/x/host-b.sock.sock2.runtime.json"},
	} {
		if c, r := ClaimsPath(tc.socket), RuntimePath(tc.socket); c != tc.claims || r != tc.runtime {
			t.Errorf("%q: ClaimsPath %q, RuntimePath %q; want %q, %q", tc.socket, c, r, tc.claims, tc.runtime)
		}
	}
}

// TestClaimsStateFile writes claims and reads them back as a restarted
// vnicd does; the file is replaced whole, and a broken one is an error.
func TestClaimsStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vnicd.claims.json")
	tab := newClaimTable(path, "n1")
	if cs, err := loadClaims(path); err != nil || cs != nil {
		t.Fatalf("no file: %v, %v", cs, err)
	}
	a := ctl.Claim{VPort: 0, VESW: 1, Owner: "cni:red:c1:eth0", NetNS: "/var/run/netns/c1", IfName: "eth0", Home: "vnic0", NSDev: 4, NSIno: 4026532000}
	b := ctl.Claim{VPort: 3, VESW: 2, NetNS: "pid:77", IfName: "net1", Home: "vnic3", Addresses: []string{"10.2.0.1/24"}}
	tab.put(b, false)
	tab.put(a, true)
	if err := tab.save(); err != nil {
		t.Fatal(err)
	}
	cs, err := loadClaims(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cs, []ctl.Claim{a, b}) {
		t.Errorf("read back %+v, want %+v", cs, []ctl.Claim{a, b})
	}
	if l := tab.list(); l[0].State != ctl.ClaimPending || l[1].State != ctl.ClaimActive {
		t.Errorf("states %+v", l)
	}
	tab.drop(0)
	if tab.dropPending(3) {
		t.Error("dropPending dropped an active claim")
	}
	if err := tab.save(); err != nil {
		t.Fatal(err)
	}
	if cs, _ := loadClaims(path); len(cs) != 1 || cs[0].VPort != 3 {
		t.Errorf("after drop: %+v", cs)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := os.WriteFile(path, []byte(`{"version": 9, "claims": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadClaims(path); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("version 9: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"version": 1, "claims": [{"vport": 1, "colour": "red"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadClaims(path); err == nil {
		t.Error("an unknown field was accepted")
	}
	// takePending hands a pending claim over once.
	tab.put(a, true)
	if c, ok := tab.takePending(0); !ok || c.Owner != a.Owner {
		t.Errorf("takePending: %+v, %v", c, ok)
	}
	if _, ok := tab.takePending(0); ok {
		t.Error("a claim was taken twice")
	}
	if tab.dropPending(0) {
		t.Error("dropPending dropped a taken claim")
	}
}

// FuzzParseClaims: a claims state file of any content (a crash mid-write is
// ruled out by the rename, but a disk or a person can still corrupt it) is
// refused with an error or read into claims that save and read back.
func FuzzParseClaims(f *testing.F) {
	fuzzStateFile(f, []string{
		`{"version": 1, "node": "n1", "claims": [{"vport": 3, "vesw": 2, "owner": "cni:red:c1:eth0", "netns": "pid:77", "ifname": "net1", "home": "vnic3", "addresses": ["10.2.0.1/24"], "ns_dev": 4, "ns_ino": 4026532000}]}`,
		`{"version": 2}`,
		`{"version": 1, "claims": [{"vport": 300}]}`,
		`{"version": 1, "bogus": 1}`,
		`{"version": 1}{"version": 1}`,
		`[`,
	}, parseClaims, func(path string, cs []ctl.Claim) error {
		tab := newClaimTable(path, "n1")
		for _, c := range cs {
			tab.put(c, false)
		}
		return tab.save()
	}, loadClaims)
}

// fuzzStateFile fuzzes the reading of a state file (parse) from seeds: what
// parses saves (save) and reads back (load), with no more entries.
func fuzzStateFile[T any](f *testing.F, seeds []string, parse func(b []byte, path string) ([]T, error),
	save func(path string, es []T) error, load func(path string) ([]T, error)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := parse(b, "fuzz")
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "state.json")
		if err := save(path, es); err != nil {
			t.Fatal(err)
		}
		back, err := load(path)
		if err != nil {
			t.Fatalf("%q: saved entries do not read back: %v", b, err)
		}
		if len(back) > len(es) {
			t.Fatalf("%q: %d entries read back from %d", b, len(back), len(es))
		}
	})
}

// TestRuntimeStateFile writes runtime VNICs and reads them back; a broken
// file is an error.
func TestRuntimeStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vnicd.runtime.json")
	if es, err := loadRuntime(path); err != nil || es != nil {
		t.Fatalf("no file: %v, %v", es, err)
	}
	a := RuntimeEntry{VPort: 3, Args: []byte(`{"vesw":1,"pkey":"0x8001","netns":"c1"}`), Owner: "cni:red:c1:eth0", NetNS: "c1", IfName: "eth0", NSDev: 4, NSIno: 4026532000}
	b := RuntimeEntry{VPort: 1, Args: []byte(`{"vesw":2,"pkey":"0x8002"}`), IfName: "vnic1"}
	r := &runtimeVNICs{file: runtimeState(path), node: "n1"}
	r.set(a.VPort, &runtimeVNIC{entry: a})
	r.set(b.VPort, &runtimeVNIC{entry: b})
	if err := r.save(); err != nil {
		t.Fatal(err)
	}
	es, err := loadRuntime(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(es, []RuntimeEntry{b, a}) {
		t.Errorf("read back %+v, want %+v", es, []RuntimeEntry{b, a})
	}
	for _, bad := range []string{`{"version": 2, "vnics": []}`, `{"version": 1, "vnics": [{"vport": 1, "colour": "red"}]}`, `{"version": 1, "vnics": [{"vport": 256}]}`, `nonsense`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadRuntime(path); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzParseRuntime: a runtime VNICs state file of any content is refused
// with an error or read into entries that save and read back.
func FuzzParseRuntime(f *testing.F) {
	fuzzStateFile(f, []string{
		`{"version": 1, "node": "n1", "vnics": [{"vport": 3, "args": {"vesw": 1, "pkey": "0x8001", "netns": "c1"}, "owner": "cni:red:c1:eth0", "netns": "c1", "ifname": "eth0", "ns_dev": 4, "ns_ino": 4026532000}]}`,
		`{"version": 2}`,
		`{"version": 1, "vnics": [{"vport": 300}]}`,
		`{"version": 1, "vnics": [{"vport": 1, "args": null}]}`,
		`{"version": 1, "bogus": 1}`,
		`[`,
	}, parseRuntime, func(path string, es []RuntimeEntry) error {
		r := &runtimeVNICs{file: runtimeState(path), node: "n1"}
		for _, e := range es {
			r.set(e.VPort, &runtimeVNIC{entry: e})
		}
		return r.save()
	}, loadRuntime)
}
