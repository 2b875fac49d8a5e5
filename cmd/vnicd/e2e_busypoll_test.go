//go:build linux

package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EBusyPoll: node.busy_poll reaches the daemon's poll loop. Host a
// runs with a 20 ms window, host b without one; while pings 5 ms apart
// cross, a's loop busy-polls and b's sleeps, and `vnicctl hfi` (the "hfi"
// command) shows each window in effect.
func TestE2EBusyPoll(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping")
	if runtime.NumCPU() < 2 {
		t.Skip("busy polling needs GOMAXPROCS >= 2, and this machine has one CPU")
	}
	a, b := nstest.NewNS(t, "bpa"), nstest.NewNS(t, "bpb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.101.1/24")
	ha.busyPoll = "20ms"
	da := startVnicd(t, a, ha)
	db := startVnicd(t, b, pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first pings also resolve the neighbours; then 100, 5 ms apart.
	a.PingWithin(t, "192.168.101.2", 10*time.Second)
	if out, err := a.Exec(ctx, "ping", "-c", "100", "-i", "0.005", "-q", "-W", "2", "192.168.101.2"); err != nil {
		t.Fatalf("100 pings: %v\n%s", err, out)
	}
	for _, x := range []struct {
		d      *daemon
		name   string
		window string
		polls  bool
	}{{da, "host-a", "20ms", true}, {db, "host-b", "0s", false}} {
		var st ctl.HFIStatus
		if err := ctl.Call(x.d.socket, "hfi", nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.BusyPoll != x.window {
			t.Errorf("%s: busy_poll %q in effect, want %q", x.name, st.BusyPoll, x.window)
		}
		n := x.d.hfiCounters(t)["busy_polls_idle"]
		if got := n > 0; got != x.polls {
			t.Errorf("%s (busy_poll %s): busy_polls_idle = %d after 100 pings 5 ms apart", x.name, x.window, n)
		}
	}
}
