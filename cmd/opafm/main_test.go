package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/opavnic/opavnic/cmd/internal/clitest"
)

// TestCheckAndUsage builds opafm and runs it with --check on good and bad
// configs, and with bad usage: a config it cannot use, or bad flags, exit
// 2 with the reason; --check starts nothing.
func TestCheckAndUsage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "opafm")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building opafm: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "fm.sock")
	good := clitest.WriteFile(t, dir, "good.yaml", "fm: {name: f, listen: '127.0.0.1:4799', control_socket: "+sock+"}\n"+
		"nodes: [{name: a, lid: 0xC001}]\nvesws: [{id: 7, name: red, pkey: 0x8007, members: [{node: a, vport: 0}]}]\n")
	bad := clitest.WriteFile(t, dir, "bad.yaml", "fm: {name: f}\nvesws: {id: 1}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"good", []string{"--config", good, "--check"}, 0, []string{good + ": fabric config OK", "node a lid 0xC001", "vesw 7 red pkey 0x8007 mtu 1500 mcast 0x0 up members a/0"}},
		{"bad", []string{"--config", bad, "--check"}, 2, []string{"opafm: fabric config: vesws: must be a list, not a mapping (line 2)"}},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.yaml"), "--check"}, 2, []string{"nope.yaml"}},
		{"no config", []string{"--check"}, 2, []string{"--config is required"}},
		{"bad log level", []string{"--config", good, "--log-level", "loud"}, 2, []string{"--log-level"}},
		{"bad config, no check", []string{"--config", bad}, 2, []string{"vesws: must be a list"}},
		{"help", []string{"--help"}, 0, []string{"-config string", "-check", "-version"}},
		{"version", []string{"--version"}, 0, []string{"opafm (devel), not stamped with its commit, go1."}},
		{"unknown flag", []string{"--colour"}, 2, []string{"flag provided but not defined: -colour"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clitest.Expect(t, bin, tc.args, tc.code, tc.want...)
			if _, err := os.Stat(sock); err == nil {
				t.Error("opafm made its control socket")
			}
		})
	}
}

// With --log-format json, a fabric config opafm cannot use is reported as a
// JSON log line, as everything else it logs. Exit 2 as in console format.
func TestJSONLogConfigError(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "opafm")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building opafm: %v\n%s", err, out)
	}
	bad := clitest.WriteFile(t, dir, "bad.yaml", "fm: {name: f}\nvesws: {id: 1}\n")
	clitest.ExpectJSONLines(t, bin, []string{"--log-format", "json", "--config", bad}, 2, "vesws: must be a list")
}
