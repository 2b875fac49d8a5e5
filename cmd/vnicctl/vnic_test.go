package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseVNICAdd(t *testing.T) {
	var errb bytes.Buffer
	a, ok := parseVNICAdd(strings.Fields("--vesw 1 --pkey 0x8001 --ifname eth1 --netns blue --address 10.1.0.5/24 --address fd00::5/64 --eth-mtu 1400 --mcast-dlid 0xF00001"), &errb)
	if !ok {
		t.Fatal(errb.String())
	}
	b, _ := json.Marshal(a)
	want := `{"vesw":"1","pkey":"0x8001","eth_mtu":"1400","mcast_dlid":"0xF00001","ifname":"eth1","netns":"blue","addresses":["10.1.0.5/24","fd00::5/64"]}`
	if string(b) != want {
		t.Errorf("args %s\nwant %s", b, want)
	}
	for _, tc := range []struct{ args, err string }{
		{"--pkey 0x8001", "needs --vesw"},
		{"", "needs --vesw"},
		{"--vesw 1 --pkey 1 extra", `takes flags only, not "extra"`},
		{"--colour red", "flag provided but not defined"},
	} {
		errb.Reset()
		if _, ok := parseVNICAdd(strings.Fields(tc.args), &errb); ok || !strings.Contains(errb.String(), tc.err) {
			t.Errorf("%q: ok %v, stderr %q; want %q", tc.args, ok, errb.String(), tc.err)
		}
	}
}

func TestParseVNICDel(t *testing.T) {
	var errb bytes.Buffer
	if a, ok := parseVNICDel([]string{"3"}, &errb); !ok || a.VPort == nil || *a.VPort != 3 {
		t.Errorf("del 3: %+v %v %s", a, ok, errb.String())
	}
	if a, ok := parseVNICDel([]string{"--owner", "x"}, &errb); !ok || a.Owner != "x" || a.VPort != nil {
		t.Errorf("del --owner x: %+v %v", a, ok)
	}
	for _, tc := range []struct{ args, err string }{
		{"", "needs a VPORT or --owner"},
		{"300", `VPORT "300" is not a number 0..254`},
		{"1 2", "takes one VPORT"},
		{"--owner x 1", "takes one VPORT"},
	} {
		errb.Reset()
		if _, ok := parseVNICDel(strings.Fields(tc.args), &errb); ok || !strings.Contains(errb.String(), tc.err) {
			t.Errorf("%q: ok %v, stderr %q; want %q", tc.args, ok, errb.String(), tc.err)
		}
	}
	errb.Reset()
	if code := run([]string{"--socket", "/nonexistent", "vnic"}, &errb, &errb); code != 2 || !strings.Contains(errb.String(), "add or del") {
		t.Errorf("vnic alone: %d %q", code, errb.String())
	}
}
