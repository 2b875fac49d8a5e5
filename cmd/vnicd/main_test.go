package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/cmd/internal/clitest"
	"github.com/opavnic/opavnic/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }

func TestBadConfigExitsTwo(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
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
			clitest.Expect(t, bin, args, 2, tc.want)
		})
	}
}

// --version prints the build and exits 0, with no config and starting
// nothing. The tests' binary is built with -buildvcs=false, so it says it
// carries no commit; one built in this git checkout with VCS stamping (as
// README's go build does by default) names the checkout's commit.
func TestVersion(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
	clitest.Expect(t, bin, []string{"--version"}, 0, "vnicd (devel), not stamped with its commit, "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	clitest.Expect(t, bin, []string{"--version", "extra"}, 2, "unexpected arguments")

	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no commit to stamp: git rev-parse HEAD: %v (not a git checkout, no git, or a checkout git will not read as this user)", err)
	}
	stamped := filepath.Join(t.TempDir(), "vnicd")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", stamped, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	want := []string{"vnicd ", "(commit " + strings.TrimSpace(string(head))[:12] + ", ", runtime.Version()}
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		want = append(want, ", modified)")
	}
	clitest.Expect(t, stamped, []string{"--version"}, 0, want...)
}

// -h and --help print the flags and exit 0, as a usage error does not.
func TestHelpExitsZero(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
	for _, arg := range []string{"-h", "--help"} {
		clitest.Expect(t, bin, []string{arg}, 0, "-config string", "-fabric-manager string")
	}
	clitest.Expect(t, bin, []string{"--colour"}, 2, "flag provided but not defined: -colour")
}

// --check reads the config (and --fabric-manager's), prints what it sets up
// and exits 0, or 2 with the problem; it starts nothing, so it needs no root.
func TestCheck(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
	dir := t.TempDir()
	sock := filepath.Join(dir, "x.sock")
	good := clitest.WriteFile(t, dir, "good.yaml", "node: {name: chk, lid: 0x10}\ncontrol: {socket: "+sock+"}\n"+
		"vnics:\n  - vesw: {id: 1, pkey: 0x8001}\n    port: {ifname: chk0}\n")
	bad := clitest.WriteFile(t, dir, "bad.yaml", "node: {name: chk, lid: 0x10}\npeers: {lid: 2}\n")
	fabric := clitest.WriteFile(t, dir, "fabric.yaml", "fm: {name: f}\nvesws: [{id: 1, pkey: 0x8001}]\n")
	badFabric := clitest.WriteFile(t, dir, "badfabric.yaml", "fm: {name: f, lid: 010}\n")
	sameName := clitest.WriteFile(t, dir, "samename.yaml", "fm: {name: chk}\nvesws: [{id: 1, pkey: 0x8001}]\n")
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
		{"FM named as the host", []string{"--config", good, "--fabric-manager", sameName}, 2, []string{`fm.name "chk") is this host's port GUID (node.name "chk")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clitest.Expect(t, bin, append(tc.args, "--check"), tc.code, tc.want...)
			if _, err := os.Stat(sock); err == nil {
				t.Error("--check made the control socket")
			}
		})
	}
}

// freeUDPPort returns a port of 127.0.0.1 that was free a moment ago, for a
// vnicd that needs no root (no VNICs).
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// A --cpuprofile that cannot be written is a bad flag found before vnicd
// starts anything: exit 2 without the control socket (left behind when
// the profile was opened after NewDaemon).
func TestCPUProfileErrorBeforeStart(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
	dir := t.TempDir()
	sock := filepath.Join(dir, "p.sock")
	cfg := clitest.WriteFile(t, dir, "c.yaml", fmt.Sprintf("node: {name: prof, lid: 0x10, listen: \"127.0.0.1:%d\"}\ncontrol: {socket: %s}\n", freeUDPPort(t), sock))
	clitest.Expect(t, bin, []string{"--config", cfg, "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "p")}, 2, "cannot write the CPU profile")
	if _, err := os.Stat(sock); err == nil {
		t.Error("vnicd exited with its control socket left behind")
	}
}

// vnicd without the privileges it needs (a TAP needs CAP_NET_ADMIN) says
// what it needs. The test runs it as nobody, so it needs root.
func TestUnprivilegedHint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run vnicd as nobody")
	}
	bin := e2etest.Bin(t, "vnicd")
	dir := t.TempDir()
	cfg := clitest.WriteFile(t, dir, "nopriv.yaml", "node: {name: nopriv, lid: 0x10, listen: '127.0.0.1:47939'}\n"+
		"multicast: [{lid: 0xF00001, members: [0x10]}]\n"+
		"vnics: [{vesw: {id: 1, pkey: 0x8001, mcast_dlid: 0xF00001}, port: {ifname: noprivtap0}}]\n"+
		"control: {socket: "+filepath.Join(dir, "nopriv.sock")+"}\n")
	for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(bin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("vnicd as an ordinary user: %v, want exit code 1; output:\n%s", err, out)
	}
	for _, w := range []string{"permission denied", "vnicd needs root: CAP_NET_ADMIN and /dev/net/tun"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("output does not hold %q:\n%s", w, out)
		}
	}
}

// With --log-format json, a config vnicd cannot use is reported as a JSON
// log line, as everything else it logs: a log shipper that parses each line
// gets the reason, not an unparsable line. Exit 2 as in console format.
func TestJSONLogConfigError(t *testing.T) {
	bin := e2etest.Bin(t, "vnicd")
	dir := t.TempDir()
	good := clitest.WriteFile(t, dir, "good.yaml", "node: {name: js, lid: 0x10}\n")
	bad := clitest.WriteFile(t, dir, "bad.yaml", "node: {name: js, lid: 0x10}\npeers: {lid: 2}\n")
	badFabric := clitest.WriteFile(t, dir, "badfabric.yaml", "fm: {name: f, lid: 010}\n")
	clitest.ExpectJSONLines(t, bin, []string{"--log-format", "json", "--config", bad}, 2, "peers: must be a list, not a mapping (line 2)")
	clitest.ExpectJSONLines(t, bin, []string{"--log-format", "json", "--config", filepath.Join(dir, "nope.yaml")}, 2, "nope.yaml")
	clitest.ExpectJSONLines(t, bin, []string{"--log-format", "json", "--config", good, "--fabric-manager", badFabric}, 2,
		"--fabric-manager: fabric config: fm.lid")
}
