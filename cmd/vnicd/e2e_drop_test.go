package main

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EMalformedDatagrams sends hand-made datagrams to a running vnicd's HFI
// port and checks that each lands in the right drop counter. The test itself
// plays host a: it holds a's fabric endpoint, so its datagrams pass the
// source check unless a case breaks it on purpose.
func TestE2EMalformedDatagrams(t *testing.T) {
	e2etest.Require(t, "ip")
	a, b := nstest.NewNS(t, "a"), nstest.NewNS(t, "b")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	db := e2etest.Start(t, b, e2etest.Host{
		Name: "host-b", LID: lidB, Listen: "10.200.0.2:4793",
		Peers:  map[int]string{lidA: "10.200.0.1:4793"},
		Groups: map[int][]int{mcRed: {lidA, lidB}},
		VNICs: []e2etest.VNIC{{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0", EthMTU: attackMTU,
			Addrs: []string{"192.168.101.2/24"}}},
	})
	var peer, stranger *net.UDPConn
	if err := a.Do(func() (err error) {
		if peer, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 200, 0, 1), Port: 4793}); err != nil {
			return err
		}
		stranger, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 200, 0, 1), Port: 4794})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	defer stranger.Close()
	dst := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.200.0.2:4793"))

	frame := testFrame(encap.MACForLID(lidB, 1), 98) // to b's vnic0 MAC
	build := func(dlid uint32, pkey encap.PKey, vesw encap.VESWID) []byte {
		return vnicPacket(t, frame, encap.VNICParams{SLID: lidA, DLID: dlid, PKey: pkey, VESWID: vesw})
	}
	good := build(lidB, 0x8001, 1)
	badLen := append(append([]byte(nil), good...), make([]byte, 8)...)
	badICRC := append([]byte(nil), good...)
	badICRC[40] ^= 0x01
	badL2 := append([]byte(nil), good...)
	encap.Header16B(badL2).SetL2(1)
	reseal(badL2)
	unknownL4 := append([]byte(nil), good...)
	encap.Header16B(unknownL4).SetL4(0x42)
	reseal(unknownL4)
	wrongDLID := build(0x77, 0x8001, 1)

	cases := []struct {
		name    string
		pkt     []byte
		from    *net.UDPConn
		counter string // HFI counter, or "port:" + VNIC counter
	}{
		{"short", good[:10], peer, "rcv_malformed"},
		{"bad LEN", badLen, peer, "rcv_malformed"},
		{"bad L2", badL2, peer, "rcv_malformed"},
		{"bad ICRC", badICRC, peer, "rcv_bad_icrc"},
		{"unknown source", good, stranger, "rcv_bad_source"},
		{"wrong DLID", wrongDLID, peer, "rcv_bad_dlid"},
		{"unknown L4", unknownL4, peer, "rcv_unknown_l4"},
		{"wrong vesw", build(lidB, 0x8001, 7), peer, "port:rx_bad_veswid"},
		{"wrong PKEY", build(lidB, 0x8009, 1), peer, "port:rx_bad_pkey"},
		{"good", good, peer, "port:rx_packets"},
	}
	read := func(name string) uint64 { return fateCounters(t, db)[name] }
	for _, tc := range cases {
		// The flood test's oracle agrees with each hand-made case.
		if fate := attackFate(tc.pkt, tc.from == peer); fate != tc.counter && !(fate == fateDeliver && tc.name == "good") {
			t.Errorf("%s: attackFate says %s", tc.name, fate)
		}
		before := read(tc.counter)
		beforeErr := db.HFICounters(t)["PortRcvErrors"]
		const n = 5
		for range n {
			if _, err := tc.from.WriteToUDP(tc.pkt, dst); err != nil {
				t.Fatal(err)
			}
		}
		var got uint64
		waitfor.Poll(3*time.Second, func() bool { got = read(tc.counter) - before; return got >= n })
		if got != n {
			t.Errorf("%s: %s rose by %d, want %d", tc.name, tc.counter, got, n)
		}
		errRise := db.HFICounters(t)["PortRcvErrors"] - beforeErr
		if hfiCheck := tc.counter[:5] != "port:"; hfiCheck && errRise != n || !hfiCheck && errRise != 0 {
			t.Errorf("%s: PortRcvErrors rose by %d", tc.name, errRise)
		}
	}
	// The daemon is still alive and serving.
	if _, err := b.Exec(context.Background(), "ip", "link", "show", "vnic0"); err != nil {
		t.Fatal(err)
	}
}
