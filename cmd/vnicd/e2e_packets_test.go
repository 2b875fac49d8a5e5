package main

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/vema"
)

// Hand-made fabric datagrams for the tests that attack a running vnicd's HFI
// port (TestE2EMalformedDatagrams, TestE2EGarbageFlood). Host a (LID lidA)
// sends to host b (LID lidB), whose one VNIC is vport 0 on vesw 1 (red,
// PKEY 0x8001, multicast group mcRed) with eth_mtu attackMTU.

// attackMTU is the eth_mtu of host b's red port in those tests.
const attackMTU = 1400

// testFrame returns an n-byte Ethernet frame (n >= 14) from host a's red MAC
// to dst, with the IPv4 ethertype and a zero payload.
func testFrame(dst [6]byte, n int) []byte {
	f := make([]byte, n)
	src := encap.MACForLID(lidA, 1)
	copy(f, dst[:])
	copy(f[6:], src[:])
	f[12], f[13] = 0x08, 0x00
	return f
}

// vnicPacket wraps frame into a 16B VNIC packet with p (the encoder pads a
// frame shorter than 60 bytes) and returns it in a buffer of its own.
func vnicPacket(t testing.TB, frame []byte, p encap.VNICParams) []byte {
	t.Helper()
	buf := make([]byte, encap.Headroom+max(len(frame), encap.MinFrameLen)+encap.Tailroom)
	copy(buf[encap.Headroom:], frame)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, len(frame), &p)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// reseal recomputes the ICRC of p after a change to its header or payload,
// so that the change, not the ICRC, is what the receiver sees, and returns p.
func reseal(p []byte) []byte {
	ic := encap.ICRC(p)
	n := len(p)
	p[n-5], p[n-4], p[n-3], p[n-2] = byte(ic), byte(ic>>8), byte(ic>>16), byte(ic>>24)
	return p
}

// rawVNIC builds a VNIC packet by hand around a frame of any length (the
// encoder pads short frames; a runt must be made this way): hdr's first 20
// bytes (LRH and vesw_id), the frame, zero pad, ICRC and tail, LEN set.
func rawVNIC(hdr, frame []byte) []byte {
	pad := encap.VNICPad(len(frame))
	n := encap.VNICHeaderLen + len(frame) + pad + encap.TrailerLen
	p := make([]byte, n)
	copy(p, hdr[:encap.VNICHeaderLen])
	copy(p[encap.VNICHeaderLen:], frame)
	p[n-1] = 0x40 | byte(pad) // LT 01, pad count
	encap.Header16B(p).SetLen(n / 8)
	return reseal(p)
}

// Drop fates of a datagram at host b: the name of the counter that counts
// it, as `vnicctl hfi` (HFI) or `vnicctl counters 0` ("port:") shows it.
const (
	fateMalformed = "rcv_malformed"
	fateBadICRC   = "rcv_bad_icrc"
	fateBadSource = "rcv_bad_source"
	fateBadDLID   = "rcv_bad_dlid"
	fateUnknownL4 = "rcv_unknown_l4"
	fateBadTail   = "vnic_rx_bad_tail"
	fateMgmtBad   = "mgmt_bad"
	fateUntrusted = "mgmt_untrusted"
	fateBadVESW   = "port:rx_bad_veswid"
	fateBadPKey   = "port:rx_bad_pkey"
	fateOversize  = "port:rx_oversize"
	fateRunt      = "port:rx_runt"
	fateDeliver   = "deliver" // not a drop: the frame goes to the TAP
)

// hfiFates are the fates the HFI's receive checks decide, each of which
// also counts in PortRcvErrors; the others pass the HFI (PortRcvPkts).
var hfiFates = map[string]bool{fateMalformed: true, fateBadICRC: true, fateBadSource: true, fateBadDLID: true, fateUnknownL4: true}

// dropFates lists every drop fate in a fixed order.
var dropFates = []string{fateMalformed, fateBadICRC, fateBadSource, fateBadDLID, fateUnknownL4,
	fateBadTail, fateMgmtBad, fateUntrusted, fateBadVESW, fateBadPKey, fateOversize, fateRunt}

// attackFate is the test's oracle: what host b does with datagram p, by
// docs/wire.md §7 (length, L2, ICRC, source, DLID, L4), then the VNIC port's
// checks (tail, vesw, PKEY, size) or the management layer's. fromPeer
// says it came from host a's endpoint. Host b runs in static mode with no
// trusted manager, so every well-formed MAD is untrusted (a response
// matches no request of b's).
func attackFate(p []byte, fromPeer bool) string {
	h, err := encap.Parse(p, true)
	if errors.Is(err, encap.ErrICRC) {
		return fateBadICRC
	}
	if err != nil {
		return fateMalformed
	}
	if !fromPeer || h.SLID() != lidA {
		return fateBadSource
	}
	if d := h.DLID(); d != lidB && d != mcRed && d != encap.LID16BPermissive {
		return fateBadDLID
	}
	switch h.L4() {
	case encap.L4Ethernet:
		frame, vesw, err := encap.VNICFrame(p)
		switch {
		case err != nil:
			return fateBadTail
		case vesw != 1:
			return fateBadVESW
		case h.PKey() != 0x8001:
			return fateBadPKey
		case len(frame) > attackMTU+18:
			return fateOversize
		case len(frame) < encap.MinFrameLen:
			return fateRunt
		}
		return fateDeliver
	case encap.L4FabricMgt:
		if mp, err := encap.MgmtPayload(p); err != nil || len(mp.MAD) < vema.MADHeaderLen {
			return fateMgmtBad
		}
		return fateUntrusted
	}
	return fateUnknownL4
}

// fateCounters reads d's HFI counters and vport 0's counters (with the
// "port:" prefix) by fate name.
func fateCounters(t *testing.T, d *e2etest.Daemon) map[string]uint64 {
	t.Helper()
	m := d.HFICounters(t)
	for k, v := range d.Counters(t, 0) {
		m["port:"+k] = v
	}
	return m
}

// envInt returns the integer in the environment variable name, or def when
// it is unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}
