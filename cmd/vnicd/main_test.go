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
