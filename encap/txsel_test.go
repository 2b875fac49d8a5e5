package encap_test

import (
	"encoding/binary"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

func TestFoldEntropy(t *testing.T) {
	// h ^= h>>8; h ^= h>>16; h & 0xFF (docs/linux-compat.md §2.1), worked by hand:
	for _, tc := range []struct {
		h    uint32
		want uint8
	}{
		{0, 0},
		{0xFF, 0xFF},       // nothing above byte 0
		{0x100, 0x01},      // 0x101, then 0x101
		{0x10000, 0x01},    // 0x10100, then 0x10101
		{0x1000000, 0x01},  // 0x1010000, then 0x1010101
		{0xFFFFFFFF, 0x00}, // 0xFF000000, then 0xFF00FF00
		{0x12345678, 0x08}, // 0x1226622E, then 0x12267008
		{0xA5000000, 0xA5}, // 0xA5A50000, then 0xA5A5A5A5
		{0x00A50000, 0xA5}, // 0x00A5A500, then 0x00A5A5A5
	} {
		if got := encap.FoldEntropy(tc.h); got != tc.want {
			t.Errorf("FoldEntropy(%#x) = %#x, want %#x", tc.h, got, tc.want)
		}
	}
}

func TestFlowTable(t *testing.T) {
	rep := func(pattern ...uint8) encap.FlowTable {
		var ft encap.FlowTable
		for i := range ft {
			ft[i] = pattern[i%len(pattern)]
		}
		return ft
	}
	for _, tc := range []struct {
		name string
		mask uint16
		want encap.FlowTable
	}{
		{"mask-0-invalid", 0, rep(0xFF)},
		{"mask-1-port0", 0x0001, rep(0)},
		{"mask-0x8001-ports-0-15", 0x8001, rep(0, 15)},
		{"mask-0x0006-ports-1-2", 0x0006, rep(1, 2)},
		{"mask-0x0007-three-ports", 0x0007, rep(0, 1, 2)},
		{"mask-0x8000-port15", 0x8000, rep(15)},
		{"mask-0xFFFF-all", 0xFFFF, rep(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := encap.NewFlowTable(tc.mask); got != tc.want {
				t.Errorf("NewFlowTable(%#x) = %v, want %v", tc.mask, got, tc.want)
			}
		})
	}
	// Spell out the three-port table's wrap: 32 slots, 32 % 3 = 2.
	ft3 := encap.NewFlowTable(0x0007)
	if ft3[29] != 2 || ft3[30] != 0 || ft3[31] != 1 {
		t.Errorf("three-port table tail %v", ft3[29:])
	}

	// Port: flow_id = (e & 0xF) + (e >> 4), table[flow_id & 31].
	all := encap.NewFlowTable(0xFFFF)
	two := encap.NewFlowTable(0x8001)
	none := encap.NewFlowTable(0)
	for _, tc := range []struct {
		e          uint8
		flow       int
		allP, twoP uint8
		threeP     uint8
		comment    string
	}{
		{0x00, 0, 0, 0, 0, "flow 0"},
		{0x0F, 15, 15, 15, 0, "15 + 0"},
		{0x10, 1, 1, 15, 1, "0 + 1"},
		{0x1F, 16, 0, 0, 1, "15 + 1 = 16"},
		{0x88, 16, 0, 0, 1, "8 + 8 = 16"},
		{0xF1, 16, 0, 0, 1, "1 + 15 = 16"},
		{0x7E, 21, 5, 15, 0, "14 + 7 = 21"},
		{0xFF, 30, 14, 0, 0, "15 + 15 = 30, the largest flow id"},
	} {
		if got := all.Port(tc.e); got != tc.allP {
			t.Errorf("0xFFFF table: Port(%#x) (%s) = %d, want %d", tc.e, tc.comment, got, tc.allP)
		}
		if got := two.Port(tc.e); got != tc.twoP {
			t.Errorf("0x8001 table: Port(%#x) (%s) = %d, want %d", tc.e, tc.comment, got, tc.twoP)
		}
		if got := ft3.Port(tc.e); got != tc.threeP {
			t.Errorf("0x0007 table: Port(%#x) (%s) = %d, want %d", tc.e, tc.comment, got, tc.threeP)
		}
		if int(tc.e&0xF)+int(tc.e>>4) != tc.flow {
			t.Fatalf("test table: flow id of %#x", tc.e)
		}
	}
	for e := range 256 {
		if none.Port(uint8(e)) != encap.InvalidPort {
			t.Fatalf("empty mask: Port(%#x) = %d", e, none.Port(uint8(e)))
		}
		if p := all.Port(uint8(e)); p != uint8((e&0xF+e>>4)%16) {
			t.Fatalf("0xFFFF table: Port(%#x) = %d", e, p)
		}
	}
	if encap.FlowTableSize != 32 || encap.InvalidPort != 0xFF || encap.MaxDefaultPort != 16 {
		t.Errorf("flow table constants")
	}
}

func TestMACs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mac       []byte
		dlid      uint32
		mc, local bool
	}{
		// DLID = dmac[5]<<16 | dmac[4]<<8 | dmac[3] (docs/linux-compat.md §2.3).
		{"local-bytes-3-5", []byte{0x02, 0x00, 0x00, 0x01, 0x02, 0x03}, 0x030201, false, true},
		{"local-0xEFFFFF", []byte{0x02, 0x00, 0x00, 0xFF, 0xFF, 0xEF}, 0xEFFFFF, false, true},
		{"local-0xC000", []byte{0x06, 0xAA, 0xBB, 0x00, 0xC0, 0x00}, 0xC000, false, true},
		{"global", []byte{0x00, 0x11, 0x75, 0x01, 0x02, 0x03}, 0x030201, false, false},
		{"broadcast", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 0xFFFFFF, true, true},
		{"ipv4-multicast", []byte{0x01, 0x00, 0x5E, 0x00, 0x00, 0x01}, 0x010000, true, false},
	} {
		if got := encap.DLIDFromMAC(tc.mac); got != tc.dlid {
			t.Errorf("%s: DLIDFromMAC = %#x, want %#x", tc.name, got, tc.dlid)
		}
		if encap.IsMulticastMAC(tc.mac) != tc.mc || encap.IsLocalMAC(tc.mac) != tc.local {
			t.Errorf("%s: multicast %v local %v", tc.name, encap.IsMulticastMAC(tc.mac), encap.IsLocalMAC(tc.mac))
		}
	}
	for _, tc := range []struct {
		lid  encap.LID
		vesw encap.VESWID
		want [6]byte
	}{
		{1, 1, [6]byte{0x02, 0x00, 0x01, 0x01, 0x00, 0x00}},
		{0xC000, 0x123, [6]byte{0x02, 0x01, 0x23, 0x00, 0xC0, 0x00}},
		{0xEFFFFF, 0xFFF, [6]byte{0x02, 0x0F, 0xFF, 0xFF, 0xFF, 0xEF}},
		{0xABCDE, 0x800, [6]byte{0x02, 0x08, 0x00, 0xDE, 0xBC, 0x0A}},
	} {
		mac := encap.MACForLID(tc.lid, tc.vesw)
		if mac != tc.want {
			t.Errorf("MACForLID(%v, %#x) = % x, want % x", tc.lid, tc.vesw, mac, tc.want)
		}
		if encap.IsMulticastMAC(mac[:]) || !encap.IsLocalMAC(mac[:]) {
			t.Errorf("MACForLID(%v) is not locally administered unicast", tc.lid)
		}
		if got := encap.DLIDFromMAC(mac[:]); got != tc.lid.To16B() {
			t.Errorf("DLIDFromMAC(MACForLID(%v)) = %#x", tc.lid, got)
		}
	}
	// Ports of one host on different vesws get different MACs.
	if encap.MACForLID(0xC000, 1) == encap.MACForLID(0xC000, 2) {
		t.Errorf("MACForLID ignores the vesw")
	}
}

// Frame builders for the transmit-choice tests. They are plain helpers: the
// values under test (offsets, protocol, PCP) are in each case's want.

var (
	macA   = []byte{0x02, 0x00, 0x01, 0x02, 0x00, 0x00}
	macB   = []byte{0x02, 0x00, 0x01, 0x01, 0x00, 0x00}
	macMC  = []byte{0x01, 0x00, 0x5E, 0x00, 0x00, 0x01}
	ip4A   = []byte{10, 0, 0, 1}
	ip4B   = []byte{10, 0, 0, 2}
	ip4C   = []byte{10, 0, 0, 3}
	ip6A   = []byte{0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	ip6B   = []byte{0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
	tagQ5  = uint32(0x8100A064) // 802.1Q, PCP 5, VID 100
	tagAD3 = uint32(0x88A86010) // 802.1ad, PCP 3, VID 16
	tagQ6  = uint32(0x8100C020) // 802.1Q, PCP 6, VID 32
)

func eth(dst []byte, tags []uint32, et uint16, payload []byte) []byte {
	f := append([]byte(nil), dst...)
	f = append(f, macB...)
	for _, tag := range tags {
		f = binary.BigEndian.AppendUint32(f, tag)
	}
	f = binary.BigEndian.AppendUint16(f, et)
	return append(f, payload...)
}

// ip4 is a 20-byte IPv4 header (IHL 5) with the given protocol, ID, TTL and
// flags/fragment word, followed by l4.
func ip4(proto byte, src, dst []byte, id uint16, ttl byte, frag uint16, l4 []byte) []byte {
	h := []byte{0x45, 0, 0, 0, 0, 0, 0, 0, ttl, proto, 0, 0}
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], frag)
	h = append(h, src...)
	h = append(h, dst...)
	return append(h, l4...)
}

// ip6 is a 40-byte IPv6 header with the given next header, then l4.
func ip6(nh byte, src, dst []byte, flow uint32, l4 []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint32(h, 6<<28|flow&0xFFFFF)
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	h[6], h[7] = nh, 64
	h = append(h, src...)
	h = append(h, dst...)
	return append(h, l4...)
}

// l4 is 4 bytes of ports followed by filler.
func l4(sport, dport uint16, filler ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	return append(b, filler...)
}

func TestParseFrame(t *testing.T) {
	tcp4 := ip4(6, ip4A, ip4B, 1, 64, 0x4000, l4(40000, 80, 0xAA))
	udp4 := ip4(17, ip4A, ip4B, 1, 64, 0, l4(5000, 6000))
	udp6 := ip6(17, ip6A, ip6B, 0, l4(5000, 53))
	nineTags := eth(macA, []uint32{tagQ5, tagQ5, tagQ5, tagQ5, tagQ5, tagQ5, tagQ5, tagQ5, tagQ5}, 0x0800, udp4)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  encap.FrameInfo
	}{
		{"untagged-IPv4-TCP", eth(macA, nil, 0x0800, tcp4),
			encap.FrameInfo{EtherType: 0x0800, L3Off: 14, Proto: 6}},
		{"untagged-IPv4-UDP-multicast", eth(macMC, nil, 0x0800, udp4),
			encap.FrameInfo{Multicast: true, EtherType: 0x0800, L3Off: 14, Proto: 17}},
		{"IPv4-ICMP", eth(macA, nil, 0x0800, ip4(1, ip4A, ip4B, 1, 64, 0, make([]byte, 8))),
			encap.FrameInfo{EtherType: 0x0800, L3Off: 14, Proto: 1}},
		{"IPv4-GRE", eth(macA, nil, 0x0800, ip4(47, ip4A, ip4B, 1, 64, 0, make([]byte, 8))),
			encap.FrameInfo{EtherType: 0x0800, L3Off: 14, Proto: 47}},
		{"802.1Q-PCP5-IPv4-UDP", eth(macA, []uint32{tagQ5}, 0x0800, udp4),
			encap.FrameInfo{Tagged: true, PCP: 5, EtherType: 0x0800, L3Off: 18, Proto: 17}},
		{"802.1Q-broadcast-ARP", eth([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, []uint32{tagQ6}, 0x0806, make([]byte, 28)),
			encap.FrameInfo{Multicast: true, Tagged: true, PCP: 6, EtherType: 0x0806}},
		{"802.1ad-single-PCP3-IPv4-TCP", eth(macA, []uint32{tagAD3}, 0x0800, tcp4),
			encap.FrameInfo{Tagged: true, PCP: 3, EtherType: 0x0800, L3Off: 18, Proto: 6}},
		// QinQ: the PCP is the outer tag's, the protocol the innermost.
		{"QinQ-PCP3-over-PCP6-IPv6-TCP", eth(macA, []uint32{tagAD3, tagQ6}, 0x86DD, ip6(6, ip6A, ip6B, 0, l4(1, 2))),
			encap.FrameInfo{Tagged: true, PCP: 3, EtherType: 0x86DD, L3Off: 22, Proto: 6}},
		{"QinQ-IPv4-UDP", eth(macA, []uint32{tagAD3, tagQ6}, 0x0800, udp4),
			encap.FrameInfo{Tagged: true, PCP: 3, EtherType: 0x0800, L3Off: 22, Proto: 17}},
		{"IPv6-TCP", eth(macA, nil, 0x86DD, ip6(6, ip6A, ip6B, 0, l4(1, 2))),
			encap.FrameInfo{EtherType: 0x86DD, L3Off: 14, Proto: 6}},
		{"IPv6-UDP", eth(macA, nil, 0x86DD, udp6),
			encap.FrameInfo{EtherType: 0x86DD, L3Off: 14, Proto: 17}},
		{"IPv6-ICMPv6", eth(macA, nil, 0x86DD, ip6(58, ip6A, ip6B, 0, make([]byte, 8))),
			encap.FrameInfo{EtherType: 0x86DD, L3Off: 14, Proto: 58}},
		// Only the first next header counts (no extension-header walk).
		{"IPv6-hop-by-hop-then-TCP", eth(macA, nil, 0x86DD, ip6(0, ip6A, ip6B, 0, []byte{6, 0, 0, 0, 0, 0, 0, 0})),
			encap.FrameInfo{EtherType: 0x86DD, L3Off: 14, Proto: 0}},
		{"ARP", eth(macA, nil, 0x0806, make([]byte, 28)),
			encap.FrameInfo{EtherType: 0x0806}},
		{"golden-ARP-runt", arpRequest,
			encap.FrameInfo{Multicast: true, EtherType: 0x0806}},
		{"golden-VLAN-frame", vlanUDP,
			encap.FrameInfo{Tagged: true, PCP: 5, EtherType: 0x0800, L3Off: 18, Proto: 17}},
		{"nine-tags-stops-after-eight", nineTags,
			encap.FrameInfo{Tagged: true, PCP: 5, EtherType: 0x8100}},
		// Short frames: whatever does not fit is left zero.
		{"empty", []byte{}, encap.FrameInfo{}},
		{"nil", nil, encap.FrameInfo{}},
		{"1-byte-multicast", []byte{0x01}, encap.FrameInfo{Multicast: true}},
		{"5-bytes-unicast", []byte{0x02, 0, 0, 0, 0}, encap.FrameInfo{}},
		{"13-bytes", eth(macMC, nil, 0x0800, nil)[:13], encap.FrameInfo{Multicast: true}},
		{"14-bytes-IPv4-no-header", eth(macA, nil, 0x0800, nil), encap.FrameInfo{EtherType: 0x0800}},
		{"IPv4-header-cut-at-19", eth(macA, nil, 0x0800, tcp4[:19]), encap.FrameInfo{EtherType: 0x0800}},
		{"IPv4-header-exactly-20", eth(macA, nil, 0x0800, tcp4[:20]),
			encap.FrameInfo{EtherType: 0x0800, L3Off: 14, Proto: 6}},
		{"IPv6-header-cut-at-39", eth(macA, nil, 0x86DD, udp6[:39]), encap.FrameInfo{EtherType: 0x86DD}},
		{"IPv6-header-exactly-40", eth(macA, nil, 0x86DD, udp6[:40]),
			encap.FrameInfo{EtherType: 0x86DD, L3Off: 14, Proto: 17}},
		{"15-bytes-TPID-only", eth(macA, []uint32{tagQ5}, 0x0800, nil)[:15], encap.FrameInfo{}},
		{"16-bytes-tag-no-type", eth(macA, []uint32{tagQ5}, 0x0800, nil)[:16], encap.FrameInfo{Tagged: true, PCP: 5}},
		{"17-bytes-tag-half-type", eth(macA, []uint32{tagQ5}, 0x0800, nil)[:17], encap.FrameInfo{Tagged: true, PCP: 5}},
		{"18-bytes-tagged-IPv4-no-header", eth(macA, []uint32{tagQ5}, 0x0800, nil),
			encap.FrameInfo{Tagged: true, PCP: 5, EtherType: 0x0800}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := encap.ParseFrame(tc.frame); got != tc.want {
				t.Errorf("ParseFrame = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSCMap(t *testing.T) {
	m := encap.SCMap{
		PCPToSCUC: [8]uint8{0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17},
		PCPToSCMC: [8]uint8{0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F},
		NonVLANUC: 3,
		NonVLANMC: 4,
	}
	udp4 := ip4(17, ip4A, ip4B, 1, 64, 0, l4(1, 2))
	for _, tc := range []struct {
		name  string
		frame []byte
		want  uint8
	}{
		{"untagged-unicast", eth(macA, nil, 0x0800, udp4), 3},
		{"untagged-multicast", eth(macMC, nil, 0x0800, udp4), 4},
		{"untagged-broadcast-ARP", arpRequest, 4},
		{"tagged-unicast-PCP5", eth(macA, []uint32{tagQ5}, 0x0800, udp4), 0x15},
		{"tagged-multicast-PCP5", eth(macMC, []uint32{tagQ5}, 0x0800, udp4), 0x0D},
		{"QinQ-unicast-outer-PCP3", eth(macA, []uint32{tagAD3, tagQ6}, 0x0800, udp4), 0x13},
		{"tagged-unicast-PCP0", eth(macA, []uint32{0x81000064}, 0x0800, udp4), 0x10},
		{"tagged-multicast-PCP7", eth(macMC, []uint32{0x8100E064}, 0x0800, udp4), 0x0F},
	} {
		fi := encap.ParseFrame(tc.frame)
		if got := m.SC(&fi); got != tc.want {
			t.Errorf("%s: SC = %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

func TestSelectRC(t *testing.T) {
	// One rc word with a distinct value per class: nibble k holds k+1.
	const rc = 0x07654321
	tcp4 := ip4(6, ip4A, ip4B, 1, 64, 0, l4(1, 2))
	for _, tc := range []struct {
		name  string
		frame []byte
		class uint
		want  uint8
	}{
		{"non-IP-ARP", arpRequest, encap.RCDefault, 1},
		{"non-IP-short", []byte{0x02}, encap.RCDefault, 1},
		{"IPv4-other-ICMP", eth(macA, nil, 0x0800, ip4(1, ip4A, ip4B, 1, 64, 0, nil)), encap.RCIPv4, 2},
		{"IPv4-truncated", eth(macA, nil, 0x0800, nil), encap.RCIPv4, 2},
		{"IPv4-UDP", eth(macA, nil, 0x0800, ip4(17, ip4A, ip4B, 1, 64, 0, l4(1, 2))), encap.RCIPv4UDP, 3},
		{"IPv4-TCP", eth(macA, nil, 0x0800, tcp4), encap.RCIPv4TCP, 4},
		{"IPv4-TCP-behind-QinQ", eth(macA, []uint32{tagAD3, tagQ6}, 0x0800, tcp4), encap.RCIPv4TCP, 4},
		{"IPv6-other", eth(macA, nil, 0x86DD, ip6(58, ip6A, ip6B, 0, nil)), encap.RCIPv6, 5},
		{"IPv6-ext-header", eth(macA, nil, 0x86DD, ip6(0, ip6A, ip6B, 0, nil)), encap.RCIPv6, 5},
		{"IPv6-TCP", eth(macA, nil, 0x86DD, ip6(6, ip6A, ip6B, 0, nil)), encap.RCIPv6TCP, 6},
		{"IPv6-UDP", eth(macA, []uint32{tagQ5}, 0x86DD, ip6(17, ip6A, ip6B, 0, nil)), encap.RCIPv6UDP, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fi := encap.ParseFrame(tc.frame)
			if got := encap.RCClass(&fi); got != tc.class {
				t.Errorf("RCClass = %d, want %d", got, tc.class)
			}
			if got := encap.SelectRC(rc, &fi); got != tc.want {
				t.Errorf("SelectRC(%#x) = %d, want %d", rc, got, tc.want)
			}
			// Bits 3, 7, ... 27-31 are unused: setting only them selects 0,
			// and clearing them changes nothing.
			if got := encap.SelectRC(0xF8888888, &fi); got != 0 {
				t.Errorf("SelectRC(unused bits) = %d", got)
			}
			if got := encap.SelectRC(0xFFFFFFFF, &fi); got != 7 {
				t.Errorf("SelectRC(all ones) = %d", got)
			}
		})
	}
	if encap.RCDefault != 0 || encap.RCIPv4 != 4 || encap.RCIPv4UDP != 8 || encap.RCIPv4TCP != 12 ||
		encap.RCIPv6 != 16 || encap.RCIPv6TCP != 20 || encap.RCIPv6UDP != 24 {
		t.Errorf("RC bit offsets differ from encap.h OPA_VNIC_ENCAP_RC_*")
	}
}

func flowHash(f []byte) uint32 {
	fi := encap.ParseFrame(f)
	return encap.FlowHash(f, &fi)
}

func TestFlowHash(t *testing.T) {
	payload := func(b byte) []byte { return []byte{b, b, b, b, b, b, b, b} }
	tcp := func(src, dst []byte, sp, dp uint16, id uint16, ttl byte, pay byte) []byte {
		return eth(macA, nil, 0x0800, ip4(6, src, dst, id, ttl, 0x4000, l4(sp, dp, payload(pay)...)))
	}
	udp6 := func(sp, dp uint16, fl uint32, pay byte) []byte {
		return eth(macA, nil, 0x86DD, ip6(17, ip6A, ip6B, fl, l4(sp, dp, payload(pay)...)))
	}
	raw := func(dst []byte, et uint16, pay byte) []byte { return eth(dst, nil, et, payload(pay)) }

	// Packets of one flow hash alike whatever else differs.
	same := []struct {
		name string
		a, b []byte
	}{
		{"TCP-payload-ID-TTL", tcp(ip4A, ip4B, 40000, 80, 1, 64, 1), tcp(ip4A, ip4B, 40000, 80, 999, 3, 2)},
		{"TCP-with-and-without-VLAN", tcp(ip4A, ip4B, 40000, 80, 1, 64, 1),
			eth(macA, []uint32{tagQ5}, 0x0800, ip4(6, ip4A, ip4B, 1, 64, 0x4000, l4(40000, 80, payload(1)...)))},
		{"TCP-different-MACs", tcp(ip4A, ip4B, 40000, 80, 1, 64, 1),
			eth(macMC, nil, 0x0800, ip4(6, ip4A, ip4B, 1, 64, 0x4000, l4(40000, 80, payload(1)...)))},
		{"UDP6-payload-flowlabel", udp6(5000, 53, 0x12345, 1), udp6(5000, 53, 0xABCDE, 9)},
		{"non-IP-payload", raw(macA, 0x88B5, 1), raw(macA, 0x88B5, 2)},
		// IPv4 fragments of one datagram: the first carries the ports, later
		// ones do not; neither is hashed with ports, so all take one path.
		{"IPv4-first-and-later-fragment",
			eth(macA, nil, 0x0800, ip4(17, ip4A, ip4B, 7, 64, 0x2000, l4(5000, 6000, payload(1)...))),
			eth(macA, nil, 0x0800, ip4(17, ip4A, ip4B, 7, 64, 0x00B9, payload(3)))},
	}
	for _, tc := range same {
		if ha, hb := flowHash(tc.a), flowHash(tc.b); ha != hb {
			t.Errorf("%s: %#x != %#x", tc.name, ha, hb)
		}
	}
	// Different flows hash apart.
	ref := tcp(ip4A, ip4B, 40000, 80, 1, 64, 1)
	diff := []struct {
		name string
		a, b []byte
	}{
		{"TCP-source-port", ref, tcp(ip4A, ip4B, 40001, 80, 1, 64, 1)},
		{"TCP-dest-port", ref, tcp(ip4A, ip4B, 40000, 81, 1, 64, 1)},
		{"TCP-source-address", ref, tcp(ip4C, ip4B, 40000, 80, 1, 64, 1)},
		{"TCP-dest-address", ref, tcp(ip4A, ip4C, 40000, 80, 1, 64, 1)},
		{"TCP-vs-UDP", ref, eth(macA, nil, 0x0800, ip4(17, ip4A, ip4B, 1, 64, 0x4000, l4(40000, 80, payload(1)...)))},
		{"UDP6-ports", udp6(5000, 53, 0, 1), udp6(5001, 53, 0, 1)},
		{"UDP6-source-address", udp6(5000, 53, 0, 1), eth(macA, nil, 0x86DD, ip6(17, ip6B, ip6B, 0, l4(5000, 53, payload(1)...)))},
		{"UDP6-dest-address", udp6(5000, 53, 0, 1), eth(macA, nil, 0x86DD, ip6(17, ip6A, ip6A, 0, l4(5000, 53, payload(1)...)))},
		{"IPv6-vs-IPv4", udp6(5000, 53, 0, 1), eth(macA, nil, 0x0800, ip4(17, ip4A, ip4B, 1, 64, 0, l4(5000, 53)))},
		{"non-IP-dest-MAC", raw(macA, 0x88B5, 1), raw(macMC, 0x88B5, 1)},
		{"non-IP-EtherType", raw(macA, 0x88B5, 1), raw(macA, 0x88B6, 1)},
	}
	for _, tc := range diff {
		if ha, hb := flowHash(tc.a), flowHash(tc.b); ha == hb {
			t.Errorf("%s: both %#x", tc.name, ha)
		}
	}
	// A hash is a function of its input: repeated calls agree.
	h0 := flowHash(ref)
	for range 3 {
		if flowHash(ref) != h0 {
			t.Fatal("FlowHash is not stable")
		}
	}
	// Folded to entropy, many flows spread over many paths: 1024 source
	// ports reach most of the 256 entropy values and every port of a full
	// default-port table.
	seen := map[uint8]bool{}
	ports := map[uint8]bool{}
	ft := encap.NewFlowTable(0xFFFF)
	for sp := range 1024 {
		e := encap.FoldEntropy(flowHash(tcp(ip4A, ip4B, uint16(30000+sp), 80, 1, 64, 1)))
		seen[e] = true
		ports[ft.Port(e)] = true
	}
	if len(seen) < 200 || len(ports) != 16 {
		t.Errorf("1024 flows reach %d entropy values and %d ports", len(seen), len(ports))
	}
	// Odd headers hash without panicking: IHL below 5, IHL past the frame,
	// truncated ports.
	for _, f := range [][]byte{
		eth(macA, nil, 0x0800, append([]byte{0x41}, ip4(6, ip4A, ip4B, 1, 64, 0, nil)[1:]...)),
		eth(macA, nil, 0x0800, append([]byte{0x4F}, ip4(6, ip4A, ip4B, 1, 64, 0, l4(1, 2))[1:]...)),
		eth(macA, nil, 0x0800, ip4(6, ip4A, ip4B, 1, 64, 0, []byte{1, 2, 3})),
		eth(macA, nil, 0x86DD, ip6(6, ip6A, ip6B, 0, []byte{1, 2, 3})),
		{0x01}, nil,
	} {
		flowHash(f)
	}
}
