package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestAddRefusesPluginNetNS: an ADD whose CNI_NETNS is the plugin's own
// namespace (the host's: say a /proc/PID/ns/net whose container is gone
// and whose PID a host process now has, containernetworking/plugins#714)
// is refused with CNI error 8 before vnicd is asked for anything. skel
// refuses it too, but only after cmdAdd has run: by then vnicd had put the
// VNIC, named CNI_IFNAME, in the host's namespace and the IPAM plugin's
// addresses and routes on it. CNI_NETNS_OVERRIDE lets it through, as skel
// does.
func TestAddRefusesPluginNetNS(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "vnicd-a.sock")
	s, err := ctl.Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	var adds atomic.Int32
	s.Handle(ctl.CmdVNICAdd, func(json.RawMessage) (any, error) {
		adds.Add(1)
		return ctl.VNICStatus{IfName: "net1", MAC: "02:00:01:10:00:00", EthMTU: 1500}, nil
	})
	s.Handle(ctl.CmdVNICDel, func(json.RawMessage) (any, error) { return ctl.VNICDeleted{}, nil })
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })

	conf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "socket": "` + sock + `"}`)
	args := &skel.CmdArgs{ContainerID: "c1", IfName: "net1", Netns: "/proc/self/ns/net", StdinData: conf}
	err = cmdAdd(args)
	var ce *types.Error
	if !errors.As(err, &ce) || ce.Code != types.ErrInvalidNetNS {
		t.Errorf("ADD into the plugin's own namespace: %v (%T), want CNI error 8", err, err)
	}
	if n := adds.Load(); n != 0 {
		t.Errorf("vnicd was asked for %d VNICs in the plugin's own namespace", n)
	}

	args.NetnsOverride = "true"
	if _, err := captureStdout(t, func() error { return cmdAdd(args) }); err != nil || adds.Load() != 1 {
		t.Errorf("ADD with CNI_NETNS_OVERRIDE: %v, %d vnic_add; want it through", err, adds.Load())
	}
}

// TestDelNoVnicdPluginNetNS: with vnicd not running, DEL removes the
// container's TAP itself, but not in the plugin's own namespace: a
// CNI_NETNS that names it (the stale /proc/PID/ns/net above) is not the
// container's, and a netdev there named CNI_IFNAME may be another of
// vnicd's VNICs. The addresses are released either way.
func TestDelNoVnicdPluginNetNS(t *testing.T) {
	var removed []string
	old := removeTAP
	removeTAP = func(netns, name string, _ func(string) bool) error {
		removed = append(removed, netns+" "+name)
		return nil
	}
	t.Cleanup(func() { removeTAP = old })
	conf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "ipam": {"type": "fakeipam"}}`)
	for _, tc := range []struct {
		netns, override string
		remove          bool
	}{
		{"/proc/self/ns/net", "", false},
		{"/proc/self/ns/net", "true", true},
		{"/var/run/netns/does-not-exist", "", true},
	} {
		useSocketDir(t) // no vnicd socket
		log := fakeIPAM(t)
		removed = nil
		args := &skel.CmdArgs{ContainerID: "c1", IfName: "net1", Netns: tc.netns, NetnsOverride: tc.override, StdinData: conf}
		if err := cmdDel(args); err != nil {
			t.Fatalf("DEL in %s (override %q) with no vnicd: %v", tc.netns, tc.override, err)
		}
		if got := len(removed) == 1; got != tc.remove || len(removed) > 1 {
			t.Errorf("DEL in %s (override %q) with no vnicd removed %q; want a removal: %v", tc.netns, tc.override, removed, tc.remove)
		}
		if b, err := os.ReadFile(log); err != nil || string(b) != "DEL c1\n" {
			t.Errorf("IPAM calls %q (%v); want one DEL of c1", b, err)
		}
	}
}
