package vnicd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// TestVNICAddTooLateNotStarted: a vnic_add whose turn comes after another
// request has held the daemon until less than LateMargin of its time is
// left is answered ErrLate (a "busy" answer, which vnic-cni passes on as
// try again later) and makes no VNIC: its client could be gone before the
// VNIC was made, and nobody would know of it. The request that held the
// daemon is answered as usual.
func TestVNICAddTooLateNotStarted(t *testing.T) {
	release := make(chan struct{})
	sock := startFakeDaemonWith(t, fakeStatic, 0, func(s engine.DeviceSpec) {
		if s.Netdev.IfName == "slow" {
			select {
			case <-release:
			case <-time.After(2 * ctl.Timeout):
			}
		}
	})
	first := make(chan error, 1)
	go func() {
		first <- ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", IfName: "slow", Owner: "cni:n:c1:slow"}, nil)
	}()
	time.Sleep(100 * time.Millisecond) // the first holds the daemon
	start := time.Now()
	second := make(chan error, 1)
	go func() {
		second <- ctl.Call(sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "late", Owner: "cni:n:c2:late"}, nil)
	}()
	// Hold the daemon until the second request has 0.9 s left.
	time.Sleep(ctl.Timeout - ctl.LateMargin + 600*time.Millisecond - time.Since(start))
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the vnic_add that held the daemon: %v", err)
	}
	err := <-second
	if !errors.Is(err, ctl.ErrLate) || err.Error() != ctl.ErrLate.Error() {
		t.Fatalf("the vnic_add whose turn came %v after it was sent: %v; want %v", time.Since(start).Round(time.Millisecond), err, ctl.ErrLate)
	}
	var vs []ctl.VNICStatus
	if err := ctl.Call(sock, ctl.CmdVNICs, nil, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.IfName == "late" {
			t.Errorf("the refused vnic_add made vport %d", v.VPort)
		}
	}
	if len(vs) != 2 {
		t.Errorf("%d VNICs, want the config's and the first runtime one: %+v", len(vs), vs)
	}
}
