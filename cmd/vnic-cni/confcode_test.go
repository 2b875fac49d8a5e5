package main

import (
	"errors"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

// TestConfErrorCodes: a network config vnic-cni cannot use is the spec's
// well-known error (SPEC.md, Error): 7 "invalid network config" when it
// has no vesw, 6 "failed to decode content" when a field has the wrong
// JSON type, from every command that reads it, not the generic 999 a
// runtime cannot tell from a failure of vnicd. skel itself only catches
// a config that is not JSON at all, or has no name.
func TestConfErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		code       uint
	}{
		{"no vesw", `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "pkey": "0x8001", "socket": "/nonexistent/vnicd-a.sock"}`, types.ErrInvalidNetworkConfig},
		{"null vesw", `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": null, "socket": "/nonexistent/vnicd-a.sock"}`, types.ErrInvalidNetworkConfig},
		{"socket a number", `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "socket": 5}`, types.ErrDecodingFailure},
		{"mac a list", `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "mac": [], "socket": "/nonexistent/vnicd-a.sock"}`, types.ErrDecodingFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := &skel.CmdArgs{ContainerID: "c1", IfName: "eth0", Netns: "/var/run/netns/does-not-exist", StdinData: []byte(tc.conf)}
			for _, op := range []struct {
				name string
				f    func(*skel.CmdArgs) error
			}{{"ADD", cmdAdd}, {"DEL", cmdDel}, {"CHECK", cmdCheck}, {"GC", cmdGC}} {
				err := op.f(args)
				var ce *types.Error
				if !errors.As(err, &ce) || ce.Code != tc.code {
					t.Errorf("%s: %v (%T), want CNI error %d", op.name, err, err, tc.code)
				}
			}
		})
	}
}
