package hfi_test

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/hfi"
)

func TestUDPBatchLoopback(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1:0"},
		{"ipv6", "[::1]:0", "[::1]:0"},
		{"dual-stack to ipv4", "[::]:0", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := hfi.ListenUDP(netip.MustParseAddrPort(tc.a), 16)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tc.a, err)
			}
			defer a.Close()
			b, err := hfi.ListenUDP(netip.MustParseAddrPort(tc.b), 16)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tc.b, err)
			}
			defer b.Close()
			dst := b.LocalAddr()
			if dst.Addr().IsUnspecified() {
				t.Fatalf("b bound to %v", dst)
			}
			const total = 40 // more than one batch
			msgs := make([]hfi.Message, total)
			for i := range msgs {
				p := bytes.Repeat([]byte{byte(i)}, 88+i)
				msgs[i] = hfi.Message{Buf: p, N: len(p), Addr: dst}
			}
			n, err := a.WriteBatch(msgs)
			if err != nil || n != total {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			rmsgs := make([]hfi.Message, 16)
			for i := range rmsgs {
				rmsgs[i].Buf = make([]byte, 2048)
			}
			got := 0
			for deadline := time.Now().Add(3 * time.Second); got < total && time.Now().Before(deadline); {
				k, err := b.ReadBatch(rmsgs)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range rmsgs[:k] {
					if m.N != 88+got || m.Buf[0] != byte(got) {
						t.Fatalf("datagram %d: len %d first byte %d", got, m.N, m.Buf[0])
					}
					if m.Addr.Port() != a.LocalAddr().Port() || !m.Addr.Addr().Is4() && dst.Addr().Is4() {
						t.Fatalf("source %v, want port %d (unmapped)", m.Addr, a.LocalAddr().Port())
					}
					got++
				}
			}
			if got != total {
				t.Fatalf("received %d of %d", got, total)
			}
		})
	}
}

func TestUDPCloseUnblocksRead(t *testing.T) {
	u, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 4)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		msgs := []hfi.Message{{Buf: make([]byte, 100)}}
		_, err := u.ReadBatch(msgs)
		errc <- err
	}()
	// No condition shows that the reader is blocked in its read; the pause lets it get there, so that Close is seen to end a read in progress.
	time.Sleep(20 * time.Millisecond)
	u.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("ReadBatch after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("ReadBatch still blocked 2s after Close")
	}
}

func TestUDPWrongFamilySkipped(t *testing.T) {
	u, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	p := make([]byte, 88)
	n, err := u.WriteBatch([]hfi.Message{
		{Buf: p, N: len(p), Addr: netip.MustParseAddrPort("[::1]:9")},
		{Buf: p, N: len(p), Addr: u.LocalAddr()},
	})
	if n != 1 || !errors.Is(err, hfi.ErrAddrFamily) {
		t.Fatalf("WriteBatch = %d, %v; want 1 and ErrAddrFamily", n, err)
	}
}
