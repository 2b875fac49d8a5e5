package hfi

import (
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
)

// countingReceiver counts the packets handed to it.
type countingReceiver struct{ n int }

func (r *countingReceiver) Receive([]byte, encap.Header16B, netip.AddrPort) { r.n++ }
func (r *countingReceiver) Flush()                                          {}

// TestUDPOversizeDatagramIsMalformed: a datagram longer than the largest 16B
// packet whose first MaxPacketLen bytes are a valid packet (LEN 2047, good
// ICRC) is malformed (docs/wire.md §1: its length is not LEN*8), with UDP GRO and
// without it. Without GRO the datagram is read into a buffer of its own; were
// that buffer exactly MaxPacketLen bytes, recvmmsg would cut the datagram to
// it (recvmsg(2): MSG_TRUNC) and the cut datagram would pass every check.
func TestUDPOversizeDatagramIsMalformed(t *testing.T) {
	for _, gro := range []bool{true, false} {
		name := map[bool]string{true: "GRO", false: "no GRO"}[gro]
		t.Run(name, func(t *testing.T) {
			a, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
			if err != nil {
				t.Skipf("no IPv4 loopback here: %v", err)
			}
			defer a.Close()
			b, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
			if err != nil {
				t.Skipf("no IPv4 loopback here: %v", err)
			}
			defer b.Close()
			if gro && !b.gro {
				t.Skip("no UDP GRO on this kernel")
			}
			b.gro = gro
			const lidA, lidB = 0x10, 0x20
			h := New(b, Config{LID: lidB, VerifyICRC: true})
			dir, err := NewDirectory(map[uint32]netip.AddrPort{lidA: a.LocalAddr(), lidB: b.LocalAddr()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.SetDirectory(dir)
			rec := &countingReceiver{}
			h.Register(encap.L4Ethernet, rec)

			buf := make([]byte, encap.Headroom+encap.MaxFrameLen+encap.Tailroom+8)
			pkt, err := encap.EncapVNIC(buf, encap.Headroom, encap.MaxFrameLen, &encap.VNICParams{
				SLID: lidA, DLID: lidB, PKey: 0x8001, VESWID: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(pkt) != encap.MaxPacketLen {
				t.Fatalf("packet of %d bytes, want %d", len(pkt), encap.MaxPacketLen)
			}
			long := buf[encap.Headroom-encap.VNICHeaderLen:][:len(pkt)+8] // the packet and 8 bytes more

			msgs := newReadBatch(8)
			for i, dg := range [][]byte{pkt, long} {
				if n, err := a.WriteBatch([]Message{{Buf: dg, N: len(dg), Addr: b.LocalAddr()}}); n != 1 {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				got := 0
				for deadline := time.Now().Add(3 * time.Second); got == 0 && time.Now().Before(deadline); {
					k, err := b.TryReadBatch(msgs)
					if err != nil {
						t.Fatal(err)
					}
					h.ReceiveBatch(msgs[:k])
					got += k
				}
				if got != 1 {
					t.Fatalf("datagram %d: read %d datagrams, want 1", i, got)
				}
			}
			c := &h.Counters
			if rec.n != 1 || c.RcvPkts.Load() != 1 || c.RcvMalformed.Load() != 1 {
				t.Errorf("received %d packets (RcvPkts %d), RcvMalformed %d; want the %d-byte packet received and the %d-byte datagram malformed",
					rec.n, c.RcvPkts.Load(), c.RcvMalformed.Load(), len(pkt), len(long))
			}
		})
	}
}
