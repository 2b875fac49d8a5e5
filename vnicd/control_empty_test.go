package vnicd_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestEmptyListsAreArrays: a node with no VNIC yet (a managed node
// before the EM, a static one before vnic add) answers vnics and counters
// with an empty JSON array, as it answers vesws and claims, not null:
// `vnicctl --json vnics | jq '.[]'` fails on null ("Cannot iterate over
// null").
func TestEmptyListsAreArrays(t *testing.T) {
	noVNICs := fakeStatic[:strings.Index(fakeStatic, "vnics:")]
	sock := startFakeDaemon(t, noVNICs)
	for _, cmd := range []string{ctl.CmdVNICs, ctl.CmdCounters, ctl.CmdVESWs, ctl.CmdClaims} {
		resp, err := roundTrip(sock, []byte(`{"cmd":"`+cmd+`"}`+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(resp, []byte(`"data":[]`)) {
			t.Errorf("%s on a node with no VNIC: %s; want data []", cmd, bytes.TrimSpace(resp))
		}
	}
}
