package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestBusyTryAgainLater: vnicd serves at most vnicd.MaxControlConns
// connections at once and answers the next one ErrBusy ("try again"),
// which is what many pods started or stopped at once on a node meet. ADD,
// DEL and CHECK then fail with CNI error 11, "try again later" (SPEC.md, Error
// codes), not 999, so that the runtime retries; and DEL does not mistake
// the busy vnicd for one that is down (it removes nothing, and releases no
// address, behind vnicd's back).
func TestBusyTryAgainLater(t *testing.T) {
	log := fakeIPAM(t)
	sock := filepath.Join(t.TempDir(), "vnicd-a.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{ctl.CmdVNICAdd, ctl.CmdVNICDel} {
		s.Handle(cmd, func(json.RawMessage) (any, error) {
			t.Errorf("%s served while every slot is held", cmd)
			return nil, nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	// Hold every slot: connections that send nothing. vnicd accepts them
	// in order, so the plugin's, made after, is the one refused.
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
		s.Close()
		<-done
	})
	for range ctl.MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	conf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "socket": "` + sock + `", "ipam": {"type": "fakeipam"}}`)
	args := &skel.CmdArgs{ContainerID: "c1", IfName: "eth0", Netns: "/var/run/netns/does-not-exist", StdinData: conf}
	for _, op := range []struct {
		name string
		f    func(*skel.CmdArgs) error
	}{{"ADD", cmdAdd}, {"DEL", cmdDel}} {
		err := op.f(args)
		var ce *types.Error
		if !errors.As(err, &ce) || ce.Code != types.ErrTryAgainLater {
			t.Errorf("%s with vnicd busy: %v (%T), want CNI error 11", op.name, err, err)
		}
	}
	// CHECK asks vnicd for its VNICs first: busy is try again later too.
	checkConf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "socket": "` + sock + `",
		"prevResult": {"cniVersion": "1.1.0", "interfaces": [{"name": "eth0", "mac": "02:00:01:10:00:00", "sandbox": "/var/run/netns/does-not-exist"}]}}`)
	err = cmdCheck(&skel.CmdArgs{ContainerID: "c1", IfName: "eth0", Netns: "/var/run/netns/does-not-exist", StdinData: checkConf})
	if ce := (*types.Error)(nil); !errors.As(err, &ce) || ce.Code != types.ErrTryAgainLater {
		t.Errorf("CHECK with vnicd busy: %v (%T), want CNI error 11", err, err)
	}
	if b, _ := os.ReadFile(log); len(b) != 0 {
		t.Errorf("IPAM calls %q while vnicd was busy; want none", b)
	}
	if n := s.Busy.Load(); n != 3 {
		t.Errorf("vnicd refused %d connections, want the plugin's 3", n)
	}
}
