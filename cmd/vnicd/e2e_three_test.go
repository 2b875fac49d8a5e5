package main

import (
	"fmt"
	"testing"

	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EThreeHostsBroadcast puts three hosts on one switch: ARP (broadcast)
// and IPv6 neighbour discovery (multicast) must reach both other hosts, and a
// sender must never get its own multicast back.
func TestE2EThreeHostsBroadcast(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping")
	lids := []int{lidA, lidB, lidC}
	var nss []*nstest.NS
	var members []nstest.Member
	for i := range lids {
		ns := nstest.NewNS(t, fmt.Sprintf("h%d", i+1))
		nss = append(nss, ns)
		members = append(members, nstest.Member{NS: ns, Addr: pfx(fmt.Sprintf("10.201.0.%d/24", i+1))})
	}
	seg := nstest.Bridge(t, 1500, members...)
	capture := startCapture(t, nss[0], seg.Ifaces[0])
	var ds []*daemon
	for i, lid := range lids {
		peers := map[int]string{}
		for j, other := range lids {
			if j != i {
				peers[other] = fmt.Sprintf("10.201.0.%d:4793", j+1)
			}
		}
		ds = append(ds, startVnicd(t, nss[i], hostSpec{
			name: fmt.Sprintf("h%d", i+1), lid: lid, listen: fmt.Sprintf("10.201.0.%d:4793", i+1),
			peers:  peers,
			groups: map[int][]int{mcRed: lids},
			vnics: []vnicSpec{{vport: 0, vesw: 1, pkey: 0x8001, mcast: mcRed, ifname: "vnic0",
				addrs: []string{fmt.Sprintf("192.168.110.%d/24", i+1), fmt.Sprintf("fd00:110::%d/64", i+1)}}},
		}))
	}
	ping(t, nss[0], "192.168.110.2")
	ping(t, nss[0], "192.168.110.3")
	ping(t, nss[1], "192.168.110.3")
	ping(t, nss[0], "-6", "fd00:110::2")
	ping(t, nss[0], "-6", "fd00:110::3")
	ping(t, nss[2], "-6", "fd00:110::2")

	// Host 1's underlay: datagrams it receives never carry its own SLID, and
	// it sent its broadcasts to both others.
	pkts := capture.stop(t)
	sentMcast := map[string]bool{}
	for _, c := range pkts {
		p := c.payload
		if len(p) < 16 {
			continue
		}
		slid := uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2]&0x0F)<<16 | uint32(p[9]&0x0F)<<20
		dlid := uint32(p[4]) | uint32(p[5])<<8 | uint32(p[6]&0x0F)<<16 | uint32(p[9]>>4)<<20
		if !c.outgoing && slid == lidA {
			t.Fatalf("host 1 received a packet with its own SLID %#x (DLID %#x)", slid, dlid)
		}
		if c.outgoing && dlid == mcRed {
			sentMcast[fmt.Sprint(len(p))] = true
		}
	}
	if len(sentMcast) == 0 {
		t.Error("host 1 sent no multicast packets (ARP/ND) on the underlay")
	}
	for i, d := range ds {
		c := d.counters(t, 0)
		if c["rx_mcastbcast"] == 0 {
			t.Errorf("host %d received no broadcast or multicast frame", i+1)
		}
		if h := d.hfiCounters(t); h["PortRcvErrors"] != 0 {
			t.Errorf("host %d: HFI receive errors %d", i+1, h["PortRcvErrors"])
		}
	}
}
