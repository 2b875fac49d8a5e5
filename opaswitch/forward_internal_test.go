package opaswitch

import (
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vema"
)

// sink is a cable transport that takes every datagram and keeps none.
type sink struct{ sent int }

func (s *sink) ReadBatch([]hfi.Message) (int, error)    { return 0, nil }
func (s *sink) TryReadBatch([]hfi.Message) (int, error) { return 0, nil }
func (s *sink) WriteBatch(m []hfi.Message) (int, error) { s.sent += len(m); return len(m), nil }
func (s *sink) BatchSize() int                          { return 64 }
func (s *sink) LocalAddr() netip.AddrPort               { return netip.AddrPort{} }
func (s *sink) Close() error                            { return nil }
func (s *sink) Control(func(uintptr)) error             { return nil }

// benchSwitch is a switch whose ports 1 and 2 are cabled to sinks, both
// Active, with DLID 0x12 routed out of port 2 and group 0xF00001 on ports
// 1, 2.
func benchSwitch(tb testing.TB) (*Switch, *sink) {
	out := &sink{}
	peer1, peer2 := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:1")
	s, err := New(Config{NumPorts: 48, Cables: []Cable{{Port: 1, Transport: &sink{}, Peer: peer1}, {Port: 2, Transport: out, Peer: peer2}}})
	if err != nil {
		tb.Fatal(err)
	}
	s.Port(1).SetState(StateActive)
	s.Port(2).SetState(StateActive)
	b := [][LFTBlock]uint8{dropBlock}
	b[0][0x12] = 2
	if err := s.Tables.SetLFTBlocks(0, b); err != nil {
		tb.Fatal(err)
	}
	if err := s.Tables.SetLinearFDBTop(0x3F); err != nil {
		tb.Fatal(err)
	}
	if err := s.Tables.SetMFTBlock(0, 0, [MFTBlock]uint64{0, 0b110}); err != nil {
		tb.Fatal(err)
	}
	return s, out
}

func packet(tb testing.TB, dlid uint32, frameLen int) []byte {
	buf := make([]byte, encap.Headroom+frameLen+encap.Tailroom)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, frameLen, &encap.VNICParams{SLID: 0x11, DLID: dlid, PKey: 0x8001, VESWID: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return pkt
}

// BenchmarkForward is the switch's per-packet work on the data plane: the
// checks, the table lookup and the queueing on the egress port (its batch
// sent every 64 packets), for a unicast and a multicast DLID.
func BenchmarkForward(b *testing.B) {
	for _, c := range []struct {
		name string
		dlid uint32
	}{{"unicast", 0x12}, {"multicast", 0xF00001}} {
		b.Run(c.name, func(b *testing.B) {
			s, out := benchSwitch(b)
			in := s.Port(1)
			pkt := packet(b, c.dlid, 1428)
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				s.receive(in, pkt, in.peer)
				if len(s.ports[2].out) == cap(s.ports[2].out)-1 {
					s.flushPort(s.ports[2])
				}
			}
			s.flushPort(s.ports[2])
			if out.sent == 0 {
				b.Fatal("nothing went out of port 2")
			}
		})
	}
}

func TestForwardAllocatesNothing(t *testing.T) {
	s, _ := benchSwitch(t)
	in := s.Port(1)
	pkt := packet(t, 0x12, 1428)
	if n := testing.AllocsPerRun(1000, func() { s.receive(in, pkt, in.peer) }); n != 0 {
		t.Errorf("receive allocates %.1f times per packet", n)
	}
}

// FuzzSMA feeds the switch's SMA any packet on any port, and the data
// plane any datagram: nothing panics, and the SMA answers or counts.
func FuzzSMA(f *testing.F) {
	s, _ := benchSwitch(f)
	smp := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion,
		Method: vema.MethodGet, TID: 1, AttrID: vema.SMPAttrNodeInfo}}
	_ = smp.SetDirectedRoute(1, 2)
	mad, _ := smp.MarshalBinary()
	pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: encap.LID16BPermissive, DLID: encap.LID16BPermissive, SC: 15, PKey: 0x7FFF}, mad)
	f.Add(pkt, uint8(1))
	f.Add(packet(f, 0x12, 60), uint8(2))
	f.Fuzz(func(t *testing.T, pkt []byte, in uint8) {
		port := int(in%2) + 1
		s.handleSMP(pkt, port)
		s.receive(s.ports[port], pkt, s.ports[port].peer)
		for _, p := range s.ports[1:] {
			s.flushPort(p)
		}
	})
}
