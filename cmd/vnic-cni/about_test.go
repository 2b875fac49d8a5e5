package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Run by hand (no CNI_COMMAND), the plugin says what it is and which build,
// as the reference plugins do; CNI_COMMAND=VERSION still answers the
// protocol versions as JSON.
func TestAbout(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vnic-cni")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building vnic-cni: %v\n%s", err, out)
	}
	env := func(extra ...string) []string {
		var e []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CNI_") {
				e = append(e, kv)
			}
		}
		return append(e, extra...)
	}
	cmd := exec.Command(bin)
	cmd.Env = env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("vnic-cni with no CNI_COMMAND: %v\n%s", err, out)
	}
	want := "vnic-cni: VNICs of opavnic's vnicd for containers, (devel), not stamped with its commit, " + runtime.Version()
	if !strings.Contains(string(out), want) {
		t.Errorf("vnic-cni with no CNI_COMMAND printed %q; want it to hold %q", out, want)
	}
	cmd = exec.Command(bin)
	cmd.Env = env("CNI_COMMAND=VERSION")
	cmd.Stdin = strings.NewReader(`{"cniVersion": "1.0.0"}`)
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), `"supportedVersions":["1.0.0","1.1.0"]`) {
		t.Errorf("vnic-cni VERSION: %v, %s", err, out)
	}
}
