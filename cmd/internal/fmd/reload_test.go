package fmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// A reload whose fm.control_socket differs from the one the daemon opened
// used to answer "reloaded" and swap in the new config while the control
// socket (and the MAC file beside it) stayed where it was. It is refused,
// as a changed fm.lid is, and the old config stays in full.
func TestReloadRefusesChangedControlSocket(t *testing.T) {
	port := freeUDPPort(t)
	sock := fmt.Sprintf("@opavnic-fmd-reload-%d-%d", os.Getpid(), time.Now().UnixNano())
	config := func(sock string, pkey int) string {
		return fmt.Sprintf("fm: {name: reload-test, listen: '127.0.0.1:%d', control_socket: '%s'}\n"+
			"nodes: [{name: a}]\nvesws: [{id: 1, pkey: 0x%X, members: [{node: a, vport: 0}]}]\n", port, sock, pkey)
	}
	path := filepath.Join(t.TempDir(), "fabric.yaml")
	if err := os.WriteFile(path, []byte(config(sock, 0x8001)), 0o644); err != nil {
		t.Fatal(err)
	}
	serveFMD(t, path, sock)
	pkey := func() string {
		var vs []struct {
			PKey string `json:"pkey"`
		}
		err := waitfor.Check(2*time.Second, func() error { return ctl.Call(sock, ctl.CmdVESWs, nil, &vs) })
		if err != nil || len(vs) != 1 {
			t.Fatalf("vesws: %v %+v", err, vs)
		}
		return vs[0].PKey
	}
	before := pkey()

	// A new socket and a new pkey: the whole reload is refused.
	if err := os.WriteFile(path, []byte(config(sock+"-moved", 0x8002)), 0o644); err != nil {
		t.Fatal(err)
	}
	err := ctl.Call(sock, ctl.CmdReload, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "fm.control_socket changed") {
		t.Errorf("reload with a moved control socket: %v, want it refused", err)
	}
	if got := pkey(); got != before {
		t.Errorf("vesw 1 pkey %s after a refused reload, want the old %s", got, before)
	}

	// The same socket: the new pkey is applied.
	if err := os.WriteFile(path, []byte(config(sock, 0x8002)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Call(sock, ctl.CmdReload, nil, nil); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := pkey(); got == before {
		t.Errorf("vesw 1 pkey still %s after a reload that changed it", got)
	}
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// serveFMD runs Serve on the config file at path until the test ends, and
// waits until its control socket sock answers.
func serveFMD(t *testing.T, path, sock string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, path, zap.NewNop(), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if err := waitfor.Check(2*time.Second, func() error { return ctl.Call(sock, ctl.CmdVESWs, nil, nil) }); err != nil {
		t.Fatalf("the FM's control socket: %v", err)
	}
}

// TestServeRemovesMACFileTemps: what an interrupted write of the MAC file
// left beside it is removed once the FM has its control socket.
func TestServeRemovesMACFileTemps(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "opafm-x.sock")
	path := filepath.Join(dir, "fabric.yaml")
	text := fmt.Sprintf("fm: {name: x, listen: '127.0.0.1:%d', control_socket: '%s'}\nnodes: [{name: a}]\n", freeUDPPort(t), sock)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Base(fm.MACFilePath(sock)) + ".tmp31337"
	for _, n := range []string{tmp, "keep.tmp1"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	serveFMD(t, path, sock)
	if _, err := os.Stat(filepath.Join(dir, tmp)); err == nil {
		t.Errorf("%s is still there", tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.tmp1")); err != nil {
		t.Errorf("keep.tmp1: %v", err)
	}
}

// TestSecondFMLeavesMACFile: an opafm started on the control socket of a
// running one exits (the socket is in use) without touching the running
// FM's MAC file, even one it cannot read, which it would otherwise set
// aside as .bad.
func TestSecondFMLeavesMACFile(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "opafm-x.sock")
	config := func(port int) string {
		p := filepath.Join(dir, fmt.Sprintf("fabric-%d.yaml", port))
		text := fmt.Sprintf("fm: {name: x, listen: '127.0.0.1:%d', control_socket: '%s'}\nnodes: [{name: a}]\n", port, sock)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serveFMD(t, config(freeUDPPort(t)), sock)
	macFile := fm.MACFilePath(sock)
	if err := os.WriteFile(macFile, []byte("{"), 0o600); err != nil { // unreadable
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Serve(ctx, config(freeUDPPort(t)), zap.NewNop(), nil); err == nil {
		t.Fatal("a second FM on the same control socket served")
	}
	if b, err := os.ReadFile(macFile); err != nil || string(b) != "{" {
		t.Errorf("the running FM's MAC file after the second FM: %q, %v", b, err)
	}
	if _, err := os.Stat(macFile + ".bad"); err == nil {
		t.Error("the second FM set the running FM's MAC file aside")
	}
}
