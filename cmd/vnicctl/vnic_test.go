package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseVNICAdd(t *testing.T) {
	var errb bytes.Buffer
	a, err := parseVNICAdd(strings.Fields("--vesw 1 --pkey 0x8001 --ifname eth1 --netns blue --address 10.1.0.5/24 --address fd00::5/64 --eth-mtu 1400 --mcast-dlid 0xF00001"), &errb)
	if err != nil {
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
		if _, err := parseVNICAdd(strings.Fields(tc.args), &errb); err != errUsage || !strings.Contains(errb.String(), tc.err) {
			t.Errorf("%q: %v, stderr %q; want %q", tc.args, err, errb.String(), tc.err)
		}
	}
}

func TestParseVNICDel(t *testing.T) {
	var errb bytes.Buffer
	if a, err := parseVNICDel([]string{"3"}, &errb); err != nil || a.VPort == nil || *a.VPort != 3 {
		t.Errorf("del 3: %+v %v %s", a, err, errb.String())
	}
	if a, err := parseVNICDel([]string{"--owner", "x"}, &errb); err != nil || a.Owner != "x" || a.VPort != nil {
		t.Errorf("del --owner x: %+v %v", a, err)
	}
	for _, tc := range []struct{ args, err string }{
		{"", "needs a VPORT or --owner"},
		{"300", `VPORT "300" is not a number 0..254`},
		{"1 2", "takes one VPORT"},
		{"--owner x 1", "takes one VPORT"},
	} {
		errb.Reset()
		if _, err := parseVNICDel(strings.Fields(tc.args), &errb); err != errUsage || !strings.Contains(errb.String(), tc.err) {
			t.Errorf("%q: %v, stderr %q; want %q", tc.args, err, errb.String(), tc.err)
		}
	}
	errb.Reset()
	if code := run([]string{"--socket", "/nonexistent", "vnic"}, &errb, &errb); code != 2 || !strings.Contains(errb.String(), "add or del") {
		t.Errorf("vnic alone: %d %q", code, errb.String())
	}
}

// TestVNICHelp: vnicctl's usage says "see vnicctl vnic add --help", but
// that help needed a daemon socket (with none in /run/opavnic it printed
// "no daemon socket" and exited 1; with two, "several daemon sockets", 2),
// and when shown it exited 2, where vnicctl --help exits 0. Now vnic add and
// vnic del read their arguments first: --help prints the flags and exits 0,
// and a usage error is exit 2, with or without a daemon.
func TestVNICHelp(t *testing.T) {
	old := socketDir
	socketDir = t.TempDir() // no daemon socket in it
	t.Cleanup(func() { socketDir = old })
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"vnic", "add", "--help"}, 0, "-mcast-dlid"},
		{[]string{"vnic", "add", "-h"}, 0, "-vesw"},
		{[]string{"vnic", "del", "--help"}, 0, "-owner"},
		{[]string{"--json", "vnic", "add", "--help"}, 0, "-vesw"},
		{[]string{"vnic", "add", "--pkey", "0x8001"}, 2, "needs --vesw"},
		{[]string{"vnic", "del"}, 2, "needs a VPORT or --owner"},
		{[]string{"vnic", "add", "--vesw", "1"}, 1, "no daemon socket"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("vnicctl %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr.String(), tc.code, tc.want)
		}
	}
}
