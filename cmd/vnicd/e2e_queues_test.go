//go:build linux

package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EQueues: node.Queues reaches the daemons. Two hosts run with two
// queues each: their VNICs' TAPs have two queues in the kernel, 24 TCP
// streams cross, and `vnicctl hfi` (the "hfi" command) shows both queues of
// both hosts carrying frames each way. The kernel puts each flow on a TAP
// queue by its hash and the queue group on a socket by its entropy, so with
// 24 flows an idle queue is a fault (a chance of about 2^-23 otherwise).
func TestE2EQueues(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "iperf3")
	a, b := nstest.NewNS(t, "mqa"), nstest.NewNS(t, "mqb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.102.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.102.2/24")
	ha.Queues, hb.Queues = 2, 2
	da, db := e2etest.Start(t, a, ha), e2etest.Start(t, b, hb)
	a.PingWithin(t, "192.168.102.2", 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ns := range []*nstest.NS{a, b} {
		out, err := ns.Exec(ctx, "ls", "/sys/class/net/vnic0/queues")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), "tx-"); n != 2 {
			t.Errorf("%s: vnic0 has %d queues in the kernel, want 2 (%q)", ns.Name(), n, out)
		}
	}
	rate := e2etest.Iperf(t, a, b, "192.168.102.2", 2, 24)
	t.Logf("iperf3, 24 TCP streams across two queues: %.0f Mbit/s", rate/1e6)
	if rate == 0 {
		t.Fatal("iperf3 moved nothing")
	}
	for _, x := range []struct {
		d    *e2etest.Daemon
		name string
	}{{da, "host-a"}, {db, "host-b"}} {
		c := x.d.HFICounters(t)
		for q := range 2 {
			rx, tx := c[fmt.Sprintf("queue%d_rx_packets", q)], c[fmt.Sprintf("queue%d_tx_frames", q)]
			if rx == 0 || tx == 0 {
				t.Errorf("%s: queue %d carried rx %d, tx %d frames; want both > 0", x.name, q, rx, tx)
			}
			if m, ok := c[fmt.Sprintf("queue%d_rx_misrouted", q)]; !ok || m != 0 {
				t.Errorf("%s: queue %d read %d packets of another queue (counter shown: %v)", x.name, q, m, ok)
			}
		}
		if _, ok := c["queue2_rx_packets"]; ok {
			t.Errorf("%s: a third queue's counters", x.name)
		}
	}
}

// TestE2EQueuesAuto: without node.Queues a daemon picks "auto". Over a veth
// with receive GRO off (a veth's default) host a gets one queue per CPU it
// may use, at most 4; host b, whose end of the veth has GRO turned on, gets
// one, since GRO would merge different flows' datagrams. Its VNIC's TAP
// has as many queues in the kernel, and 4 TCP streams cross.
func TestE2EQueuesAuto(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "iperf3", "ethtool")
	a, b := nstest.NewNS(t, "aqa"), nstest.NewNS(t, "aqb")
	_, vethB := nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := b.Exec(ctx, "ethtool", "-K", vethB, "gro", "on"); err != nil {
		t.Fatalf("ethtool -K %s gro on: %v: %s", vethB, err, out)
	}
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.102.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.102.2/24")
	da, db := e2etest.Start(t, a, ha), e2etest.Start(t, b, hb)
	a.PingWithin(t, "192.168.102.2", 10*time.Second)
	// The daemons inherit the test's environment and cgroup, so their
	// GOMAXPROCS at start is the test's.
	wantA := min(runtime.GOMAXPROCS(0), 4)
	for _, x := range []struct {
		ns   *nstest.NS
		d    *e2etest.Daemon
		want int
	}{{a, da, wantA}, {b, db, 1}} {
		c := x.d.HFICounters(t)
		n := 0
		for ; n <= 16; n++ {
			if _, ok := c[fmt.Sprintf("queue%d_rx_packets", n)]; !ok {
				break
			}
		}
		if n != x.want {
			t.Errorf("%s: the daemon shows %d queues, want %d", x.ns.Name(), n, x.want)
		}
		out, err := x.ns.Exec(ctx, "ls", "/sys/class/net/vnic0/queues")
		if err != nil {
			t.Fatal(err)
		}
		if k := strings.Count(string(out), "tx-"); k != x.want {
			t.Errorf("%s: vnic0 has %d queues in the kernel, want %d (%q)", x.ns.Name(), k, x.want, out)
		}
	}
	if rate := e2etest.Iperf(t, a, b, "192.168.102.2", 2, 4); rate == 0 {
		t.Fatal("iperf3 moved nothing")
	}
}

// TestE2EBusyPoll: node.busy_poll reaches the daemon's poll loop. Host a
// runs with a 20 ms window, host b without one; while pings 5 ms apart
// cross, a's loop busy-polls and b's sleeps, and `vnicctl hfi` (the "hfi"
// command) shows each window in effect.
func TestE2EBusyPoll(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	if runtime.NumCPU() < 2 {
		t.Skip("busy polling needs GOMAXPROCS >= 2, and this machine has one CPU")
	}
	a, b := nstest.NewNS(t, "bpa"), nstest.NewNS(t, "bpb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.101.1/24")
	ha.BusyPoll = "20ms"
	da := e2etest.Start(t, a, ha)
	db := e2etest.Start(t, b, pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first pings also resolve the neighbours; then 100, 5 ms apart.
	a.PingWithin(t, "192.168.101.2", 10*time.Second)
	if out, err := a.Exec(ctx, "ping", "-c", "100", "-i", "0.005", "-q", "-W", "2", "192.168.101.2"); err != nil {
		t.Fatalf("100 pings: %v\n%s", err, out)
	}
	for _, x := range []struct {
		d      *e2etest.Daemon
		name   string
		window string
		polls  bool
	}{{da, "host-a", "20ms", true}, {db, "host-b", "0s", false}} {
		var st ctl.HFIStatus
		if err := ctl.Call(x.d.Socket, ctl.CmdHFI, nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.BusyPoll != x.window {
			t.Errorf("%s: busy_poll %q in effect, want %q", x.name, st.BusyPoll, x.window)
		}
		n := x.d.HFICounters(t)["busy_polls_idle"]
		if got := n > 0; got != x.polls {
			t.Errorf("%s (busy_poll %s): busy_polls_idle = %d after 100 pings 5 ms apart", x.name, x.window, n)
		}
	}
}
