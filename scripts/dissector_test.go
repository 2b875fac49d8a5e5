// Package scripts holds tests of the scripts beside it: the Wireshark Lua
// dissector opavnic.lua, run through tshark on a capture the test writes.
package scripts_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
)

// pcapFile builds a classic pcap (LINKTYPE_ETHERNET) of UDP datagrams to
// port 4793, one per payload.
func pcapFile(payloads [][]byte) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 24)
	le.PutUint32(hdr[0:], 0xa1b2c3d4)
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], 65535)
	le.PutUint32(hdr[20:], 1) // Ethernet
	b.Write(hdr)
	for i, p := range payloads {
		f := udpFrame(p)
		rec := make([]byte, 16)
		le.PutUint32(rec[0:], uint32(1700000000+i))
		le.PutUint32(rec[8:], uint32(len(f)))
		le.PutUint32(rec[12:], uint32(len(f)))
		b.Write(rec)
		b.Write(f)
	}
	return b.Bytes()
}

// udpFrame wraps payload in Ethernet, IPv4 (10.0.0.1 -> 10.0.0.2) and UDP
// (4793 -> 4793, no checksum).
func udpFrame(payload []byte) []byte {
	be := binary.BigEndian
	f := make([]byte, 14+20+8+len(payload))
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:34]
	ip[0] = 0x45
	be.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(be.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	be.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	be.PutUint16(udp[0:], 4793)
	be.PutUint16(udp[2:], 4793)
	be.PutUint16(udp[4:], uint16(8+len(payload)))
	copy(f[42:], payload)
	return f
}

// vnicPacket encapsulates an IPv4/UDP Ethernet frame of n bytes.
func vnicPacket(t *testing.T, n int, p encap.VNICParams) []byte {
	t.Helper()
	frame := make([]byte, n)
	copy(frame, []byte{0x02, 0x00, 0x01, 0x23, 0x45, 0x67, 0x02, 0x00, 0x01, 0x10, 0x00, 0x00, 0x08, 0x00})
	frame[14] = 0x45
	binary.BigEndian.PutUint16(frame[16:], uint16(n-14))
	frame[22] = 64
	frame[23] = 17
	copy(frame[26:], []byte{192, 168, 101, 1, 192, 168, 101, 2})
	binary.BigEndian.PutUint16(frame[34:], 5000)
	binary.BigEndian.PutUint16(frame[36:], 5001)
	binary.BigEndian.PutUint16(frame[38:], uint16(n-34))
	buf := make([]byte, encap.Headroom+max(n, encap.MinFrameLen)+encap.Tailroom)
	copy(buf[encap.Headroom:], frame)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, n, &p)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

func TestLuaDissector(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark is missing (apt-get install tshark)")
		}
		t.Skip("tshark is not installed (apt-get install tshark; scripts/deps.sh installs it as root)")
	}
	vp := encap.VNICParams{SLID: 0x10, DLID: 0xE12345, // DLID[23:20] = 0xE in QW1
		SC: 3, RC: 2, PKey: 0x8001, Entropy: 0x5A, VESWID: 0x123}
	good := vnicPacket(t, 98, vp)
	bad := vnicPacket(t, 98, vp)
	bad[len(bad)-3] ^= 0xFF // a byte of the ICRC
	// BECN, FECN, SC and Age are variant: changing them keeps the ICRC good.
	variant := vnicPacket(t, 42, vp) // a runt, padded to 60
	h := encap.Header16B(variant)
	h.SetBECN(true)
	h.SetFECN(true)
	h.SetSC(17)
	h.SetAge(9)

	mad := make([]byte, 256)
	copy(mad, []byte{0x80, 0x34, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03})
	mgmt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: 1, DLID: 0xC000, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
	if err != nil {
		t.Fatal(err)
	}
	smp := make([]byte, 256)
	copy(smp, []byte{0x80, 0x81, 0x80, 0x81, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0x00, 0x15, 0, 0, 0, 0, 0, 1})
	smpPkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: 0x9ABCDE, DLID: 1, PKey: 0x7FFF, DestQPN: 0, SrcQPN: 0}, smp)
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "opavnic.pcap")
	if p := os.Getenv("OPAVNIC_PCAP_OUT"); p != "" {
		path = p // keep the capture, to look at it in Wireshark
	}
	if err := os.WriteFile(path, pcapFile([][]byte{good, bad, variant, mgmt, smpPkt}), 0o644); err != nil {
		t.Fatal(err)
	}
	fields := []string{"opa16b.slid", "opa16b.dlid", "opa16b.len", "opa16b.becn", "opa16b.sc", "opa16b.rc",
		"opa16b.fecn", "opa16b.l2", "opa16b.lt", "opa16b.l4", "opa16b.pkey", "opa16b.entropy", "opa16b.age",
		"opa16b.vnic.vesw_id", "opa16b.pad", "opa16b.icrc.status", "opa16b.tail.pad", "opa16b.tail.lt",
		"opa16b.dqpn", "opa16b.sqpn", "opa16b.mad.base_version", "opa16b.mad.class", "opa16b.mad.method",
		"opa16b.mad.status", "opa16b.mad.tid", "opa16b.mad.attr_id", "opa16b.mad.attr_name", "opa16b.mad.attr_mod",
		"ip.dst", "udp.length"}
	args := []string{"-X", "lua_script:opavnic.lua", "-r", path, "-T", "fields", "-E", "separator=|", "-E", "occurrence=l"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tshark, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no user profile
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("tshark: %v\n%s\n%s", err, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 {
		t.Fatalf("tshark printed %d lines, want 5:\n%s", len(lines), out)
	}
	got := make([]map[string]string, len(lines))
	for i, l := range lines {
		vals := strings.Split(l, "|")
		got[i] = map[string]string{}
		for j, f := range fields {
			if j < len(vals) {
				got[i][f] = vals[j]
			}
		}
	}
	t.Logf("tshark fields:\n%s", out)
	for _, tc := range []struct {
		name string
		pkt  int
		want map[string]string
	}{
		{"vnic header", 0, map[string]string{
			"opa16b.slid": "0x00000010", "opa16b.dlid": "0x00e12345", "opa16b.len": "16", "opa16b.becn": "0",
			"opa16b.sc": "3", "opa16b.rc": "2", "opa16b.fecn": "0", "opa16b.l2": "2", "opa16b.lt": "1",
			"opa16b.l4": "0x00000078", "opa16b.pkey": "0x00008001", "opa16b.entropy": "0x0000005a", "opa16b.age": "0",
			"opa16b.vnic.vesw_id": "291", "opa16b.icrc.status": "good", "opa16b.tail.pad": "5", "opa16b.tail.lt": "1",
			"opa16b.pad": "0000000000",    // 20 + 98 + 5 = 123 bytes: pad 5, LEN 16
			"ip.dst":     "192.168.101.2", // the inner frame, handed to eth_withoutfcs
		}},
		{"bad icrc", 1, map[string]string{"opa16b.icrc.status": "bad", "ip.dst": "192.168.101.2"}},
		{"variant fields", 2, map[string]string{"opa16b.becn": "1", "opa16b.fecn": "1", "opa16b.sc": "17",
			"opa16b.age": "9", "opa16b.len": "11", "opa16b.pad": "000000", "opa16b.tail.pad": "3", "opa16b.icrc.status": "good"}},
		{"vema mad", 3, map[string]string{"opa16b.l4": "0x00000008", "opa16b.lt": "0", "opa16b.dlid": "0x0000c000",
			"opa16b.dqpn": "1", "opa16b.sqpn": "1", "opa16b.mad.base_version": "0x80", "opa16b.mad.class": "0x34",
			"opa16b.mad.method": "0x01", "opa16b.mad.tid": "0x1122334455667788", "opa16b.mad.attr_id": "0x0011",
			"opa16b.mad.attr_name": "VESWPortInfo", "opa16b.mad.attr_mod": "0x00000003",
			"opa16b.icrc.status": "good", "opa16b.tail.pad": "3", "ip.dst": "10.0.0.2"}},
		{"smp", 4, map[string]string{"opa16b.slid": "0x009abcde", "opa16b.mad.class": "0x81", "opa16b.mad.method": "0x81",
			"opa16b.mad.status": "0x8000", "opa16b.mad.attr_name": "PortInfo", "opa16b.dqpn": "0", "opa16b.icrc.status": "good"}},
	} {
		for k, v := range tc.want {
			if got[tc.pkt][k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got[tc.pkt][k], v)
			}
		}
	}
}
