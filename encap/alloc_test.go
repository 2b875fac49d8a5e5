package encap_test

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// Sinks keep results alive so the compiler cannot drop the calls.
var (
	sinkBytes []byte
	sinkHdr   encap.Header16B
	sinkU32   uint32
	sinkU16   uint16
	sinkU8    uint8
	sinkInt   int
	sinkBool  bool
	sinkErr   error
	sinkVESW  encap.VESWID
	sinkPKey  encap.PKey
	sinkMgmt  encap.MgmtPacket
	sinkFI    encap.FrameInfo
)

// TestNoAllocs fails if anything on the per-packet path allocates, on its
// success path and on its error paths.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	vp := base
	mp := encap.MgmtParams{SLID: 1, DLID: 2, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}
	txBuf := make([]byte, encap.Headroom+1500+encap.Tailroom)
	copy(txBuf[encap.Headroom:], patFrame(1500))
	mgmtBuf := make([]byte, encap.MgmtHeaderLen+256+encap.Tailroom)
	vnicPkt := goldenVNIC()
	bigPkt := vnicVectors()[10].wirePacket() // 1500-byte frame
	mgmtPkt := goldenMgmt()
	badICRC := goldenVNIC()
	badICRC[40] ^= 1
	tailPkt := tiny(24, 0x78, 0x40)
	frames := map[string][]byte{
		"tcp4":  eth(macA, nil, 0x0800, ip4(6, ip4A, ip4B, 1, 64, 0, l4(1, 2, 3, 4))),
		"udp6":  eth(macA, []uint32{tagQ5}, 0x86DD, ip6(17, ip6A, ip6B, 0, l4(1, 2))),
		"qinq":  eth(macA, []uint32{tagAD3, tagQ6}, 0x0800, ip4(17, ip4A, ip4B, 1, 64, 0, l4(1, 2))),
		"arp":   arpRequest,
		"short": {0x01, 0x02},
	}
	hdr := encap.Header16B(make([]byte, 16))
	scm := encap.SCMap{NonVLANUC: 1}
	ft := encap.NewFlowTable(0x00FF)

	cases := []struct {
		name string
		fn   func()
	}{
		{"EncapVNIC/1500", func() { sinkBytes, sinkErr = encap.EncapVNIC(txBuf, encap.Headroom, 1500, &vp) }},
		{"EncapVNIC/runt", func() { sinkBytes, sinkErr = encap.EncapVNIC(txBuf, encap.Headroom, 10, &vp) }},
		{"EncapVNIC/error", func() { sinkBytes, sinkErr = encap.EncapVNIC(txBuf, 0, 1500, &vp) }},
		{"DecapVNIC/60", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(vnicPkt) }},
		{"DecapVNIC/1500", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(bigPkt) }},
		{"DecapVNIC/ErrICRC", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(badICRC) }},
		{"DecapVNIC/ErrShort", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(vnicPkt[:3]) }},
		{"DecapVNIC/ErrL4", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(mgmtPkt) }},
		{"DecapVNIC/ErrTail", func() { sinkBytes, sinkHdr, sinkVESW, sinkErr = encap.DecapVNIC(tailPkt) }},
		{"Parse/verify", func() { sinkHdr, sinkErr = encap.Parse(bigPkt, true) }},
		{"Parse/ErrLength", func() { sinkHdr, sinkErr = encap.Parse(bigPkt[:100], false) }},
		{"VNICFrame", func() { sinkBytes, sinkVESW, sinkErr = encap.VNICFrame(bigPkt) }},
		{"VNICFrame/ErrTail", func() { sinkBytes, sinkVESW, sinkErr = encap.VNICFrame(tailPkt) }},
		{"EncapMgmt", func() { sinkBytes, sinkErr = encap.EncapMgmt(mgmtBuf, encap.MgmtHeaderLen, 256, &mp) }},
		{"EncapMgmt/error", func() { sinkBytes, sinkErr = encap.EncapMgmt(mgmtBuf, encap.MgmtHeaderLen, 255, &mp) }},
		{"ParseMgmt", func() { sinkMgmt, sinkErr = encap.ParseMgmt(mgmtPkt) }},
		{"ParseMgmt/ErrL4", func() { sinkMgmt, sinkErr = encap.ParseMgmt(vnicPkt) }},
		{"MgmtPayload", func() { sinkMgmt, sinkErr = encap.MgmtPayload(mgmtPkt) }},
		{"ICRC", func() { sinkU32 = encap.ICRC(bigPkt) }},
		{"CheckICRC", func() { sinkBool = encap.CheckICRC(bigPkt) }},
		{"VNICPacketLen", func() { sinkInt = encap.VNICPacketLen(1500) + encap.VNICPad(1500) }},
		{"FoldEntropy", func() { sinkU8 = encap.FoldEntropy(0x12345678) }},
		{"FlowTable.Port", func() { sinkU8 = ft.Port(0x5A) }},
		{"DLIDFromMAC", func() { sinkU32 = encap.DLIDFromMAC(macA) }},
		{"LID", func() { sinkU32 = encap.LID(0xF0000001).To16B() + uint32(encap.LIDFrom16B(0xF00001)) }},
	}
	for name, f := range frames {
		cases = append(cases,
			struct {
				name string
				fn   func()
			}{"ParseFrame/" + name, func() { sinkFI = encap.ParseFrame(f) }},
			struct {
				name string
				fn   func()
			}{"FlowHash+SC+RC/" + name, func() {
				fi := encap.ParseFrame(f)
				sinkU32 = encap.FlowHash(f, &fi)
				sinkU8 = scm.SC(&fi) + encap.SelectRC(0x07654321, &fi)
			}})
	}
	// Every Header16B accessor.
	for _, f := range hfields {
		cases = append(cases,
			struct {
				name string
				fn   func()
			}{"Header16B.Set" + f.name, func() { f.set(hdr, 0x5A5A5A) }},
			struct {
				name string
				fn   func()
			}{"Header16B." + f.name, func() { sinkU32 = uint32(f.get(hdr)) }})
	}
	// And directly, without the test's closures in between.
	cases = append(cases, struct {
		name string
		fn   func()
	}{"Header16B/direct", func() {
		hdr.SetSLID(0xC000)
		hdr.SetDLID(0xABCDE)
		hdr.SetLen(11)
		hdr.SetBECN(true)
		hdr.SetSC(3)
		hdr.SetRC(2)
		hdr.SetFECN(true)
		hdr.SetL2(2)
		hdr.SetLT(true)
		hdr.SetL4(0x78)
		hdr.SetPKey(0x8001)
		hdr.SetEntropy(0xA5)
		hdr.SetAge(1)
		sinkU32 = hdr.SLID() + hdr.DLID()
		sinkInt = hdr.Len()
		sinkBool = hdr.BECN() && hdr.FECN() && hdr.LT()
		sinkU8 = hdr.SC() + hdr.RC() + hdr.L2() + hdr.L4() + hdr.Age()
		sinkPKey = hdr.PKey()
		sinkU16 = hdr.Entropy()
	}})

	// Control: the harness sees an allocation when there is one.
	if n := testing.AllocsPerRun(20, func() { sinkBytes, sinkErr = encap.AppendMgmt(nil, &mp, mgmtPkt[:8]) }); n == 0 {
		t.Errorf("AppendMgmt(nil, ...) shows no allocation: the harness is broken")
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(200, c.fn); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", c.name, n)
		}
	}
}
