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
			case tc.noCsum && a.gsoLimit() >= 88:
				t.Errorf("the kernel refused GSO but the transport still uses it for datagrams up to %d bytes", a.gsoLimit())
			case !tc.noGSO && !tc.noCsum && b.groMsgs == 0:
				t.Error("no datagrams arrived coalesced: GSO or GRO not in use")
			case (tc.noGSO || tc.noCsum) && b.groMsgs != 0:
				t.Errorf("%d coalesced reads without GSO", b.groMsgs)
			}
			t.Logf("%d datagrams, %d reads held more than one", len(msgs), b.groMsgs)
		})
	}
}

// TestUDPGSOPathMTU: datagrams larger than the path MTU can leave only as
// IP fragments, one by one; the kernel refuses a GSO send of them
// (EMSGSIZE; EINVAL before 6.13). Every datagram must still arrive, smaller
// ones still go with GSO, and the limit is tried again after gsoProbeAfter.
// IPV6_MTU on the sending socket stands in for the path MTU (the default
// eth_mtu 1500 on a 1500-byte underlay makes 1572-byte packets).
func TestUDPGSOPathMTU(t *testing.T) {
	a, err := ListenUDP(netip.MustParseAddrPort("[::1]:0"), 64)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer a.Close()
	b, err := ListenUDP(netip.MustParseAddrPort("[::1]:0"), 64)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer b.Close()
	if !b.gro {
		t.Skip("no UDP GRO on this kernel")
	}
	if err := control(a, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU, 1280)
	}); err != nil {
		t.Fatal(err)
	}
	batch := func() []Message {
		var msgs []Message
		add := func(n, count int, flow byte) {
			for range count {
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(len(msgs)*5 + i)
				}
				p[steerL4Off], p[steerEntropyOff] = 0x78, flow
				msgs = append(msgs, Message{Buf: p, N: n, Addr: b.LocalAddr()})
			}
		}
		add(1544, 20, 1) // 1544 + 48 > 1280: fragments
		add(1000, 20, 2) // fits
		return msgs
	}
	for round := range 3 {
		if round == 2 {
			a.gsoLowered.Store(0) // the limit has held gsoProbeAfter
			if got := a.gsoLimit(); got != gsoNoLimit {
				t.Fatalf("after gsoProbeAfter the GSO limit is %d, want none", got)
			}
		}
		msgs := batch()
		before := b.groMsgs
		n, err := a.WriteBatch(msgs)
		if err != nil || n != len(msgs) {
			t.Fatalf("round %d: WriteBatch = %d, %v; want %d, nil", round, n, err, len(msgs))
		}
		receiveAll(t, b, msgs, a.LocalAddr())
		if lim := a.gsoLimit(); lim < 1000 || lim >= 1544 {
			t.Errorf("round %d: GSO limit %d, want 1000-1543", round, lim)
		}
		if b.groMsgs == before {
			t.Errorf("round %d: the 1000-byte datagrams did not arrive coalesced: GSO off for them too", round)
		}
		if a.noGSO.Load() {
			t.Errorf("round %d: GSO turned off for good", round)
		}
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
