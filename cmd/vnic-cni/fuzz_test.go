package main

import "testing"

// FuzzLoadConf: any network config from a runtime is refused with an error
// or loaded with what vnic_add needs from every config, a vesw and a socket
// (pkey is required by a static vnicd only); it never panics. vnicd checks
// the values themselves; its control-socket fuzz target covers that.
func FuzzLoadConf(f *testing.F) {
	for _, s := range []string{
		`{"cniVersion": "1.0.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001", "mtu": 1400, "socket": "/run/opavnic/a.sock", "ipam": {"type": "host-local"}}`,
		`{"name": "red", "vesw": "1", "pkey": 32769, "mcast_dlid": "0xF00001", "mac": "02:00:00:00:00:01", "socket": "/s"}`,
		`{"name": "red", "vesw": null, "pkey": 1, "socket": "/s"}`,
		`{"name": "red", "vesw": 1,`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := loadConf(b)
		if err == nil && (c.VESW == nil || c.Socket == "") {
			t.Fatalf("%q loaded without vesw or socket: %+v", b, c)
		}
	})
}
