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

	"github.com/opavnic/opavnic/vnicd"
)

// A reload whose fm.control_socket differs from the one the daemon opened
// used to answer "reloaded" and swap in the new config while the control
// socket (and the MAC file beside it) stayed where it was. It is refused,
// as a changed fm.lid is, and the old config stays in full.
func TestReloadRefusesChangedControlSocket(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	sock := fmt.Sprintf("@opavnic-fmd-reload-%d-%d", os.Getpid(), time.Now().UnixNano())
	config := func(sock string, pkey int) string {
		return fmt.Sprintf("fm: {name: reload-test, listen: '127.0.0.1:%d', control_socket: '%s'}\n"+
			"nodes: [{name: a}]\nvesws: [{id: 1, pkey: 0x%X, members: [{node: a, vport: 0}]}]\n", port, sock, pkey)
	}
	path := filepath.Join(t.TempDir(), "fabric.yaml")
	if err := os.WriteFile(path, []byte(config(sock, 0x8001)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, path, zap.NewNop(), nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	pkey := func() string {
		var vs []struct {
			PKey string `json:"pkey"`
		}
		var err error
		for range 100 {
			if err = vnicd.Call(sock, "vesws", nil, &vs); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
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
	err = vnicd.Call(sock, "reload", nil, nil)
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
	if err := vnicd.Call(sock, "reload", nil, nil); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := pkey(); got == before {
		t.Errorf("vesw 1 pkey still %s after a reload that changed it", got)
	}
}
