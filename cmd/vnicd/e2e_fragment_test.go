//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EEthMTUAboveUnderlay: eth_mtu 1500 (the default) on a 1500-byte
// underlay makes 16B packets of up to 1544 bytes, 1572 with their IP and
// UDP headers, which the underlay carries only as IP fragments. The kernel
// refuses a UDP GSO send of such datagrams (EMSGSIZE since Linux 6.13,
// EINVAL before), so the transport must send them one by one: full-size
// pings both ways and a TCP transfer (super-frames, cut into full-size
// frames) arrive whole, and no packet is discarded.
func TestE2EEthMTUAboveUnderlay(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping")
	a, b := nstest.NewNS(t, "fra"), nstest.NewNS(t, "frb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.101.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24")
	ha.vnics[0].ethMTU, hb.vnics[0].ethMTU = 1500, 1500
	da, db := startVnicd(t, a, ha), startVnicd(t, b, hb)

	a.PingWithin(t, "192.168.101.2", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 1472 bytes of ICMP payload: a 1514-byte frame, a 1572-byte datagram.
	for _, x := range []struct {
		ns   *nstest.NS
		addr string
	}{{a, "192.168.101.2"}, {b, "192.168.101.1"}} {
		if out, err := x.ns.Exec(ctx, "ping", "-c", "3", "-s", "1472", "-M", "do", "-W", "2", "-q", x.addr); err != nil {
			t.Fatalf("full-size pings to %s: %v\n%s", x.addr, err, out)
		}
	}
	// A liveness bound, not a performance one: without GSO fallback not a
	// single run of full-size frames leaves, and TCP crawls on retransmits.
	const size = 16 << 20
	took := tcpTransfer(t, a, b, "192.168.101.2:5302", size, uint64(time.Now().UnixNano()), 60*time.Second)
	t.Logf("FIGURE TCP transfer of %d bytes with eth_mtu 1500 over a 1500-byte underlay in %v: %.0f Mbit/s",
		size, took.Round(time.Millisecond), float64(size)*8/took.Seconds()/1e6)
	for name, d := range map[string]*daemon{"host-a": da, "host-b": db} {
		h := d.hfiCounters(t)
		if h["PortXmitDiscards"] != 0 || h["PortRcvErrors"] != 0 {
			t.Errorf("%s: PortXmitDiscards %d, PortRcvErrors %d; want 0", name, h["PortXmitDiscards"], h["PortRcvErrors"])
		}
		if c := d.counters(t, 0); c["offload_drops"] != 0 {
			t.Errorf("%s: offload_drops %d", name, c["offload_drops"])
		}
	}
}
