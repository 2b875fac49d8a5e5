package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestCheckPendingClaim: CHECK of a container whose claim a restarted,
// managed vnicd holds pending (the EM has not made its port again yet)
// says so, as try again later (code 11), instead of "no VNIC"; with no
// such claim the error stays that vnicd has no VNIC.
func TestCheckPendingClaim(t *testing.T) {
	const netns = "/var/run/netns/c1"
	conf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "socket": "SOCK",
		"prevResult": {"cniVersion": "1.1.0", "interfaces": [{"name": "net1", "mac": "02:00:01:10:00:00", "sandbox": "` + netns + `"}]}}`)
	for _, pending := range []bool{true, false} {
		sock := filepath.Join(t.TempDir(), "vnicd-a.sock")
		s, err := ctl.Listen(sock, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Handle(ctl.CmdVNICs, func(json.RawMessage) (any, error) { return []ctl.VNICStatus{}, nil })
		s.Handle(ctl.CmdClaims, func(json.RawMessage) (any, error) {
			if !pending {
				return []ctl.Claim{}, nil
			}
			return []ctl.Claim{{VPort: 0, VESW: 1, Owner: "cni:red:c1:net1", NetNS: netns, IfName: "net1", State: ctl.ClaimPending}}, nil
		})
		done := make(chan error, 1)
		go func() { done <- s.Serve(t.Context()) }()
		args := &skel.CmdArgs{ContainerID: "c1", IfName: "net1", Netns: netns,
			StdinData: []byte(strings.Replace(string(conf), "SOCK", sock, 1))}
		err = cmdCheck(args)
		s.Close()
		<-done
		var ce *types.Error
		switch {
		case pending && (!errors.As(err, &ce) || ce.Code != types.ErrTryAgainLater || !strings.Contains(ce.Msg, "pending")):
			t.Errorf("CHECK with the claim pending: %v, want code 11 saying it is pending", err)
		case !pending && (err == nil || !strings.Contains(err.Error(), "vnicd has no VNIC of cni:red:c1:net1")):
			t.Errorf("CHECK with no claim: %v, want no VNIC", err)
		}
	}
}
