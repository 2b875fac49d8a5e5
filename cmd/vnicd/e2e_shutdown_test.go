package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EShutdownRemovesTAPs stops vnicd with SIGTERM and SIGINT and checks
// that it exits 0 at once and leaves no TAP behind, in its own namespace or
// in the one it moved a port to.
func TestE2EShutdownRemovesTAPs(t *testing.T) {
	e2etest.Require(t, "ip")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			a, other := nstest.NewNS(t, "sd"+sig.String()[3:6]), nstest.NewNS(t, "sdo"+sig.String()[3:6])
			h := e2etest.Host{
				Name: "host-a", LID: lidA, Listen: "127.0.0.1:4793",
				Groups: map[int][]int{mcRed: {lidA}, mcBlue: {lidA}},
				VNICs: []e2etest.VNIC{
					{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0", Addrs: []string{"192.168.101.1/24"}},
					{VPort: 1, VESW: 2, PKey: 0x8002, Mcast: mcBlue, IfName: "vnic1", NetNS: other.Path()},
				},
			}
			d := e2etest.Start(t, a, h)
			cmd := d.Cmd
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("vnicd exited with %v after %v, want exit code 0", err, sig)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("vnicd still running 5s after %v", sig)
			}
			took := time.Since(start)
			t.Logf("vnicd exited %v after %v", took.Round(time.Millisecond), sig)
			for _, c := range []struct {
				ns   *nstest.NS
				name string
			}{{a, "vnic0"}, {other, "vnic1"}} {
				if _, err := c.ns.Netlink().LinkByName(c.name); err == nil {
					t.Errorf("%s still exists in %s after shutdown", c.name, c.ns.Name())
				}
			}
			if _, err := os.Stat(d.Socket); err == nil {
				t.Error("control socket left behind")
			}
			if took > time.Second {
				t.Errorf("shutdown took %v, more than a second", took)
			}
		})
	}
}
