package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestFindSocket: a network config without "socket" takes the only vnicd
// socket (vnicd-*.sock) in socketDir; an opafm socket beside it is not
// vnicd's, none is errNoVnicd, several ask for the socket to be named.
func TestFindSocket(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string // socket found, or
		err   string // error text
	}{
		{"only vnicd", []string{"vnicd-a.sock"}, "vnicd-a.sock", ""},
		{"vnicd and opafm", []string{"opafm-fm.sock", "vnicd-a.sock"}, "vnicd-a.sock", ""},
		{"only opafm", []string{"opafm-fm.sock"}, "", "no vnicd socket"},
		{"none", nil, "", "no vnicd socket"},
		{"two vnicd", []string{"vnicd-a.sock", "vnicd-b.sock"}, "", "2 vnicd sockets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useSocketDir(t)
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(socketDir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := loadConf([]byte(`{"name": "red", "vesw": 1}`))
			switch {
			case tc.err == "" && (err != nil || c.Socket != filepath.Join(socketDir, tc.want)):
				t.Fatalf("loadConf: %+v %v; want socket %s", c, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("loadConf: %+v %v; want error %q", c, err, tc.err)
			case tc.err == "no vnicd socket" && !errors.Is(err, errNoVnicd):
				t.Fatalf("loadConf: %v is not errNoVnicd", err)
			}
		})
	}
}

// useSocketDir points socketDir at a new empty directory for the test.
func useSocketDir(t *testing.T) {
	old := socketDir
	socketDir = t.TempDir()
	t.Cleanup(func() { socketDir = old })
}

// fakeIPAM puts an IPAM plugin "fakeipam" on CNI_PATH that appends its
// command and container ID to the returned log file.
func fakeIPAM(t *testing.T) (log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(dir, "fakeipam"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CNI_PATH", dir)
	t.Setenv("CNI_CONTAINERID", "c1")
	t.Setenv("CNI_IFNAME", "eth0")
	t.Setenv("CNI_NETNS", "/var/run/netns/does-not-exist")
	return log
}

// TestDelGCNoVnicd: with no "socket" in the network config and no vnicd
// socket (vnicd stopped cleanly removes its socket; an opafm's socket may
// remain), DEL succeeds the way it does when vnicd does not answer: it
// releases the addresses (IPAM DEL) and sends nothing to the opafm. GC
// succeeds with nothing to give back.
func TestDelGCNoVnicd(t *testing.T) {
	conf := `{"cniVersion": "1.0.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001", "ipam": {"type": "fakeipam"}}`
	args := &skel.CmdArgs{ContainerID: "c1", Netns: "/var/run/netns/does-not-exist", IfName: "eth0", StdinData: []byte(conf)}
	for _, withFM := range []bool{false, true} {
		name := "no socket"
		if withFM {
			name = "opafm socket only"
		}
		t.Run(name, func(t *testing.T) {
			useSocketDir(t)
			log := fakeIPAM(t)
			var fmCalls atomic.Int32
			if withFM {
				fm, err := ctl.Listen(filepath.Join(socketDir, "opafm-fm.sock"), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, cmd := range []string{ctl.CmdVNICDel, ctl.CmdVNICGC, ctl.CmdVNICs} {
					fm.Handle(cmd, func(json.RawMessage) (any, error) { fmCalls.Add(1); return nil, nil })
				}
				done := make(chan error, 1)
				go func() { done <- fm.Serve(t.Context()) }()
				t.Cleanup(func() { fm.Close(); <-done })
			}
			if err := cmdDel(args); err != nil {
				t.Fatalf("DEL with no vnicd: %v", err)
			}
			if b, err := os.ReadFile(log); err != nil || string(b) != "DEL c1\n" {
				t.Fatalf("IPAM calls %q (%v); want one DEL of c1", b, err)
			}
			if err := cmdGC(args); err != nil {
				t.Fatalf("GC with no vnicd: %v", err)
			}
			if n := fmCalls.Load(); n != 0 {
				t.Fatalf("%d requests went to the opafm's socket", n)
			}
			// ADD still needs a vnicd, and says so (try again later).
			var ce *types.Error
			if err := cmdAdd(args); !errors.As(err, &ce) || ce.Code != types.ErrTryAgainLater || ce.Msg != errNoVnicd.Error() {
				t.Fatalf("ADD with no vnicd: %v, want errNoVnicd as CNI error 11", err)
			}
		})
	}
}
