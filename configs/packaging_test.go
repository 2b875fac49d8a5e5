// Package configs holds tests of the deployment files beside it: every
// Kubernetes manifest decodes, the configs they carry load, and the systemd
// units have what vnicd and opafm need.
package configs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd/config"
)

// manifests decodes every document of every YAML file under k8s/.
func manifests(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in configs/k8s: %v", err)
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			if doc == nil {
				continue
			}
			out[f] = append(out[f], doc)
		}
	}
	return out
}

// get walks m along keys (map keys, or list indexes as ints).
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestK8sManifests(t *testing.T) {
	kinds := map[string]map[string]any{}
	for f, docs := range manifests(t) {
		for i, d := range docs {
			kind, _ := d["kind"].(string)
			name, _ := get(d, "metadata", "name").(string)
			if d["apiVersion"] == nil || kind == "" || name == "" {
				t.Errorf("%s: document %d lacks apiVersion, kind or metadata.name", f, i)
				continue
			}
			if kind != "Namespace" && get(d, "metadata", "namespace") != "opavnic" {
				t.Errorf("%s: %s/%s is not in namespace opavnic", f, kind, name)
			}
			kinds[kind+"/"+name] = d
		}
	}
	for _, want := range []string{"Namespace/opavnic", "DaemonSet/vnicd", "ConfigMap/vnicd-config", "ConfigMap/vnic-cni-config",
		"Deployment/opafm", "Service/opafm", "ConfigMap/opafm-config", "NetworkAttachmentDefinition/opavnic"} {
		if kinds[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	ds := kinds["DaemonSet/vnicd"]
	spec := get(ds, "spec", "template", "spec")
	if get(spec, "hostNetwork") != true {
		t.Error("vnicd DaemonSet: not hostNetwork")
	}
	caps, _ := get(spec, "containers", 0, "securityContext", "capabilities", "add").([]any)
	if !contains(caps, "NET_ADMIN") {
		t.Errorf("vnicd container lacks NET_ADMIN: %v", caps)
	}
	paths := map[string]bool{}
	vols, _ := get(spec, "volumes").([]any)
	for _, v := range vols {
		if p, ok := get(v, "hostPath", "path").(string); ok {
			paths[p] = true
		}
	}
	for _, p := range []string{"/dev/net/tun", "/var/run/netns", "/run/opavnic", "/opt/cni/bin", "/etc/cni/multus/net.d"} {
		if !paths[p] {
			t.Errorf("vnicd DaemonSet does not mount host %s", p)
		}
	}
	if get(spec, "initContainers", 0, "name") != "install-cni" {
		t.Error("vnicd DaemonSet has no install-cni init container")
	}
	if sel := get(kinds["Service/opafm"], "spec", "selector", "app.kubernetes.io/name"); sel != get(kinds["Deployment/opafm"], "spec", "template", "metadata", "labels", "app.kubernetes.io/name") {
		t.Errorf("opafm Service selector %v does not match the Deployment's pods", sel)
	}

	// The configs the ConfigMaps carry load, with the downward-API variables.
	t.Setenv("NODE_NAME", "node-1")
	t.Setenv("HOST_IP", "192.0.2.1")
	t.Setenv("OPAFM_ADDRESS", "192.0.2.10:4794")
	vc, err := config.Parse([]byte(get(kinds["ConfigMap/vnicd-config"], "data", "vnicd.yaml").(string)))
	if err != nil {
		t.Errorf("vnicd-config: %v", err)
	} else if vc.Node.Name != "node-1" || !vc.Node.Managed() {
		t.Errorf("vnicd-config: node %q managed %v", vc.Node.Name, vc.Node.Managed())
	}
	fabric, err := fm.ParseConfig([]byte(get(kinds["ConfigMap/opafm-config"], "data", "fabric.yaml").(string)))
	if err != nil {
		t.Fatalf("opafm-config: %v", err)
	}
	if len(vc.Netdevs) != 0 || len(vc.VNICs) != 0 {
		t.Error("vnicd-config keeps ports for the node: pods could not claim them")
	}
	// The conflist and ranges in the ConfigMap are the files beside.
	cm := kinds["ConfigMap/vnic-cni-config"]
	var inMap, inFile any
	if err := json.Unmarshal([]byte(get(cm, "data", "opavnic.conflist").(string)), &inMap); err != nil {
		t.Errorf("vnic-cni-config conflist: %v", err)
	}
	data, err := os.ReadFile("k8s/cni/opavnic.conflist")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &inFile); err != nil {
		t.Errorf("k8s/cni/opavnic.conflist: %v", err)
	}
	if !reflect.DeepEqual(inMap, inFile) {
		t.Error("the conflist in vnic-cni-config differs from k8s/cni/opavnic.conflist")
	}
	ranges, err := os.ReadFile("k8s/cni/ranges")
	if err != nil {
		t.Fatal(err)
	}
	if get(cm, "data", "ranges") != string(ranges) {
		t.Error("the ranges in vnic-cni-config differ from k8s/cni/ranges")
	}
	checkNetwork(t, string(data), string(ranges), fabric, get(kinds["NetworkAttachmentDefinition/opavnic"], "metadata", "name"))
}

// checkNetwork renders the conflist for every node of ranges, as the
// DaemonSet's install-cni does, and checks that it is a CNI network list of
// vnic-cni named as the NetworkAttachmentDefinition, that each node is a
// member of the network's vesw in the fabric config, and that the ranges lie
// in the subnet without overlapping.
func checkNetwork(t *testing.T, conflist, ranges string, fabric *fm.Config, nadName any) {
	t.Helper()
	var seen [][2]netip.Addr
	n := 0
	for _, line := range strings.Split(ranges, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n++
		if len(f) != 3 {
			t.Errorf("ranges: %q is not: node rangeStart rangeEnd", line)
			continue
		}
		text := strings.NewReplacer("@RANGE_START@", f[1], "@RANGE_END@", f[2]).Replace(conflist)
		l, err := libcni.ConfListFromBytes([]byte(text))
		if err != nil {
			t.Errorf("conflist for %s: %v", f[0], err)
			continue
		}
		if l.Name != nadName || len(l.Plugins) != 1 || l.Plugins[0].Network.Type != "vnic-cni" {
			t.Errorf("conflist for %s: name %q (the NetworkAttachmentDefinition is %v), plugins %+v", f[0], l.Name, nadName, l.Plugins)
			continue
		}
		var p struct {
			VESW float64 `json:"vesw"`
			IPAM struct {
				Ranges [][]struct{ Subnet, RangeStart, RangeEnd string }
			} `json:"ipam"`
		}
		if err := json.Unmarshal(l.Plugins[0].Bytes, &p); err != nil || len(p.IPAM.Ranges) != 1 || len(p.IPAM.Ranges[0]) != 1 {
			t.Errorf("conflist for %s: %+v, %v", f[0], p, err)
			continue
		}
		r := p.IPAM.Ranges[0][0]
		sub, err1 := netip.ParsePrefix(r.Subnet)
		lo, err2 := netip.ParseAddr(r.RangeStart)
		hi, err3 := netip.ParseAddr(r.RangeEnd)
		if err := errors.Join(err1, err2, err3); err != nil || !sub.Contains(lo) || !sub.Contains(hi) || hi.Less(lo) {
			t.Errorf("range of %s: %+v (%v)", f[0], r, err)
			continue
		}
		for _, o := range seen {
			if !o[1].Less(lo) && !hi.Less(o[0]) {
				t.Errorf("range of %s overlaps another node's (%v..%v)", f[0], o[0], o[1])
			}
		}
		seen = append(seen, [2]netip.Addr{lo, hi})
		member := false
		for _, v := range fabric.VESWs {
			for _, m := range v.Members {
				member = member || uint16(v.ID) == uint16(p.VESW) && m.Node == f[0]
			}
		}
		if !member {
			t.Errorf("node %s has a range but no member on vesw %v in the fabric config", f[0], p.VESW)
		}
	}
	if n == 0 {
		t.Error("ranges names no node")
	}
}

func contains(l []any, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

func TestSystemdUnits(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"systemd/vnicd.service", []string{"ExecStart=/usr/local/bin/vnicd --config", "CAP_NET_ADMIN", "DeviceAllow=/dev/net/tun rw",
			"RestartPreventExitStatus=2", "RuntimeDirectory=opavnic", "RestrictNamespaces=net", "AF_NETLINK"}},
		{"systemd/opafm.service", []string{"ExecStart=/usr/local/bin/opafm --config", "ExecReload=/usr/local/bin/opafm --config /etc/opavnic/fabric.yaml --check\nExecReload=/bin/kill -HUP $MAINPID",
			"RestartPreventExitStatus=2", "RuntimeDirectory=opavnic"}},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s: no %q", tc.file, w)
			}
		}
		// systemd-analyze, when present, checks the syntax; a unit whose
		// binary is not installed here is fine.
		sa, err := exec.LookPath("systemd-analyze")
		if err != nil {
			continue
		}
		out, _ := exec.Command(sa, "verify", tc.file).CombinedOutput()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && !strings.Contains(l, "is not executable") && !strings.Contains(l, "No such file") {
				t.Errorf("systemd-analyze verify %s: %s", tc.file, l)
			}
		}
	}
}

// TestInstallCNIScript runs the DaemonSet's install-cni script with its
// paths moved into a temporary directory: a node with a range gets its
// conflist, one without gets none (and the script still succeeds).
func TestInstallCNIScript(t *testing.T) {
	for _, tool := range []string{"sh", "awk", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	var ds map[string]any
	for _, d := range manifests(t)["k8s/vnicd-daemonset.yaml"] {
		if d["kind"] == "DaemonSet" {
			ds = d
		}
	}
	script, _ := get(ds, "spec", "template", "spec", "initContainers", 0, "args", 0).(string)
	if script == "" {
		t.Fatal("no install-cni script")
	}
	dir := t.TempDir()
	for _, d := range []string{"host/opt/cni/bin", "host/etc/cni/multus/net.d", "config/cni"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"opavnic.conflist", "ranges"} {
		b, err := os.ReadFile(filepath.Join("k8s/cni", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config/cni", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script = strings.NewReplacer("/host/", dir+"/host/", "/config/", dir+"/config/",
		"/usr/local/bin/vnic-cni", dir+"/no-vnic-cni").Replace(script)
	out := filepath.Join(dir, "host/etc/cni/multus/net.d/opavnic.conflist")
	run := func(node string) string {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Env = append(os.Environ(), "NODE_NAME="+node)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install-cni for %s: %v\n%s", node, err, b)
		}
		return string(b)
	}
	run("node-2")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rangeStart": "192.168.101.20", "rangeEnd": "192.168.101.29"`) || strings.Contains(string(b), "@") {
		t.Errorf("conflist for node-2:\n%s", b)
	}
	if msg := run("node-9"); !strings.Contains(msg, "no range for node node-9") {
		t.Errorf("install-cni for a node without a range said %q", msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a node without a range kept a conflist: %v", err)
	}
}
