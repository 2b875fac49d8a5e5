package vnicd_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// emPortInfo is a sane VESWPortInfo Set for vport on vesw 1, which the
// fuzzer then changes.
func emPortInfo(vport uint8) []byte {
	pi := vema.PowerOnVESWPortInfo()
	pi.VESW.VESWID, pi.VESW.PKey, pi.VESW.UMcastDLID, pi.VESW.EthMTU = 1, 0x8001, enginetest.Mcast, 1500
	pi.VPort.ConfigState, pi.VPort.EncapSLID = vema.StateForwarding, enginetest.LIDA
	pi.VPort.BaseMACAddr = encap.MACForLID(enginetest.LIDA+encap.LID(vport), 1)
	b, _ := pi.MarshalBinary()
	return b
}

// FuzzEMConfiguresNode drives a node's real VEMA agent and ports with a
// sequence of EM requests of the fuzzer's choosing (VESWPortInfo Sets with
// any field changed, MAC table Sets, DeleteVESW, Gets), and after each one
// puts frames through every port the node then has: short, tagged, full
// and over-long frames from its netdev, and VNIC packets for it from the
// fabric. Whatever the EM sets (an eth_mtu of 1, a zero PKey, a multicast
// SLID), the node must neither panic nor hang.
func FuzzEMConfiguresNode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 148, 2, 0, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0})      // eth_mtu 1
	f.Add([]byte{0, 1, 14, 2, 0, 0, 0, 0, 2, 1, 4, 0, 0, 0, 0, 0, 0, 0}) // pkey 0, then a MAC table
	f.Add([]byte{0, 2, 0, 0, 3, 2, 0, 0, 0, 2, 0, 0})                    // DeleteVESW of a port
	f.Fuzz(func(t *testing.T, ops []byte) {
		n := hfitest.NewNetwork()
		nd := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
		m := vnicd.NewMgmt(nd.Engine, vnicd.MgmtConfig{NodeGUID: 0x1122, PortGUID: 0x1122, Description: "node"}, nil)
		// Each op: kind, vport (0..3), offset, length, then length bytes.
		for steps := 0; len(ops) >= 4 && steps < 32; steps++ {
			kind, vport, off, k := ops[0], ops[1]%4, int(ops[2]), int(ops[3])
			ops = ops[4:]
			k = min(k, len(ops))
			data := ops[:k]
			ops = ops[k:]
			var req []byte
			switch kind % 4 {
			case 0: // VESWPortInfo Set: a sane one with data written at off
				pi := emPortInfo(vport)
				copy(pi[min(off, len(pi)):], data)
				req = vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, uint32(vport), pi)
			case 1: // MAC table Set: the data as it comes (header and entries)
				req = vemaMAD(vema.MethodSet, vema.AttrVESWPortMACEntries, uint32(vport), data)
			case 2:
				req = vemaMAD(vema.MethodSet, vema.AttrDeleteVESW, uint32(vport), nil)
			case 3: // a Get of any attribute
				req = vemaMAD(vema.MethodGet, uint16(off)|uint16(k)<<8, uint32(vport), data)
			}
			if r, ok := m.Agent.Handle(req); ok && len(r) != vema.MADSize {
				t.Fatalf("answer of %d bytes", len(r))
			}
			pushFrames(t, nd)
		}
	})
}

// pushFrames puts frames of every awkward length through each of nd's
// ports, both ways: from the netdev (waiting, bounded, until the port has
// taken them) and from the fabric as VNIC packets for vesw 1.
func pushFrames(t *testing.T, nd *enginetest.Node) {
	for vport, host := range nd.Host {
		p := nd.Engine.Port(vport)
		if p == nil {
			continue
		}
		dst, src := encap.MACForLID(enginetest.LIDB, 1), encap.MACForLID(enginetest.LIDA, 1)
		var frames [][]byte
		for _, l := range []int{13, 14, 15, 18, 42, 60, 61, 1514, 1518, 1519, 9018, 9019, encap.MaxFrameLen, encap.MaxFrameLen + 1} {
			fr := enginetest.EthFrame(dst, src, max(l, 34))[:l]
			if l >= 18 {
				binary.BigEndian.PutUint16(fr[12:], encap.EtherTypeVLAN)
				fr[14] = 0xE0
				binary.BigEndian.PutUint16(fr[16:], encap.EtherTypeIPv4)
			}
			frames = append(frames, fr)
		}
		frames = append(frames, enginetest.EthFrame([6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, src, 42))
		before := p.Counters.TxPackets.Load()
		sent := uint64(0)
		for _, fr := range frames {
			if k, err := host.Write([][]byte{fr}, 0); err == nil && k == 1 {
				sent++
			}
		}
		waitfor.Poll(time.Second, func() bool { return p.Counters.TxPackets.Load()-before >= sent })
		for _, l := range []int{14, 42, 60, 1518, 9018, encap.MaxFrameLen} {
			fr := enginetest.EthFrame(src, dst, max(l, 34))[:l]
			buf := make([]byte, encap.Headroom+encap.VNICPacketLen(l))
			copy(buf[encap.Headroom:], fr)
			pkt, err := encap.EncapVNIC(buf, encap.Headroom, l, &encap.VNICParams{SLID: enginetest.LIDB, DLID: enginetest.LIDA, PKey: 0x8001, VESWID: 1})
			if err != nil {
				t.Fatal(err)
			}
			nd.Tr.Inject(enginetest.EPB, pkt)
		}
	}
}
