// Package configs holds tests of the deployment files beside it: every
// Kubernetes manifest decodes, the configs they carry load, and the systemd
// units have what vnicd and opafm need.
package configs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd"
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
		"Deployment/opafm", "Service/opafm", "ConfigMap/opafm-config"} {
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
	for _, p := range []string{"/dev/net/tun", "/var/run/netns", "/run/opavnic", "/opt/cni/bin", "/etc/cni/net.d"} {
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
	vc, err := vnicd.ParseConfig([]byte(get(kinds["ConfigMap/vnicd-config"], "data", "vnicd.yaml").(string)))
	if err != nil {
		t.Errorf("vnicd-config: %v", err)
	} else if vc.Node.Name != "node-1" || !vc.Node.Managed() {
		t.Errorf("vnicd-config: node %q managed %v", vc.Node.Name, vc.Node.Managed())
	}
	if _, err := fm.ParseConfig([]byte(get(kinds["ConfigMap/opafm-config"], "data", "fabric.yaml").(string))); err != nil {
		t.Errorf("opafm-config: %v", err)
	}
	// The conflist in the ConfigMap is the one the image carries.
	var inMap, inFile any
	if err := json.Unmarshal([]byte(get(kinds["ConfigMap/vnic-cni-config"], "data", "10-opavnic.conflist").(string)), &inMap); err != nil {
		t.Errorf("vnic-cni-config conflist: %v", err)
	}
	data, err := os.ReadFile("k8s/cni/10-opavnic.conflist")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &inFile); err != nil {
		t.Errorf("k8s/cni/10-opavnic.conflist: %v", err)
	}
	if !reflect.DeepEqual(inMap, inFile) {
		t.Error("the conflist in vnic-cni-config differs from k8s/cni/10-opavnic.conflist")
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
		{"systemd/opafm.service", []string{"ExecStart=/usr/local/bin/opafm --config", "ExecReload=/bin/kill -HUP $MAINPID",
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
