package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// vnicdBinary builds vnicd once per test process.
func vnicdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vnicd-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "vnicd")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building vnicd: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" && buildErr == nil {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

func TestBadConfigExitsTwo(t *testing.T) {
	bin := vnicdBinary(t)
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		yaml string
		args []string
		want string
	}{
		"mtu too large": {
			yaml: "node: {name: x, lid: 0x10}\nvnics:\n  - vesw: {id: 1, pkey: 0x8001, eth_mtu: 20000}\n",
			want: "vnics[0].vesw.eth_mtu",
		},
		"unknown field": {
			yaml: "node: {name: x, lid: 0x10, colour: red}\n",
			want: "node.colour",
		},
		"missing file":   {args: []string{"--config", filepath.Join(dir, "nope.yaml")}, want: "nope.yaml"},
		"no config flag": {args: []string{}, want: "--config is required"},
		"bad log level": {
			yaml: "node: {name: x, lid: 0x10}\n",
			args: []string{"--log-level", "loud"},
			want: "--log-level",
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
				if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", p}, args...)
			}
			cmd := exec.Command(bin, args...)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want exit code 2; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not name %q:\n%s", tc.want, out)
			}
		})
	}
}

// --check reads the config (and --fabric-manager's), prints what it sets up
// and exits 0, or 2 with the problem; it starts nothing, so it needs no root.
func TestCheck(t *testing.T) {
	bin := vnicdBinary(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "node: {name: chk, lid: 0x10}\ncontrol: {socket: "+filepath.Join(dir, "x.sock")+"}\n"+
		"vnics:\n  - vesw: {id: 1, pkey: 0x8001}\n    port: {ifname: chk0}\n")
	bad := write("bad.yaml", "node: {name: chk, lid: 0x10}\npeers: {lid: 2}\n")
	fabric := write("fabric.yaml", "fm: {name: f}\nvesws: [{id: 1, pkey: 0x8001}]\n")
	badFabric := write("badfabric.yaml", "fm: {name: f, lid: 010}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"good", []string{"--config", good}, 0, []string{good + ": config OK", "node chk lid 0x10", "vnic chk0 vport 0 vesw 1 pkey 0x8001"}},
		{"bad", []string{"--config", bad}, 2, []string{"vnicd: config: peers: must be a list, not a mapping (line 2)"}},
		{"with fabric", []string{"--config", good, "--fabric-manager", fabric}, 0, []string{fabric + ": fabric config OK", "vesw 1 vesw1 pkey 0x8001"}},
		{"bad fabric", []string{"--config", good, "--fabric-manager", badFabric}, 2, []string{"--fabric-manager: fabric config: fm.lid: \"010\": a leading 0 is ambiguous"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, append(tc.args, "--check")...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output does not hold %q:\n%s", w, out)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "x.sock")); err == nil {
				t.Error("--check made the control socket")
			}
		})
	}
}
