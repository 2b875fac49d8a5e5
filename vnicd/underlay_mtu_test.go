package vnicd

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// warnMTU adds the underlay's IP header to a full-size packet. With the
// default listen [::] it took 40 bytes (IPv6) even when the peers, and so
// the underlay warnMTU checks (the route to the first peer), are IPv4: a
// warning 20 bytes too early, with an eth_mtu_that_fits 20 bytes too low.
func TestUnderlayIPHeaderLen(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int
	}{
		{"default listen, IPv4 peer", "node: {name: a, lid: 2}\npeers: [{lid: 3, address: '10.0.0.3'}]\n", 20},
		{"default listen, IPv6 peer", "node: {name: a, lid: 2}\npeers: [{lid: 3, address: 'fd00::3'}]\n", 40},
		{"default listen, no peer", "node: {name: a, lid: 2}\n", 40},
		{"0.0.0.0 listen", "node: {name: a, lid: 2, listen: '0.0.0.0'}\npeers: [{lid: 3, address: '10.0.0.3'}]\n", 20},
		{"IPv4 listen", "node: {name: a, lid: 2, listen: '10.0.0.2'}\npeers: [{lid: 3, address: '10.0.0.3'}]\n", 20},
		{"IPv6 listen", "node: {name: a, lid: 2, listen: 'fd00::2'}\npeers: [{lid: 3, address: 'fd00::3'}]\n", 40},
	} {
		cfg, err := config.Parse([]byte(tc.text))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.UnderlayIPHeaderLen(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The start-up warning's eth_mtu_that_fits was the configured eth_mtu less
// its packet's excess over the underlay MTU: the pad (rounding the packet to
// 8 bytes) of the configured size made it up to 7 bytes too low, and
// different for two VNICs on one underlay (1308 for eth_mtu 1500, 1304 for
// 9000 on an IPv6 underlay of MTU 1400; 1309 fits).
func TestEthMTUThatFits(t *testing.T) {
	for _, ipHdr := range []int{20, 40} {
		for mtu := 1280; mtu <= 9000; mtu++ {
			m := ethMTUThatFits(mtu, ipHdr)
			if got := encap.VNICPacketLen(m+engine.MaxFrameOverMTU) + 8 + ipHdr; got > mtu {
				t.Fatalf("underlay MTU %d, IP header %d: eth_mtu %d gives %d bytes, too many", mtu, ipHdr, m, got)
			}
			if got := encap.VNICPacketLen(m+1+engine.MaxFrameOverMTU) + 8 + ipHdr; got <= mtu {
				t.Fatalf("underlay MTU %d, IP header %d: eth_mtu %d, but %d fits too (%d bytes)", mtu, ipHdr, m, m+1, got)
			}
		}
	}
	if got := ethMTUThatFits(1400, 40); got != 1309 {
		t.Errorf("underlay MTU 1400, IPv6: %d, want 1309", got)
	}
	if got := ethMTUThatFits(100, 40); got != engine.MinEthMTU {
		t.Errorf("underlay MTU 100: %d, want the smallest eth_mtu %d", got, engine.MinEthMTU)
	}
}
