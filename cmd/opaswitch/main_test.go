package main

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/opaswitch/topology"
	"github.com/opavnic/opavnic/vema"
)

// capture runs f with stdout going to a pipe and returns what it printed.
func capture(t *testing.T, f func() int) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	code := f()
	os.Stdout = old
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out), code
}

func TestFatTreeFlag(t *testing.T) {
	out, code := capture(t, func() int {
		return run([]string{"--fat-tree", "2:2:3", "--switch-address", "10.230.0.1", "--host-endpoint", "10.230.1.1:4793"})
	})
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	top, err := topology.Parse([]byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(top.Hosts) != 6 || top.Host("host6").Endpoint != netip.MustParseAddrPort("10.230.1.6:4793") {
		t.Errorf("hosts %+v", top.Hosts)
	}
	if _, code := capture(t, func() int {
		return run([]string{"--fat-tree", "2x2", "--switch-address", "10.230.0.1", "--host-endpoint", "10.230.1.1:4793"})
	}); code != 2 {
		t.Errorf("a bad --fat-tree exits %d, want 2", code)
	}
}

// TestRun: opaswitch runs the switches of a topology on loopback; one
// answers a directed-route SMP from its host, and a signal stops it with
// exit 0.
func TestRun(t *testing.T) {
	host := hfitest.ClosedPort(t, "127.0.0.1:0")
	tr, err := hfi.ListenUDP(host, 0)
	if err != nil {
		t.Skipf("no loopback UDP here: %v", err)
	}
	defer tr.Close()
	sw := hfitest.ClosedPort(t, "127.0.0.1:0")
	text := "switches: [{name: s1, address: 127.0.0.1, ports: 4, base_port: " + strconv.Itoa(int(sw.Port())-1) + "}]\n" +
		"hosts: [{name: h1, endpoint: \"" + host.String() + "\"}]\ncables: [[s1/1, h1]]\n"
	path := filepath.Join(t.TempDir(), "top.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := capture(t, func() int { return run([]string{"--config", path, "--check"}) }); code != 0 || !strings.Contains(out, "topology OK") {
		t.Fatalf("--check: %d %s", code, out)
	}
	done := make(chan int, 1)
	go func() { done <- run([]string{"--config", path, "--log-level", "error"}) }()

	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion,
		Method: vema.MethodGet, TID: 7, AttrID: vema.SMPAttrNodeInfo}}
	_ = smp.SetDirectedRoute(1)
	smp.DRSend(vema.DRNode{NumPorts: 1})
	mad, _ := smp.MarshalBinary()
	pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: encap.LID16BPermissive, DLID: encap.LID16BPermissive, SC: 15, PKey: 0x7FFF}, mad)
	msgs := []hfi.Message{{Buf: make([]byte, encap.MaxPacketLen)}}
	var got []byte
	waitfor.Until(t, 10*time.Second, "the switch's answer", func() bool {
		tr.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: sw}}) // again until the switch listens
		if k, _ := tr.TryReadBatch(msgs); k == 1 {
			got = bytes.Clone(msgs[0].Buf[:msgs[0].N])
			return true
		}
		return false
	})
	mp, err := encap.ParseMgmt(got)
	if err != nil {
		t.Fatal(err)
	}
	var resp vema.SMP
	if err := resp.UnmarshalBinary(mp.MAD); err != nil || resp.TID != 7 {
		t.Fatalf("answer %+v, %v", resp.SMPHeader, err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opaswitch did not stop within 10 s of SIGTERM")
	}
}
