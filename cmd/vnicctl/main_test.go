package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// Without --socket: no socket in socketDir is a daemon that cannot answer
// (exit 1, as with --socket naming a socket nobody serves); several are
// bad usage (exit 2: --socket must say which).
func TestDefaultSocketExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		code  int
		want  string
	}{
		{"none", nil, 1, "no daemon socket in"},
		{"several", []string{"vnicd-a.sock", "opafm-fm.sock"}, 2, "several daemon sockets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := socketDir
			socketDir = t.TempDir()
			t.Cleanup(func() { socketDir = old })
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(socketDir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			if code := run([]string{"vnics"}, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("vnicctl vnics: exit %d, %q; want %d, %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
	// The same daemon-less case with --socket, for comparison.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--socket", filepath.Join(t.TempDir(), "x.sock"), "vnics"}, &stdout, &stderr); code != 1 {
		t.Errorf("vnicctl --socket (nobody) vnics: exit %d, %q; want 1", code, stderr.String())
	}
}

// --version prints vnicctl's build to stdout and exits 0 without looking
// for a daemon; with a command after it, it is a usage error.
func TestVersion(t *testing.T) {
	old := socketDir
	socketDir = t.TempDir() // no daemon: --version must not need one
	t.Cleanup(func() { socketDir = old })
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("vnicctl --version: exit %d, stderr %q", code, stderr.String())
	}
	want := "vnicctl " + buildinfo.Read().String() + "\n"
	if stdout.String() != want || stderr.Len() != 0 {
		t.Errorf("vnicctl --version: stdout %q, stderr %q; want stdout %q", stdout.String(), stderr.String(), want)
	}
	stdout.Reset()
	if code := run([]string{"--version", "hfi"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--version takes no command") || stdout.Len() != 0 {
		t.Errorf("vnicctl --version hfi: exit %d, stdout %q, stderr %q; want 2 and a usage error", code, stdout.String(), stderr.String())
	}
}

// -h and --help print the usage and exit 0; no command, or an unknown flag,
// is a usage error (2).
func TestHelpExitCode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "commands of vnicd:"},
		{[]string{"--help"}, 0, "commands of opafm:"},
		{nil, 2, "usage: vnicctl"},
		{[]string{"--colour", "vnics"}, 2, "flag provided but not defined: -colour"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("vnicctl %q: exit %d, %q; want %d, %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// vnicctl version gives vnicctl's build and the daemon's (the control
// command "version", which every daemon's control socket answers); a
// daemon that does not answer it still gets vnicctl's line, then the error
// and exit 1.
func TestVersionOfDaemon(t *testing.T) {
	sock := serveControl(t, nil)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--socket", sock, "version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("vnicctl version: exit %d, stderr %q", code, stderr.String())
	}
	build := buildinfo.Read().String()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "vnicctl ") || !strings.HasSuffix(lines[0], build) ||
		!strings.HasPrefix(lines[1], filepath.Base(os.Args[0])+" ") || !strings.HasSuffix(lines[1], build) {
		t.Errorf("vnicctl version printed %q; want a vnicctl line and a %s line, each ending %q", stdout.String(), filepath.Base(os.Args[0]), build)
	}

	stdout.Reset()
	if code := run([]string{"--socket", sock, "--json", "version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("vnicctl --json version: exit %d, stderr %q", code, stderr.String())
	}
	var v map[string]ctl.BuildStatus
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("vnicctl --json version: %v\n%s", err, stdout.String())
	}
	if d := v["daemon"]; d.Program != filepath.Base(os.Args[0]) || d.Build != build || d.GoVersion != runtime.Version() || d.Version == "" || d.Platform == "" {
		t.Errorf("vnicctl --json version: daemon %+v", d)
	}
	if c := v["vnicctl"]; c.Build != build {
		t.Errorf("vnicctl --json version: vnicctl %+v", c)
	}

	old := serveControl(t, map[string]ctl.Handler{ctl.CmdVersion: func(json.RawMessage) (any, error) {
		return nil, errors.New(`unknown command "version"`)
	}})
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--socket", old, "version"}, &stdout, &stderr); code != 1 ||
		strings.TrimSpace(stdout.String()) != "vnicctl  "+build || !strings.Contains(stderr.String(), `unknown command "version"`) {
		t.Errorf("vnicctl version, a daemon without the command: exit %d, stdout %q, stderr %q; want 1, vnicctl's line, the error", code, stdout.String(), stderr.String())
	}
}
