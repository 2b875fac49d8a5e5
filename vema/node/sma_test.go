package node

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// drSMP returns a directed-route SMP request by hand (docs/linux-compat.md
// §9.3): hop_cnt 0, hop_ptr 1 (as the SM's send fixup leaves it), permissive
// dr_slid/dr_dlid, data at 176.
func drSMP(method byte, attr uint16, am uint32, data []byte) []byte {
	b := make([]byte, 176+len(data))
	put(b, 0, 0x80, 0x81, 0x80, method)
	put(b, 6, 0x01, 0x00)                                     // hop_ptr 1, hop_cnt 0
	put(b, 8, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8) // tid
	put(b, 16, byte(attr>>8), byte(attr))
	put(b, 20, byte(am>>24), byte(am>>16), byte(am>>8), byte(am))
	put(b, 32, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF) // dr_slid, dr_dlid
	copy(b[176:], data)
	return b
}

// drResp is the SMA's reply: the header with GetResp, status|D, hop_ptr 0,
// then the attribute, padded to a multiple of 8.
func drResp(req []byte, status uint16, attr []byte, n int) []byte {
	b := make([]byte, n)
	copy(b, req[:176])
	put(b, 3, 0x81)
	put(b, 4, byte((status|0x8000)>>8), byte(status))
	put(b, 6, 0x00)
	copy(b[176:], attr)
	return b
}

func smaCheck(t *testing.T, s *SMA, name string, req, want []byte) {
	t.Helper()
	got, ok := s.Handle(req)
	if !ok {
		t.Fatalf("%s: no reply", name)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes\n%s\nwant %d\n%s", name, len(got), hex.Dump(got), len(want), hex.Dump(want))
	}
}

// portInfoBytes is the node's PortInfo written out (docs/linux-compat.md §9.7).
func portInfoBytes(lid, smlid uint32, prefix uint64, state byte) []byte {
	d := make([]byte, 242)
	put(d, 0, byte(lid>>24), byte(lid>>16), byte(lid>>8), byte(lid)) // lid
	put(d, 19, 0x50|state)                                           // phys LinkUp(5), state
	put(d, 21, 0x0C)                                                 // collective/multicast mask
	put(d, 40, 0x00, 0x00, 0x00, 0x01)                               // sa_qp 1
	put(d, 68, 0x10, 0x84)                                           // port_link_mode
	put(d, 74, 0x00, 0x0A, 0x00, 0x0A)                               // packet formats 9B|16B
	put(d, 78, 0x14, 0x00)                                           // flit interleave
	put(d, 108, byte(smlid>>24), byte(smlid>>16), byte(smlid>>8), byte(smlid))
	for i := range 8 {
		d[120+i] = byte(prefix >> (56 - 8*i)) // subnet_prefix
	}
	put(d, 216, 0x02, 0x00, 0x08, 0x0C) // ib_cap_mask: ClientRereg, SysImageGUID, Trap, Notice
	put(d, 222, 0x20, 0x00)             // opa_cap_mask: IsEthOnFabricSupported
	put(d, 234, 0x80)                   // replay_depth.buffer
	put(d, 237, 0x05, 0x03, 0x01)       // mtucap 4096, resptimevalue 3, local_port_num 1
	return d
}

func TestSMA(t *testing.T) {
	var got []SMAPort
	s := NewSMA(0x0011223344556677, 0x0011223344556678, "host-a", SMAPort{State: vema.PortStateInit, SAQP: 1},
		func(p SMAPort) { got = append(got, p) })

	// NodeInfo: DR 176+44 = 220 -> 224 bytes.
	ni := make([]byte, 44)
	put(ni, 0, 0x80, 0x80, 0x01, 0x01)                          // base, class version, CA, 1 port
	put(ni, 8, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77)  // system_image_guid
	put(ni, 16, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77) // node_guid
	put(ni, 24, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x78) // port_guid
	put(ni, 32, 0x00, 0x10)                                     // partition_cap 16
	put(ni, 40, 0x01, 0x00, 0x06, 0x6A)                         // local_port_num, vendor id
	req := drSMP(0x01, 0x0011, 0, nil)
	smaCheck(t, s, "Get NodeInfo", req, drResp(req, 0, ni, 224))
	req = drSMP(0x01, 0x0011, 1, nil)
	smaCheck(t, s, "Get NodeInfo attr_mod 1", req, drResp(req, 0x001C, nil, 176))

	nd := make([]byte, 64)
	copy(nd, "host-a")
	req = drSMP(0x01, 0x0010, 0, nil)
	smaCheck(t, s, "Get NodeDescription", req, drResp(req, 0, nd, 240))

	// PortInfo: 176+242 = 418 -> 424 bytes.
	req = drSMP(0x01, 0x0015, 0x01000001, nil)
	smaCheck(t, s, "Get PortInfo before the SM", req, drResp(req, 0, portInfoBytes(0, 0, 0, 2), 424))

	set := make([]byte, 242)
	put(set, 0, 0x00, 0x01, 0x00, 0x05)                           // lid 0x10005 (extended)
	put(set, 19, 0x04)                                            // Active, phys NOP
	put(set, 36, 0x00, 0x00, 0x00, 0x00)                          // sm_trap_qp 0
	put(set, 40, 0x00, 0x00, 0x00, 0x01)                          // sa_qp 1
	put(set, 108, 0x00, 0x00, 0x00, 0x01)                         // sm_lid 1
	put(set, 120, 0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x42) // subnet_prefix
	req = drSMP(0x02, 0x0015, 0x01000001, set)
	smaCheck(t, s, "Set PortInfo", req, drResp(req, 0, portInfoBytes(0x10005, 1, 0xFE80000000000042, 4), 424))
	if len(got) != 1 || got[0].LID != 0x10005 || got[0].SMLID != 1 || got[0].State != vema.PortStateActive {
		t.Fatalf("onSet: %+v", got)
	}

	for name, lid := range map[string][]byte{
		"lid 0": {0, 0, 0, 0}, "lid bits above 23": {0x01, 0, 0, 1},
		"multicast lid": {0, 0xF0, 0, 1}, "permissive lid": {0, 0xFF, 0xFF, 0xFF},
	} {
		bad := bytes.Clone(set)
		put(bad, 0, lid...)
		req = drSMP(0x02, 0x0015, 0x01000001, bad)
		smaCheck(t, s, "Set PortInfo "+name, req, drResp(req, 0x001C, portInfoBytes(0x10005, 1, 0xFE80000000000042, 4), 424))
	}
	req = drSMP(0x01, 0x0015, 0x02000001, nil)
	smaCheck(t, s, "PortInfo N=2", req, drResp(req, 0x001C, nil, 176))
	req = drSMP(0x01, 0x0090, 0, nil)
	smaCheck(t, s, "unknown attribute", req, drResp(req, 0x000C, nil, 176))
	req = drSMP(0x02, 0x0011, 0, nil)
	smaCheck(t, s, "Set NodeInfo", req, drResp(req, 0x000C, nil, 176))
	req = drSMP(0x03, 0x0011, 0, nil)
	smaCheck(t, s, "method Send", req, drResp(req, 0x0008, nil, 176))
	req = drSMP(0x01, 0x0011, 0, nil)
	req[2] = 1
	smaCheck(t, s, "class version 1", req, drResp(req, 0x0004, nil, 176))

	// LID routed: 32-byte header, no D bit. 32+44 = 76 -> 80 bytes.
	lr := make([]byte, 32)
	put(lr, 0, 0x80, 0x01, 0x80, 0x01)
	put(lr, 8, 0, 0, 0, 0, 0, 0, 0, 9)
	put(lr, 16, 0x00, 0x11)
	w := make([]byte, 80)
	copy(w, lr)
	put(w, 3, 0x81)
	copy(w[32:], ni)
	smaCheck(t, s, "LID-routed Get NodeInfo", lr, w)

	for name, req := range map[string][]byte{
		"GetResp": drSMP(0x81, 0x0011, 0, nil), "TrapRepress": drSMP(0x07, 0x0002, 0, nil),
		"short DR":   drSMP(0x01, 0x0011, 0, nil)[:100],
		"hop_cnt 64": func() []byte { b := drSMP(0x01, 0x0011, 0, nil); b[7] = 64; return b }(),
	} {
		if _, ok := s.Handle(req); ok {
			t.Errorf("%s answered", name)
		}
	}
}

func TestAnnounce(t *testing.T) {
	s := NewSMA(1, 0x0011223344556678, "n", SMAPort{LID: 0x10005, SubnetPrefix: 0xFE80000000000042}, nil)
	w := make([]byte, 256)
	put(w, 0, 0x80, 0x01, 0x80, 0x05)                          // LID routed, Trap
	put(w, 8, 0, 0, 0, 0, 0, 0, 0x12, 0x34)                    // tid
	put(w, 16, 0x00, 0x02)                                     // Notice
	put(w, 32, 0x84, 0x00, 0x00, 0x01)                         // generic info, prod CA
	put(w, 36, 0x00, 0x90)                                     // trap 144
	put(w, 40, 0x00, 0x01, 0x00, 0x05)                         // issuer_lid
	put(w, 48, 0xFE, 0x80, 0, 0, 0, 0, 0, 0x42)                // issuer_gid prefix
	put(w, 56, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x78) // port GUID
	put(w, 64, 0x00, 0x01, 0x00, 0x05)                         // ntc_144.lid
	put(w, 74, 0x20, 0x00)                                     // cap_mask3
	if got := s.Announce(0x1234); !bytes.Equal(got, w) {
		t.Fatalf("announce\n%s\nwant\n%s", hex.Dump(got), hex.Dump(w))
	}
	_ = encap.LID(0)
}

// TestSMABadClassVersionEchoesRequest: hfi1 checks class_version first in
// process_subn_opa (drivers/infiniband/hw/hfi1/mad.c, "if
// (smp->class_version != OPA_SM_CLASS_VERSION) { smp->status |=
// IB_MGMT_MAD_STATUS_BAD_VERSION; ret = reply(ibh); goto bail; }"), before
// "*resp_len = opa_get_smp_header_size(smp)", after "*out_mad = *in_mad".
// resp_len is still what hfi1_process_opa_mad started it at, the received
// MAD (u32 resp_len = in_wc->byte_len - sizeof(*in_grh)), and bail: sets
// *out_mad_size = round_up(resp_len, 8). So a 2048-byte DR Get with class
// version 1, as an FM sends it, comes back 2048 bytes long with its data,
// GetResp and status D|0x0004.
func TestSMABadClassVersionEchoesRequest(t *testing.T) {
	s := NewSMA(0x0011223344556677, 0x0011223344556678, "n", SMAPort{State: vema.PortStateInit}, nil)
	data := seq(0x30, vema.SMPDRDataLen)
	req := drSMP(0x01, 0x0011, 0, data)
	req[2] = 1
	want := make([]byte, 2048)
	copy(want, req)
	put(want, 3, 0x81)       // method GetResp
	put(want, 4, 0x80, 0x04) // status: D | bad version
	put(want, 6, 0x00)       // hop_ptr after the return-path fixup
	smaCheck(t, s, "2048-byte DR Get, class version 1", req, want)
}

// TestSMAKeepsRequestStatusBits: hfi1 builds the reply in a copy of the
// request and ORs its status bits in, so a request's status bits (an SM
// sends none) come back with the SMA's own.
func TestSMAKeepsRequestStatusBits(t *testing.T) {
	s := NewSMA(0x0011223344556677, 0x0011223344556678, "n", SMAPort{State: vema.PortStateInit}, nil)
	req := drSMP(0x01, 0x0010, 0, make([]byte, vema.SMPDRDataLen)) // Get NodeDescription
	put(req, 4, 0x01, 0x00)                                        // a reserved status bit
	got, ok := s.Handle(req)
	if !ok {
		t.Fatal("no answer")
	}
	if st := uint16(got[4])<<8 | uint16(got[5]); st != 0x8100 {
		t.Errorf("status %#04x, want 0x8100 (D, and the request's bit)", st)
	}
	req = drSMP(0x01, 0xFF77, 0, make([]byte, vema.SMPDRDataLen)) // an unknown attribute
	put(req, 4, 0x01, 0x00)
	if got, _ = s.Handle(req); len(got) < 6 {
		t.Fatal("no answer")
	}
	if st := uint16(got[4])<<8 | uint16(got[5]); st != 0x8100|uint16(vema.StatusUnsupportedMethodAttr) {
		t.Errorf("status %#04x, want %#04x", st, 0x8100|uint16(vema.StatusUnsupportedMethodAttr))
	}
}
