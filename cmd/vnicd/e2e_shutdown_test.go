package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EShutdownRemovesTAPs stops vnicd with SIGTERM and SIGINT and checks
// that it exits 0 at once and leaves no TAP behind, in its own namespace or
// in the one it moved a port to.
func TestE2EShutdownRemovesTAPs(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			a, other := nstest.NewNS(t, "sd"+sig.String()[3:6]), nstest.NewNS(t, "sdo"+sig.String()[3:6])
			h := hostSpec{
				name: "host-a", lid: lidA, listen: "127.0.0.1:4793",
				groups: map[int][]int{mcRed: {lidA}, mcBlue: {lidA}},
				vnics: []vnicSpec{
					{vport: 0, vesw: 1, pkey: 0x8001, mcast: mcRed, ifname: "vnic0", addrs: []string{"192.168.101.1/24"}},
					{vport: 1, vesw: 2, pkey: 0x8002, mcast: mcBlue, ifname: "vnic1", netns: other.Path()},
				},
			}
			d := startVnicd(t, a, h)
			cmd := d.cmd
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
			if _, err := os.Stat(d.socket); err == nil {
				t.Error("control socket left behind")
			}
			if took > time.Second {
				t.Errorf("shutdown took %v, more than a second", took)
			}
		})
	}
}
