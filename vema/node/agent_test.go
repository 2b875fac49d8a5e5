package node

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// The agent's vectors: every request and every expected response is written
// byte by byte at the offsets of docs/linux-compat.md §4.2 and §4.5-§4.9.

// vemaReq returns a 2048-byte VEMA request: vendor header by hand, then data.
func vemaReq(method byte, attr uint16, attrMod uint32, data []byte) []byte {
	b := make([]byte, vema.MADSize)
	put(b, 0, 0x80, 0x34, 0x80, method)                       // base, class, class_version, method
	put(b, 8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08) // tid
	put(b, 16, byte(attr>>8), byte(attr))                     // attr_id
	put(b, 18, 0xAB, 0xCD)                                    // resv: echoed
	put(b, 20, byte(attrMod>>24), byte(attrMod>>16), byte(attrMod>>8), byte(attrMod))
	put(b, 24, 0x01, 0x00, 0x00, 0x00) // rmpp_version 1
	put(b, 36, 0x00)                   // reserved
	put(b, 37, 0x00, 0x06, 0x6A)       // OUI
	copy(b[40:], data)
	return b
}

// vemaResp is what the kernel answers to req: its first 40 bytes, method
// GetResp, the status, then data (zero-filled to 2008 bytes).
func vemaResp(req []byte, status uint16, data []byte) []byte {
	b := make([]byte, vema.MADSize)
	copy(b, req[:40])
	put(b, 3, 0x81)
	put(b, 4, byte(status>>8), byte(status))
	copy(b[40:], data)
	return b
}

func check(t *testing.T, a *Agent, name string, req, want []byte) {
	t.Helper()
	got, ok := a.Handle(req)
	if !ok {
		t.Fatalf("%s: no response", name)
	}
	if !bytes.Equal(got, want) {
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Fatalf("%s: len %d (want %d), first difference at byte %d (data %d): got\n%s\nwant\n%s", name,
					len(got), len(want), i, i-40, hex.Dump(got[i&^15:min(len(got), i&^15+64)]), hex.Dump(want[i&^15:min(len(want), i&^15+64)]))
			}
		}
		t.Fatalf("%s: response length %d, want %d", name, len(got), len(want))
	}
}

// fakePorts is a minimal PortController: one map, link always up.
type fakePorts struct {
	info  map[uint8]*vema.VESWPortInfo
	table map[uint8]MACTable
	uc    map[uint8]IfaceMACList
	sum   vema.SummaryCounters
	errs  vema.ErrorCounters
}

func newFakePorts() *fakePorts {
	return &fakePorts{info: map[uint8]*vema.VESWPortInfo{}, table: map[uint8]MACTable{}, uc: map[uint8]IfaceMACList{}}
}

func (f *fakePorts) VESWPortInfo(v uint8) (vema.VESWPortInfo, bool) {
	i, ok := f.info[v]
	if !ok {
		return vema.VESWPortInfo{}, false
	}
	r := *i
	r.VPort.OperState, r.VPort.EthLinkStatus = vema.StateDropAll, vema.EthLinkDown
	if r.VPort.ConfigState == vema.StateForwarding {
		r.VPort.OperState, r.VPort.EthLinkStatus = vema.StateForwarding, vema.EthLinkUp
	}
	r.VPort.MACTblDigest = f.table[v].Digest
	r.VPort.UCMACsGenCount = f.uc[v].GenCount
	return r, true
}
func (f *fakePorts) SetVESWPortInfo(v uint8, i *vema.VESWPortInfo) error {
	c := *i
	f.info[v] = &c
	return nil
}
func (f *fakePorts) MACTable(v uint8) (MACTable, bool) {
	if _, ok := f.info[v]; !ok {
		return MACTable{}, false
	}
	return f.table[v], true
}
func (f *fakePorts) SetMACTable(v uint8, t MACTable) error { f.table[v] = t; return nil }
func (f *fakePorts) IfaceMACs(v uint8, mc bool) (IfaceMACList, bool) {
	if _, ok := f.info[v]; !ok {
		return IfaceMACList{}, false
	}
	if mc {
		return IfaceMACList{UC: [][6]byte{{0x01, 0, 0x5E, 0, 0, 1}}, GenCount: 3}, true
	}
	return f.uc[v], true
}
func (f *fakePorts) Counters(v uint8) (vema.SummaryCounters, vema.ErrorCounters, bool) {
	if _, ok := f.info[v]; !ok {
		return vema.SummaryCounters{}, vema.ErrorCounters{}, false
	}
	return f.sum, f.errs, true
}

// podData is the power-on VESWPortInfo (vema_get_pod_values) written out.
func podData() []byte {
	d := make([]byte, 280)
	put(d, 148, 0x05, 0xDC)    // vesw.eth_mtu 1500
	put(d, 152+14, 0x01, 0x01) // config_state, oper_state DROP_ALL
	put(d, 152+16, 0x08, 0x00) // max_mac_tbl_ent 2048
	put(d, 152+18, 0x01, 0x00) // max_smac_ent 256
	return d
}

// setInfoData is a VESWPortInfo Set with every byte distinct, read-only
// fields included (the agent must ignore them).
func setInfoData() []byte {
	d := make([]byte, 280)
	put(d, 0, 0x01, 0x23)              // fabric_id
	put(d, 2, 0x00, 0x05)              // vesw_id 5
	put(d, 4, seq(0xA0, 6)...)         // rsvd0 (stored, echoed)
	put(d, 10, 0x00, 0x05)             // def_port_mask
	put(d, 12, 0xB0, 0xB1)             // rsvd1
	put(d, 14, 0x80, 0x01)             // pkey
	put(d, 16, 0xC0, 0xC1, 0xC2, 0xC3) // rsvd2
	put(d, 20, 0x00, 0xF0, 0x00, 0x05) // u_mcast_dlid
	put(d, 24, 0x00, 0x00, 0x00, 0x07) // u_ucast_dlid[0]
	put(d, 28+4, 0x00, 0x01, 0x00, 0x08)
	put(d, 88, 0x00, 0x00, 0x01, 0x10) // rc
	put(d, 92, seq(0x30, 56)...)       // rsvd3
	put(d, 148, 0x23, 0x28)            // eth_mtu 9000
	put(d, 150, 0xEE, 0xEF)            // rsvd4
	v := 152
	put(d, v+0, 0x00, 0x00, 0x00, 0x09)             // port_num
	put(d, v+4, 0x07)                               // eth_link_status: read-only
	put(d, v+5, 0xD0, 0xD1, 0xD2)                   // rsvd0
	put(d, v+8, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55) // base_mac_addr
	put(d, v+14, 0x03, 0x07)                        // config_state FORWARDING, oper_state read-only
	put(d, v+16, 0x12, 0x34, 0x56, 0x78)            // max_mac_tbl_ent, max_smac_ent: read-only
	put(d, v+20, 0x99, 0x99, 0x99, 0x99)            // mac_tbl_digest: read-only
	put(d, v+24, 0xE0, 0xE1, 0xE2, 0xE3)            // rsvd1
	put(d, v+28, 0x00, 0x01, 0x00, 0x02)            // encap_slid
	put(d, v+32, seq(0x40, 36)...)                  // pcp maps and non-vlan sc/vl
	put(d, v+68, seq(0x70, 48)...)                  // rsvd2
	put(d, v+116, 0x77, 0x77, 0x66, 0x66)           // gen counts: read-only
	put(d, v+120, seq(0xF0, 8)...)                  // rsvd3
	return d
}

// setInfoEcho is what a Get returns after setInfoData: the writable fields
// as set, the read-only ones as the port has them.
func setInfoEcho(digest []byte, gen byte) []byte {
	d := setInfoData()
	v := 152
	put(d, v+4, 0x01)                    // eth_link_status UP
	put(d, v+15, 0x03)                   // oper_state FORWARDING
	put(d, v+16, 0x08, 0x00, 0x01, 0x00) // max_mac_tbl_ent 2048, max_smac_ent 256
	put(d, v+20, digest...)              // mac_tbl_digest
	put(d, v+116, 0x00, gen, 0x00, 0x00) // gen counts
	return d
}

func TestAgentClassPortInfo(t *testing.T) {
	a := NewAgent(newFakePorts(), nil)
	// Get before any Set: only the forced fields.
	req := vemaReq(0x01, 0x0001, 0, nil)
	w := make([]byte, 80)
	put(w, 0, 0x80, 0x80)             // base_version, class_version
	put(w, 2, 0xFF, 0x01)             // cap_mask: 255 vports, traps
	put(w, 4, 0x00, 0x00, 0x00, 0x12) // cap_mask2_resp_time 18
	check(t, a, "Get ClassPortInfo", req, vemaResp(req, 0, w))

	// Set stores all 80 bytes; the reply (a Get) forces the same four.
	d := seq(0x01, 80)
	put(d, 60, 0x00, 0x00, 0x00, 0x01) // trap_lid 1
	put(d, 76, 0x28)                   // trap_sl_rsvd: SL 5
	req = vemaReq(0x02, 0x0001, 0x77, d)
	w = bytes.Clone(d)
	put(w, 0, 0x80, 0x80, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x12)
	check(t, a, "Set ClassPortInfo", req, vemaResp(req, 0, w))
	if c := a.ClassPortInfo(); c.TrapLID != 1 || c.TrapSL() != 5 {
		t.Fatalf("stored trap_lid %v sl %d", c.TrapLID, c.TrapSL())
	}
}

func TestAgentVESWPortInfo(t *testing.T) {
	f := newFakePorts()
	a := NewAgent(f, nil)
	req := vemaReq(0x01, 0x0011, 0xFFFF0003, nil)
	check(t, a, "Get missing vport: power-on values, status 0", req, vemaResp(req, 0, podData()))

	req = vemaReq(0x02, 0x0011, 0x00000003, setInfoData())
	check(t, a, "Set creates vport 3", req, vemaResp(req, 0, setInfoEcho([]byte{0, 0, 0, 0}, 0)))
	if _, ok := f.info[3]; !ok {
		t.Fatal("vport 3 not created")
	}
	req = vemaReq(0x01, 0x0011, 0x00000103, nil) // bits above 7 ignored
	check(t, a, "Get vport 3", req, vemaResp(req, 0, setInfoEcho([]byte{0, 0, 0, 0}, 0)))

	// DeleteVESW: power-on values; the netdev stays (link state read back).
	req = vemaReq(0x02, 0x0015, 3, nil)
	del := podData()
	put(del, 152+4, 0x02) // eth_link_status DOWN: read back from the port, not a power-on value
	check(t, a, "DeleteVESW", req, vemaResp(req, 0, del))
	req = vemaReq(0x02, 0x0015, 4, nil)
	check(t, a, "DeleteVESW missing vport", req, vemaResp(req, 0x001C, nil))
}

func TestAgentMACEntries(t *testing.T) {
	f := newFakePorts()
	a := NewAgent(f, nil)
	req := vemaReq(0x02, 0x0012, 1, nil)
	check(t, a, "Set MAC entries, missing vport", req, vemaResp(req, 0x001C, nil))
	a.Handle(vemaReq(0x02, 0x0011, 1, setInfoData()))

	d := make([]byte, 8+3*16)
	put(d, 0, 0x00, 0x02)                          // offset 2
	put(d, 2, 0x00, 0x03)                          // num_entries 3
	put(d, 4, 0xDE, 0xAD, 0xBE, 0xEF)              // mac_tbl_digest
	put(d, 8, 0x00, 0x11, 0x22, 0x33, 0x44, 0x01)  // [2] mac
	put(d, 14, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF) // [2] mask (stored, unused)
	put(d, 20, 0x00, 0x00, 0x07, 0x00)             // [2] dlid_sd: DLID 7
	put(d, 24, 0, 0, 0, 0, 0, 0)                   // [3] zero MAC: delete / absent
	put(d, 40, 0x00, 0x11, 0x22, 0x33, 0x44, 0x02) // [4] mac
	put(d, 52, 0x00, 0x01, 0x00, 0x20)             // [4] dlid_sd: DLID 1, source-MAC bit
	req = vemaReq(0x02, 0x0012, 1, d)
	check(t, a, "Set MAC entries", req, vemaResp(req, 0, d))

	g := make([]byte, 8)
	put(g, 0, 0x00, 0x00, 0x00, 0x06) // offset 0, num 6
	req = vemaReq(0x01, 0x0012, 1, g)
	w := make([]byte, 8+6*16)
	put(w, 0, 0x00, 0x00, 0x00, 0x06, 0xDE, 0xAD, 0xBE, 0xEF)
	copy(w[8+2*16:], d[8:8+16])    // index 2
	copy(w[8+4*16:], d[8+32:8+48]) // index 4
	check(t, a, "Get MAC entries 0..5", req, vemaResp(req, 0, w))

	// Delete index 2 with a zero MAC; index 4 stays.
	del := make([]byte, 8+16)
	put(del, 0, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01)
	req = vemaReq(0x02, 0x0012, 1, del)
	check(t, a, "Set deletes index 2", req, vemaResp(req, 0, []byte{0, 2, 0, 1, 0, 0, 0, 1}))
	if len(f.table[1].Entries) != 1 {
		t.Fatalf("table after delete: %v", f.table[1].Entries)
	}

	// Bad ranges: status 0x001C (the Set fails with 0x000C, then the Get
	// that builds the reply says 0x001C), data zero.
	for name, h := range map[string][]byte{
		"offset+num > 2048": {0x07, 0xF8, 0x00, 0x09},
		"num > 125":         {0x00, 0x00, 0x00, 0x7E},
	} {
		req = vemaReq(0x02, 0x0012, 1, h)
		check(t, a, "Set "+name, req, vemaResp(req, 0x001C, nil))
		req = vemaReq(0x01, 0x0012, 1, h)
		check(t, a, "Get "+name, req, vemaResp(req, 0x001C, nil))
	}
	// The digest is visible in VESWPortInfo.
	req = vemaReq(0x01, 0x0011, 1, nil)
	check(t, a, "digest in VESWPortInfo", req, vemaResp(req, 0, setInfoEcho([]byte{0, 0, 0, 1}, 0)))
}

func TestAgentIfaceMACs(t *testing.T) {
	f := newFakePorts()
	a := NewAgent(f, nil)
	req := vemaReq(0x01, 0x0013, 2, nil)
	check(t, a, "ucast, missing vport", req, vemaResp(req, 0x001C, nil))
	a.Handle(vemaReq(0x02, 0x0011, 2, setInfoData()))
	base := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}

	// The netdev still has the EM's MAC: it is skipped, so the list is
	// empty, num_macs_in_msg is the count filled (0), tot = 1+0-1.
	f.uc[2] = IfaceMACList{DevAddrs: [][6]byte{base}, GenCount: 0}
	req = vemaReq(0x01, 0x0013, 2, nil)
	check(t, a, "ucast, EM MAC only", req, vemaResp(req, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}))

	// The user set 02:aa:..: one MAC, tot 1, gen 1; plus one secondary.
	f.uc[2] = IfaceMACList{DevAddrs: [][6]byte{{0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE}}, UC: [][6]byte{{0x02, 1, 2, 3, 4, 5}}, GenCount: 1}
	w := []byte{0, 0, 0, 2, 0, 2, 0, 1, 0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x02, 1, 2, 3, 4, 5}
	check(t, a, "ucast, user MAC", req, vemaResp(req, 0, w))
	req = vemaReq(0x01, 0x0013, 2, []byte{0, 1, 0, 5}) // start 1, num 5
	check(t, a, "ucast from index 1", req, vemaResp(req, 0, []byte{0, 1, 0, 1, 0, 2, 0, 1, 0x02, 1, 2, 3, 4, 5}))

	req = vemaReq(0x01, 0x0014, 2, nil)
	check(t, a, "mcast", req, vemaResp(req, 0, []byte{0, 0, 0, 1, 0, 1, 0, 3, 0x01, 0, 0x5E, 0, 0, 1}))
}

func TestAgentCounters(t *testing.T) {
	f := newFakePorts()
	a := NewAgent(f, nil)
	req := vemaReq(0x01, 0x0020, 6, nil)
	check(t, a, "summary, missing vport", req, vemaResp(req, 0x001C, nil))
	req = vemaReq(0x01, 0x0022, 6, nil)
	check(t, a, "errors, missing vport", req, vemaResp(req, 0x001C, nil))
	a.Handle(vemaReq(0x02, 0x0011, 6, setInfoData()))
	f.sum.TxErrors, f.sum.RxPackets, f.sum.Rx1519Max = 0x0102, 0x0304, 0x0506
	f.errs.TxDLIDZero, f.errs.RxBadVESWID, f.errs.RxLogic = 7, 8, 9

	s := make([]byte, 360)
	put(s, 0, 0x00, 0x06)             // vp_instance = vport index
	put(s, 2, 0x00, 0x05)             // vesw_id
	put(s, 4, 0x00, 0x00, 0x00, 0x01) // veswport_num = physical port 1
	put(s, 8+6, 0x01, 0x02)           // tx_errors
	put(s, 32+6, 0x03, 0x04)          // rx_packets
	put(s, 224+6, 0x05, 0x06)         // rx_1519_max
	req = vemaReq(0x01, 0x0020, 6, nil)
	check(t, a, "summary", req, vemaResp(req, 0, s))

	e := make([]byte, 304)
	put(e, 0, 0x00, 0x06, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01)
	put(e, 64+7, 7)  // tx_dlid_zero
	put(e, 104+7, 8) // rx_bad_veswid
	put(e, 160+7, 9) // rx_logic
	req = vemaReq(0x01, 0x0022, 6, nil)
	check(t, a, "errors", req, vemaResp(req, 0, e))
}

func TestAgentUnsupported(t *testing.T) {
	a := NewAgent(newFakePorts(), nil)
	for _, c := range []struct {
		name   string
		method byte
		attr   uint16
	}{
		{"Get unknown attribute", 0x01, 0x0030},
		{"Get DeleteVESW (Set only)", 0x01, 0x0015},
		{"Set IfaceUcastMacs (Get only)", 0x02, 0x0013},
		{"Set counters (Get only)", 0x02, 0x0020},
		{"Get Notice", 0x01, 0x0002},
	} {
		req := vemaReq(c.method, c.attr, 0, seq(1, 100))
		check(t, a, c.name, req, vemaResp(req, 0x000C, nil))
	}
	// A Get or Set no agent is registered for (vema_register: class 0x34,
	// class version 0x80, OUI 00 06 6A) is answered by the MAD core:
	// drivers/infiniband/core/mad.c generate_unmatched_resp copies the
	// request, sets method GetResp and status
	// IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB, and for an OPA MAD of a
	// GSI class sets *resp_len = sizeof(struct ib_mad_hdr): 24 bytes go out
	// (ib_create_send_mad sends hdr_len + data_len of an OPA MAD).
	for name, req := range map[string][]byte{
		"class version": func() []byte { b := vemaReq(0x01, 0x0011, 7, seq(1, 100)); b[2] = 1; return b }(),
		"OUI":           func() []byte { b := vemaReq(0x02, 0x0011, 7, seq(1, 100)); b[39] = 0; return b }(),
	} {
		w := bytes.Clone(req[:24])
		w[3] = 0x81             // GetResp
		w[4], w[5] = 0x00, 0x0C // status 0x000C
		check(t, a, name, req, w)
	}
	// Not answered: vema_register's method_mask holds Get and Set only, so
	// find_mad_agent finds no agent for any other method, and
	// generate_unmatched_resp answers Get and Set only (mad.c
	// ib_mad_recv_done); the rest is not for the agent at all.
	for name, req := range map[string][]byte{
		"GetResp":             vemaReq(0x81, 0x0011, 0, nil),
		"TrapRepress":         vemaReq(0x07, 0x0002, 0, nil),
		"unknown method Send": vemaReq(0x03, 0x0011, 0, seq(1, 100)),
		"unknown method Trap": vemaReq(0x05, 0x0002, 0, seq(1, 100)),
		"short":               vemaReq(0x01, 0x0011, 0, nil)[:39],
		"class":               func() []byte { b := vemaReq(0x01, 0x0011, 0, nil); b[1] = 0x35; return b }(),
	} {
		if _, ok := a.Handle(req); ok {
			t.Errorf("%s: answered", name)
		}
	}
	// A short request (a truncated data area) reads as zeros.
	req := vemaReq(0x01, 0x0011, 9, nil)[:40]
	resp, ok := a.Handle(req)
	if !ok || !bytes.Equal(resp, vemaResp(vemaReq(0x01, 0x0011, 9, nil), 0, podData())) {
		t.Fatal("short Get VESWPortInfo")
	}
}

func TestAgentTrap(t *testing.T) {
	f := newFakePorts()
	now := time.Unix(1000, 0)
	a := NewAgent(f, func() time.Time { return now })
	a.Handle(vemaReq(0x02, 0x0011, 3, setInfoData()))
	if _, _, _, ok := a.Trap(3, vema.TrapEthLinkStatusChange); ok {
		t.Fatal("trap sent with trap_lid 0")
	}
	cpi := make([]byte, 80)
	put(cpi, 60, 0x00, 0x00, 0x00, 0x01) // trap_lid 1
	put(cpi, 76, 0x10)                   // SL 2
	a.Handle(vemaReq(0x02, 0x0001, 0, cpi))
	if _, _, _, ok := a.Trap(4, 1); ok {
		t.Fatal("trap for a missing vport")
	}

	mad, dlid, sl, ok := a.Trap(3, vema.TrapIfaceUcastMACChange)
	if !ok || dlid != 1 || sl != 2 {
		t.Fatalf("trap: ok %v dlid %v sl %d", ok, dlid, sl)
	}
	w := make([]byte, 272)
	put(w, 0, 0x80, 0x34, 0x80, 0x05)  // base, class, class_version, method Trap
	put(w, 8, 0, 0, 0, 0, 0, 0, 0, 1)  // tid 1
	put(w, 16, 0x00, 0x02)             // attr Notice
	put(w, 37, 0x00, 0x06, 0x6A)       // OUI
	put(w, 40, 0x08)                   // gen_type: info << 1
	put(w, 41, 0x00, 0x06, 0x6A)       // notice OUI
	put(w, 48, 0x00, 0x01, 0x00, 0x02) // issuer_lid = encap_slid
	put(w, 72, 0x01, 0x23)             // trap: fabric_id
	put(w, 74, 0x00, 0x05)             // veswid
	put(w, 76, 0x00, 0x00, 0x00, 0x09) // veswportnum = port_num
	put(w, 80, 0x00, 0x01)             // opaportnum
	put(w, 82, 0x03, 0x01)             // veswportindex, opcode
	if !bytes.Equal(mad, w) {
		t.Fatalf("trap MAD:\n%s\nwant\n%s", hex.Dump(mad), hex.Dump(w))
	}

	// Rate limit: 5 in a window of ~1.0737 s, counted from the first.
	for i := 2; i <= 5; i++ {
		now = now.Add(100 * time.Millisecond)
		if m, _, _, ok := a.Trap(3, 3); !ok || m[15] != byte(i) {
			t.Fatalf("trap %d refused or TID %d", i, m[15])
		}
	}
	now = now.Add(100 * time.Millisecond)
	if _, _, _, ok := a.Trap(3, 3); ok {
		t.Fatal("6th trap in the window sent")
	}
	if TrapWindow != 1073741*time.Microsecond {
		t.Fatalf("window %v", TrapWindow)
	}
	now = time.Unix(1000, 0).Add(TrapWindow) // the window has expired
	m, _, _, ok := a.Trap(3, 3)
	if !ok || m[15] != 6 {
		t.Fatal("trap after the window refused, or a refused trap used a TID")
	}
	_ = encap.LID(0)
}
