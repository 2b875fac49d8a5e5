package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/opavnic/opavnic/vnicd"
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
	s, err := vnicd.ListenControl(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	var adds atomic.Int32
	s.Handle("vnic_add", func(json.RawMessage) (any, error) {
		adds.Add(1)
		return vnicd.VNICStatus{IfName: "net1", MAC: "02:00:01:10:00:00", EthMTU: 1500}, nil
	})
	s.Handle("vnic_del", func(json.RawMessage) (any, error) { return vnicd.VNICDeleted{}, nil })
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
