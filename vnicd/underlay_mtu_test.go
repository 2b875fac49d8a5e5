package vnicd

import "testing"

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
		cfg, err := ParseConfig([]byte(tc.text))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.underlayIPHeaderLen(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
