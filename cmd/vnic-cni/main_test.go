package main

import (
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func TestLoadConf(t *testing.T) {
	c, err := loadConf([]byte(`{"cniVersion": "1.0.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001",
		"mtu": 1400, "socket": "/run/opavnic/vnicd-a.sock", "ipam": {"type": "host-local"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.VESW != float64(1) || c.PKey != "0x8001" || c.MTU != float64(1400) || c.Socket != "/run/opavnic/vnicd-a.sock" || c.IPAM.Type != "host-local" {
		t.Errorf("conf %+v", c)
	}
	for _, tc := range []struct{ text, err string }{
		{`{"name": "red", "pkey": 1, "socket": "/s"}`, "needs vesw"},
		{`{"name": "red", "vesw": 1,`, "bad network config"},
	} {
		if _, err := loadConf([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want %q", tc.text, err, tc.err)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want uint64
		ok   bool
	}{{float64(3), 3, true}, {"0x8001", 0x8001, true}, {"12", 12, true}, {float64(1.5), 0, false}, {"x", 0, false}, {nil, 0, false}} {
		if got, ok := number(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("number(%v) = %d, %v", tc.in, got, ok)
		}
	}
	// A network of a managed node needs no pkey.
	if c, err := loadConf([]byte(`{"name": "red", "vesw": 1, "socket": "/s"}`)); err != nil || c.PKey != nil {
		t.Errorf("vesw only: %+v, %v", c, err)
	}
}

func TestOwner(t *testing.T) {
	o := owner("red", "abc123", "eth0")
	if o != "cni:red:abc123:eth0" || !strings.HasPrefix(o, ownerPrefix("red")) || strings.HasPrefix(o, ownerPrefix("re")) {
		t.Errorf("owner %q", o)
	}
}

// TestExampleConfList parses configs/cni/opavnic.conflist as a runtime would.
func TestExampleConfList(t *testing.T) {
	l, err := libcni.ConfListFromFile("../../configs/cni/opavnic.conflist")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Plugins) != 1 || l.Plugins[0].Network.Type != "vnic-cni" {
		t.Fatalf("plugins %+v", l.Plugins)
	}
	c, err := loadConf(l.Plugins[0].Bytes)
	if err != nil || c.IPAM.Type != "host-local" || c.Socket == "" {
		t.Errorf("conf %+v, %v", c, err)
	}
}
