//go:build linux

package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EQueues: node.queues reaches the daemons. Two hosts run with two
// queues each: their VNICs' TAPs have two queues in the kernel, 24 TCP
// streams cross, and `vnicctl hfi` (the "hfi" command) shows both queues of
// both hosts carrying frames each way. The kernel puts each flow on a TAP
// queue by its hash and the queue group on a socket by its entropy, so with
// 24 flows an idle queue is a fault (a chance of about 2^-23 otherwise).
func TestE2EQueues(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping", "iperf3")
	a, b := nstest.NewNS(t, "mqa"), nstest.NewNS(t, "mqb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.102.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.102.2/24")
	ha.queues, hb.queues = 2, 2
	da, db := startVnicd(t, a, ha), startVnicd(t, b, hb)
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
	rate := iperfStreams(t, a, b, "192.168.102.2", 2, 24)
	t.Logf("iperf3, 24 TCP streams across two queues: %.0f Mbit/s", rate/1e6)
	if rate == 0 {
		t.Fatal("iperf3 moved nothing")
	}
	for _, x := range []struct {
		d    *daemon
		name string
	}{{da, "host-a"}, {db, "host-b"}} {
		c := x.d.hfiCounters(t)
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

// TestE2EQueuesAuto: without node.queues a daemon picks "auto". Over a veth
// with receive GRO off (a veth's default) host a gets one queue per CPU it
// may use, at most 4; host b, whose end of the veth has GRO turned on, gets
// one, since GRO would merge different flows' datagrams. Its VNIC's TAP
// has as many queues in the kernel, and 4 TCP streams cross.
func TestE2EQueuesAuto(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping", "iperf3", "ethtool")
	a, b := nstest.NewNS(t, "aqa"), nstest.NewNS(t, "aqb")
	_, vethB := nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := b.Exec(ctx, "ethtool", "-K", vethB, "gro", "on"); err != nil {
		t.Fatalf("ethtool -K %s gro on: %v: %s", vethB, err, out)
	}
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.102.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.102.2/24")
	da, db := startVnicd(t, a, ha), startVnicd(t, b, hb)
	a.PingWithin(t, "192.168.102.2", 10*time.Second)
	// The daemons inherit the test's environment and cgroup, so their
	// GOMAXPROCS at start is the test's.
	wantA := min(runtime.GOMAXPROCS(0), 4)
	for _, x := range []struct {
		ns   *nstest.NS
		d    *daemon
		want int
	}{{a, da, wantA}, {b, db, 1}} {
		c := x.d.hfiCounters(t)
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
	if rate := iperfStreams(t, a, b, "192.168.102.2", 2, 4); rate == 0 {
		t.Fatal("iperf3 moved nothing")
	}
}
