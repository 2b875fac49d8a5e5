package vnicd_test

import (
	"testing"

	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// The control protocol's vport bound is the VEMA's, which it cannot import
// without pulling the codecs into vnicctl.
func TestCtlMaxVPortIsVEMAs(t *testing.T) {
	if ctl.MaxVPort != vema.MaxVPort {
		t.Fatalf("ctl.MaxVPort = %d, vema.MaxVPort = %d", ctl.MaxVPort, vema.MaxVPort)
	}
}
