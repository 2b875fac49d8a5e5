package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// An ADD that fails for a reason that clears up by itself (vnicd not
// running; vnicd's answer coded busy, late or no_free_port) is CNI error 11,
// "try again later", so that the runtime retries; other failures are not.
func TestAddTryAgainLater(t *testing.T) {
	conf := []byte(`{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1}`)
	args := &skel.CmdArgs{ContainerID: "c1", IfName: "eth0", Netns: "/var/run/netns/x", StdinData: conf}
	for _, tc := range []struct {
		name   string
		answer error // vnic_add's error; nil: no vnicd at all
		code   uint
	}{
		{"no vnicd", nil, types.ErrTryAgainLater},
		{"no free port", fmt.Errorf("%w: vesw 1 on node host-a is not configured by the fabric manager yet", ctl.ErrNoFreePort), types.ErrTryAgainLater},
		{"too late to start", ctl.ErrLate, types.ErrTryAgainLater},
		// The decision is the answer's code's, whatever its text.
		{"coded busy", ctl.Errorf(ctl.CodeBusy, "vnicd is busy"), types.ErrTryAgainLater},
		{"coded no free port", ctl.Errorf(ctl.CodeNoFreePort, "every port of vesw 1 is taken"), types.ErrTryAgainLater},
		{"bad arguments", ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: pkey 0x8002 is not vesw 1's"), 0},
		{"not found", ctl.Errorf(ctl.CodeNotFound, "vport: node a has no vport 7"), 0},
		// A vnicd older than the codes answers with text alone: the text
		// of a transient error is not read as one.
		{"uncoded busy text", errors.New(ctl.ErrBusy.Error()), 0},
		{"uncoded no free port text", errors.New(ctl.ErrNoFreePort.Error() + ": vesw 1"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useSocketDir(t)
			if tc.answer != nil {
				s, err := ctl.Listen(filepath.Join(socketDir, "vnicd-a.sock"), nil)
				if err != nil {
					t.Fatal(err)
				}
				s.Handle(ctl.CmdVNICAdd, func(json.RawMessage) (any, error) { return nil, tc.answer })
				done := make(chan error, 1)
				go func() { done <- s.Serve(t.Context()) }()
				t.Cleanup(func() { s.Close(); <-done })
			}
			err := cmdAdd(args)
			var ce *types.Error
			switch {
			case err == nil:
				t.Fatal("ADD succeeded")
			case tc.code != 0 && (!errors.As(err, &ce) || ce.Code != tc.code):
				t.Errorf("ADD: %v (%T), want CNI error code %d", err, err, tc.code)
			case tc.code == 0 && errors.As(err, &ce) && ce.Code == types.ErrTryAgainLater:
				t.Errorf("ADD: %v is try-again-later, want a plain error", err)
			}
			if tc.answer != nil && !strings.Contains(err.Error(), tc.answer.Error()) {
				t.Errorf("ADD: %v does not carry vnicd's %q", err, tc.answer)
			}
		})
	}
}
