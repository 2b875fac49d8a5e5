package hfi

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gsoBatch is a batch as a sender makes it: runs of same-size packets to
// one endpoint (the last of a run shorter), broken by other sizes and by a
// change of flow (steerKey).
func gsoBatch(dst netip.AddrPort) []Message {
	var msgs []Message
	add := func(n int, flow byte) {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(len(msgs)*7 + i)
		}
		p[steerL4Off], p[steerEntropyOff] = 0x78, flow
		msgs = append(msgs, Message{Buf: p, N: n, Addr: dst})
	}
	for range 30 {
		add(1544, 1)
	}
	add(1000, 1) // ends the run
	add(88, 2)
	add(88, 2)
	add(1544, 2)
	for range 50 { // more than maxGSOBytes/1544: two sends
		add(1528, 3)
	}
	for range 10 { // another flow: another send
		add(1528, 4)
	}
	add(9000, 5)
	add(9000, 5)
	return msgs
}

// receiveAll reads want datagrams with small msgs (so that one read's
// coalesced datagrams spread over several ReadBatch calls).
func receiveAll(t *testing.T, u *UDP, want []Message, from netip.AddrPort) {
	t.Helper()
	rmsgs := make([]Message, 7)
	for i := range rmsgs {
		rmsgs[i].Buf = make([]byte, 16384)
	}
	got := 0
	for deadline := time.Now().Add(3 * time.Second); got < len(want) && time.Now().Before(deadline); {
		k, err := u.ReadBatch(rmsgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rmsgs[:k] {
			if !bytes.Equal(m.Buf[:m.N], want[got].Buf[:want[got].N]) {
				t.Fatalf("datagram %d: %d bytes, want %d, or different bytes", got, m.N, want[got].N)
			}
			if m.Addr != from {
				t.Fatalf("datagram %d from %v, want %v", got, m.Addr, from)
			}
			got++
		}
	}
	if got != len(want) {
		t.Fatalf("received %d of %d", got, len(want))
	}
}

func TestUDPGSOAndGROLoopback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a, b   string
		noGSO  bool
		noCsum bool // the sender's socket sends no UDP checksum: the kernel refuses GSO
	}{
		{"ipv4", "127.0.0.1:0", "127.0.0.1:0", false, false},
		{"ipv6", "[::1]:0", "[::1]:0", false, false},
		{"dual-stack", "[::]:0", "127.0.0.1:0", false, false},
		{"GSO off", "127.0.0.1:0", "127.0.0.1:0", true, false},
		{"kernel refuses GSO", "127.0.0.1:0", "127.0.0.1:0", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ListenUDP(netip.MustParseAddrPort(tc.a), 64)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tc.a, err)
			}
			defer a.Close()
			b, err := ListenUDP(netip.MustParseAddrPort(tc.b), 64)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tc.b, err)
			}
			defer b.Close()
			if !b.gro {
				t.Skip("no UDP GRO on this kernel")
			}
			a.noGSO.Store(tc.noGSO)
			if tc.noCsum {
				_ = a.rc.Control(func(fd uintptr) {
					err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			msgs := gsoBatch(b.LocalAddr())
			n, err := a.WriteBatch(msgs)
			if err != nil || n != len(msgs) {
				t.Fatalf("WriteBatch = %d, %v; want %d", n, err, len(msgs))
			}
			from := a.LocalAddr()
			if from.Addr().IsUnspecified() {
				from = netip.AddrPortFrom(b.LocalAddr().Addr(), from.Port())
			}
			receiveAll(t, b, msgs, from)
			switch {
			case tc.noCsum && !a.noGSO.Load():
				t.Error("the kernel refused GSO but the transport still uses it")
			case !tc.noGSO && !tc.noCsum && b.groMsgs == 0:
				t.Error("no datagrams arrived coalesced: GSO or GRO not in use")
			case (tc.noGSO || tc.noCsum) && b.groMsgs != 0:
				t.Errorf("%d coalesced reads without GSO", b.groMsgs)
			}
			t.Logf("%d datagrams, %d reads held more than one", len(msgs), b.groMsgs)
		})
	}
}

func TestUDPGSONoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	a, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 64)
	if err != nil {
		t.Skip(err)
	}
	defer a.Close()
	b, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 64)
	if err != nil {
		t.Skip(err)
	}
	defer b.Close()
	msgs := gsoBatch(b.LocalAddr())[:40]
	rmsgs := make([]Message, 64)
	for i := range rmsgs {
		rmsgs[i].Buf = make([]byte, 16384)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if n, err := a.WriteBatch(msgs); n != len(msgs) || err != nil {
			panic(fmt.Sprint(n, err))
		}
		for got := 0; got < len(msgs); {
			k, err := b.ReadBatch(rmsgs)
			if err != nil {
				panic(err)
			}
			got += k
		}
	})
	if allocs != 0 {
		t.Fatalf("WriteBatch+ReadBatch allocate %v times per batch, want 0", allocs)
	}
}
