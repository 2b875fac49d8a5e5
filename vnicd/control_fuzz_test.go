package vnicd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/ctl"
)

// FuzzControlRequest writes arbitrary bytes to a running daemon's control
// socket (a static daemon on in-memory devices, so vnic_add and vnic_del
// really change its state) and checks the protocol's promises: exactly one
// answer line, a JSON Response that is either ok or carries an error, and a
// daemon that still answers afterwards.
func FuzzControlRequest(f *testing.F) {
	sock := startFakeDaemon(f, fakeStatic)
	for _, s := range []string{
		`{"cmd":"commands"}`,
		`{"cmd":"vnics"}`,
		`{"cmd":"counters","args":{"vport":0}}`,
		`{"cmd":"counters","args":{"vport":-1}}`,
		`{"cmd":"hfi"}`,
		`{"cmd":"fabric"}`,
		`{"cmd":"vesws"}`,
		`{"cmd":"path","args":{"to":"0x20"}}`,
		`{"cmd":"vnic_add","args":{"vesw":1,"pkey":"0x8001","mcast_dlid":"0xF00001","ifname":"eth1","addresses":["10.1.0.5/24"],"owner":"cni:n:c1:eth1"}}`,
		`{"cmd":"vnic_add","args":{"vesw":70000,"pkey":"0x10000","vport":300}}`,
		`{"cmd":"vnic_add","args":{"vesw":2,"pkey":2,"mtu":99999,"mac":"ff:ff:ff:ff:ff:ff"}}`,
		`{"cmd":"vnic_del","args":{"owner":"cni:n:c1:eth1"}}`,
		`{"cmd":"vnic_del","args":{"vport":1}}`,
		`{"cmd":"vnic_gc","args":{"prefix":"cni:n:","keep":["cni:n:c2:eth2"]}}`,
		`{"cmd":"nope"}`,
		`{"cmd":"vnics"}` + "\n" + `{"cmd":"vnics"}`,
		`{"cmd":`,
		`[]`,
		"\x00\xff\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		resp, err := roundTrip(sock, req)
		if err != nil {
			t.Fatalf("request %q: %v", req, err)
		}
		if n := bytes.Count(resp, []byte("\n")); n != 1 || resp[len(resp)-1] != '\n' {
			t.Fatalf("request %q: answer is not one line: %q", req, resp)
		}
		var r ctl.Response
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("request %q: answer is not JSON: %q", req, resp)
		}
		if r.OK == (r.Error != "") {
			t.Fatalf("request %q: ok=%v with error %q", req, r.OK, r.Error)
		}
		if err := ctl.Call(sock, ctl.CmdVNICs, nil, new([]ctl.VNICStatus)); err != nil {
			t.Fatalf("after request %q the daemon does not answer: %v", req, err)
		}
	})
}

// roundTrip sends raw bytes on one connection, closes its write side and
// reads the whole answer.
func roundTrip(sock string, req []byte) ([]byte, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(c, 64<<20))
}
