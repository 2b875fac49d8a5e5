package engine_test

import (
	"encoding/binary"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// The kernel's netdev pads a frame shorter than 60 bytes with zeros before
// anything looks at it (opa_netdev_start_xmit, then opa_vnic_encap_skb and
// hfi1_netdev_start_xmit): tx_bytes counts the 60 bytes the fabric carries,
// and the SC and RC choices read the padded frame (docs/linux-compat.md §2,
// §2.7; docs/design.md "pad to 60, pick DLID/SC/RC/entropy").
func TestEncapShortFrameSeesPaddedFrame(t *testing.T) {
	a := enginetest.NewNode(t, hfitest.NewNetwork(), enginetest.LIDA, enginetest.EPA)
	cfg := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	for i := range cfg.Port.SC.PCPToSCUC {
		cfg.Port.SC.PCPToSCUC[i] = uint8(10 + i)
	}
	cfg.Port.SC.NonVLANUC = 3
	cfg.VESW.RC = 1<<encap.RCIPv4 | 5<<encap.RCIPv4TCP
	if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	p := a.Engine.Port(0)
	dst, src := encap.MACForLID(enginetest.LIDB, 1), encap.MACForLID(enginetest.LIDA, 1)
	head := func(n int, et uint16) []byte {
		f := make([]byte, n)
		copy(f, dst[:])
		copy(f[6:], src[:])
		binary.BigEndian.PutUint16(f[12:], et)
		return f
	}
	arp := head(42, 0x0806)
	tagged := head(15, encap.EtherTypeVLAN) // the tag's TCI runs into the padding
	tagged[14] = 5 << 5                     // PCP 5
	ipv4 := head(30, encap.EtherTypeIPv4)   // the IPv4 header runs into the padding
	ipv4[14], ipv4[14+9] = 0x45, 6          // TCP

	for _, tc := range []struct {
		name   string
		frame  []byte
		sc, rc uint8
	}{
		{"arp", arp, 3, 0},
		{"tag in padding", tagged, 15, 0},
		{"ipv4 in padding", ipv4, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, engine.TxBufLen)
			for i := range buf {
				buf[i] = 0xEE // what the buffer held before: not zero
			}
			copy(buf[encap.Headroom:], tc.frame)
			before := p.Counters.TxBytes.Load()
			pkt := p.EncapOne(buf, len(tc.frame))
			if pkt == nil {
				t.Fatal("dropped")
			}
			if got := p.Counters.TxBytes.Load() - before; got != 64 {
				t.Errorf("tx_bytes grew by %d, want 64 (60-byte frame + FCS)", got)
			}
			h := encap.Header16B(pkt)
			if h.SC() != tc.sc || h.RC() != tc.rc {
				t.Errorf("SC %d RC %d, want SC %d RC %d", h.SC(), h.RC(), tc.sc, tc.rc)
			}
			frame, _, _, err := encap.DecapVNIC(pkt)
			if err != nil || len(frame) != 60 {
				t.Fatalf("decap: %v, %d bytes", err, len(frame))
			}
			for i, b := range frame[len(tc.frame):] {
				if b != 0 {
					t.Fatalf("padding byte %d is %#x", len(tc.frame)+i, b)
				}
			}
		})
	}
	if v := p.Counters.TxVLAN.Load(); v != 1 {
		t.Errorf("tx_vlan %d, want 1 (the kernel sees the tag of the padded frame)", v)
	}
}

// An eth_mtu below the minimum MTU (the EM may set any, vnicd's config
// refuses them): the port carries what a netdev of MTU 68 would, as the
// kernel's max_mtu = max(eth_mtu, min_mtu) made it. A short frame is padded
// and sent, a frame of 68 + 18 bytes is sent, a longer one is a counted
// drop, never a write past the buffer.
func TestEncapShortFrameTinyMTU(t *testing.T) {
	a := enginetest.NewNode(t, hfitest.NewNetwork(), enginetest.LIDA, enginetest.EPA)
	for _, mtu := range []uint16{1, 20, 41, 42} {
		cfg := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
		cfg.VESW.EthMTU = mtu
		if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
		p := a.Engine.Port(0)
		maxFrame := engine.MinEthMTU + 18
		frame := enginetest.EthFrame(encap.MACForLID(enginetest.LIDB, 1), encap.MACForLID(enginetest.LIDA, 1), 100)
		for _, n := range []int{14, maxFrame, maxFrame + 1} {
			buf := make([]byte, engine.TxBufLenFor(maxFrame))
			copy(buf[encap.Headroom:], frame[:n])
			before := p.Counters.TxFifoErrors.Load()
			pkt := p.EncapOne(buf, n)
			if n <= maxFrame {
				if pkt == nil {
					t.Errorf("eth_mtu %d: a %d-byte frame was dropped", mtu, n)
				}
				continue
			}
			if pkt != nil {
				t.Errorf("eth_mtu %d: a %d-byte frame was sent", mtu, n)
			}
			if p.Counters.TxFifoErrors.Load() != before+1 {
				t.Errorf("eth_mtu %d: a %d-byte frame's drop was not counted", mtu, n)
			}
		}
	}
}
