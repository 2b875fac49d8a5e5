package hfi

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/waitfor"
)

// closedPort returns an endpoint on addr where nothing listens: a port the
// kernel gave a socket that is closed again. Datagrams sent there are
// answered with ICMP port unreachable (over loopback, without the rate
// limit the kernel puts on other devices).
func closedPort(t *testing.T, addr string) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	ep := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	return ep
}

func sendOne(t *testing.T, u *UDP, to netip.AddrPort) {
	t.Helper()
	pkt := make([]byte, 64)
	if n, err := u.WriteBatch([]Message{{Buf: pkt, N: len(pkt), Addr: to}}); n != 1 {
		t.Fatalf("send to %v: %d sent, %v", to, n, err)
	}
}

// readUntil try-reads u until cond holds or 5 s pass; every read must
// succeed: the errors the kernel reports for datagrams sent are not the
// read's.
func readUntil(t *testing.T, u *UDP, cond func(read int) bool) int {
	t.Helper()
	msgs := newReadBatch(8)
	got := 0
	for deadline := time.Now().Add(5 * time.Second); !cond(got); {
		if time.Now().After(deadline) {
			t.Fatalf("not so after 5 s (read %d datagrams; %d peer errors)", got, u.PeerErrorCount())
		}
		k, err := u.TryReadBatch(msgs)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got += k
		if k == 0 {
			// A non-blocking reader's pause between empty reads.
			time.Sleep(time.Millisecond)
		}
	}
	return got
}

// TestUDPPeerErrors: datagrams sent to a port where nothing listens come
// back as ICMP port unreachable; the transport records them against that
// endpoint (errno, ICMP message, who sent it), counts them in the HFI's
// xmit_peer_errors too, and its reads go on as if nothing happened: the
// next datagram that arrives is read. Without IP_RECVERR the kernel drops
// those ICMP errors and nothing is recorded.
func TestUDPPeerErrors(t *testing.T) {
	for _, c := range []struct{ name, listen, peer, reason string }{
		{"IPv4", "127.0.0.1:0", "127.0.0.1:0", "ICMP port unreachable"},
		{"IPv6", "[::1]:0", "[::1]:0", "ICMPv6 port unreachable"},
		{"dual-stack socket, IPv4 peer", "[::]:0", "127.0.0.1:0", "ICMP port unreachable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := ListenUDP(netip.MustParseAddrPort(c.listen), 8)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", c.listen, err)
			}
			defer u.Close()
			h := New(u, Config{LID: 1})
			dead := closedPort(t, c.peer)
			before := time.Now()
			for range 3 {
				sendOne(t, u, dead)
			}
			readUntil(t, u, func(int) bool { return u.PeerErrorCount() >= 3 })
			errs := u.PeerErrors()
			if len(errs) != 1 {
				t.Fatalf("errors recorded for %d endpoints, want 1: %+v", len(errs), errs)
			}
			e := errs[0]
			if e.Endpoint != dead || e.Errno != unix.ECONNREFUSED || e.Reason != c.reason || e.Count != 3 {
				t.Errorf("recorded %+v; want endpoint %v, ECONNREFUSED, %q, count 3", e, dead, c.reason)
			}
			if e.From != dead.Addr() {
				t.Errorf("reported by %v, want %v (the loopback host itself)", e.From, dead.Addr())
			}
			if e.First.Before(before) || e.Last.Before(e.First) {
				t.Errorf("first %v, last %v: not since the sends at %v", e.First, e.Last, before)
			}
			if want := "connection refused (" + c.reason + " from " + dead.Addr().String() + ")"; e.String() != want {
				t.Errorf("String() = %q, want %q", e.String(), want)
			}
			if n := h.Counters.XmitPeerErrors.Load(); n != 3 {
				t.Errorf("xmit_peer_errors %d, want 3", n)
			}
			if got := h.PeerErrors(); len(got) != 1 || got[0].Endpoint != dead {
				t.Errorf("HFI.PeerErrors() = %+v", got)
			}

			// A datagram from a live peer is read as ever, after errors.
			sendOne(t, u, dead)
			live, err := ListenUDP(netip.MustParseAddrPort(c.peer), 8)
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			to := u.LocalAddr()
			if to.Addr().IsUnspecified() {
				to = netip.AddrPortFrom(live.LocalAddr().Addr(), to.Port())
			}
			sendOne(t, live, to)
			if n := readUntil(t, u, func(n int) bool { return n >= 1 && u.PeerErrorCount() >= 4 }); n != 1 {
				t.Fatalf("read %d datagrams, sent 1", n)
			}
		})
	}
}

// liveAndDead returns a transport on loopback, another (a live peer) and a
// port where nothing listens (a dead one); the transports close when the
// test ends.
func liveAndDead(t *testing.T) (u, live *UDP, dead netip.AddrPort) {
	t.Helper()
	u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	t.Cleanup(func() { u.Close() })
	live, err = ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	return u, live, closedPort(t, "127.0.0.1:0")
}

// TestUDPSendAfterPeerError: a send after a datagram to a dead peer, to
// a live one, is sent: the kernel returns the dead peer's error from the
// next send instead of sending (and clears it); WriteBatch sends again.
func TestUDPSendAfterPeerError(t *testing.T) {
	u, live, dead := liveAndDead(t)
	for i := range 5 {
		sendOne(t, u, dead)
		sendOne(t, u, live.LocalAddr())
		if n := readUntil(t, live, func(n int) bool { return n == 1 }); n != 1 {
			t.Fatalf("round %d: the live peer got %d datagrams, want 1", i, n)
		}
	}
	if d := u.DrainErrors(); d != nil {
		t.Fatal(d)
	}
	if n := u.PeerErrorCount(); n != 5 {
		t.Fatalf("%d errors recorded, want 5", n)
	}
}

// TestUDPPeerErrorsBlockingRead: a ReadBatch waiting for datagrams is not
// ended by an error the kernel reports for a datagram sent, and does not
// spin on it: it records it and waits on, and returns the next datagram.
func TestUDPPeerErrorsBlockingRead(t *testing.T) {
	u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer u.Close()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		msgs := newReadBatch(8)
		n, err := u.ReadBatch(msgs)
		done <- result{n, err}
	}()
	dead := closedPort(t, "127.0.0.1:0")
	sendOne(t, u, dead)
	waitfor.Until(t, 5*time.Second, "an error recorded", func() bool { return u.PeerErrorCount() != 0 })
	select {
	case r := <-done:
		t.Fatalf("ReadBatch returned %d, %v on a peer's error", r.n, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(u.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.n != 1 || r.err != nil {
			t.Fatalf("ReadBatch: %d, %v; want the datagram", r.n, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadBatch did not return the datagram within 5 s")
	}
}

// TestUDPPeerErrorsQueueGroup: the queues of a group keep one record,
// whichever socket sent the datagram and whichever the kernel reports its
// error on.
func TestUDPPeerErrorsQueueGroup(t *testing.T) {
	qs, err := ListenUDPQueues(netip.MustParseAddrPort("127.0.0.1:0"), 8, 2)
	if err != nil {
		t.Skipf("no queue group here: %v", err)
	}
	defer func() {
		for _, q := range qs {
			q.Close()
		}
	}()
	h := New(qs[0], Config{LID: 1})
	dead := closedPort(t, "127.0.0.1:0")
	sendOne(t, qs[1], dead)
	// The kernel gives the error to a socket of the group by a hash of the
	// addresses, so each queue's reader reads its own.
	waitfor.Until(t, 5*time.Second, "an error recorded at queue 0", func() bool {
		if qs[0].PeerErrorCount() != 0 {
			return true
		}
		for _, q := range qs {
			if _, err := q.TryReadBatch(newReadBatch(1)); err != nil {
				t.Fatal(err)
			}
		}
		return false
	})
	if e := qs[0].PeerErrors(); len(e) != 1 || e[0].Endpoint != dead {
		t.Fatalf("queue 0 sees %+v", e)
	}
	if n := h.Counters.XmitPeerErrors.Load(); n != 1 {
		t.Fatalf("xmit_peer_errors %d, want 1", n)
	}
}

// TestDrainErrors: DrainErrors (what the data plane calls on EPOLLERR)
// takes a queued error off the socket, so that a level-triggered epoll set
// does not report the socket again and again.
func TestDrainErrors(t *testing.T) {
	u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer u.Close()
	sendOne(t, u, closedPort(t, "127.0.0.1:0"))
	pollErr := func() bool {
		var err error
		var revents int16
		cerr := u.Control(func(fd uintptr) {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			_, err = unix.Poll(p, 0)
			revents = p[0].Revents
		})
		if err = errors.Join(err, cerr); err != nil {
			t.Fatal(err)
		}
		return revents&unix.POLLERR != 0
	}
	if !pollErr() {
		t.Fatal("no POLLERR after a datagram to a closed port")
	}
	if err := u.DrainErrors(); err != nil {
		t.Fatal(err)
	}
	if pollErr() {
		t.Fatal("POLLERR still set after DrainErrors")
	}
	if u.PeerErrorCount() != 1 {
		t.Fatalf("%d errors recorded, want 1", u.PeerErrorCount())
	}
	u.Close()
	if err := u.DrainErrors(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("DrainErrors after Close: %v, want net.ErrClosed", err)
	}
}

// TestPeerErrorsBounded: the record keeps at most maxPeerErrors endpoints,
// making room by the oldest error, and counts every error.
func TestPeerErrorsBounded(t *testing.T) {
	p := newPeerErrors()
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	for i := range maxPeerErrors + 10 {
		now = now.Add(time.Second)
		ep := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 4793)
		p.record(PeerError{Endpoint: ep, Errno: unix.ECONNREFUSED, Error: "x", Reason: "y"})
	}
	p.record(PeerError{Errno: unix.ECONNREFUSED}) // no endpoint: counted only
	s := p.snapshot()
	if len(s) != maxPeerErrors || p.total.Load() != maxPeerErrors+11 {
		t.Fatalf("%d endpoints, %d errors", len(s), p.total.Load())
	}
	if first := netip.AddrFrom4([4]byte{10, 0, 0, 9}); s[len(s)-1].Endpoint.Addr() == first {
		t.Fatal("the oldest endpoints were kept")
	}
	if !s[0].Last.After(s[1].Last) {
		t.Fatal("not the latest first")
	}

	// Errors PeerErrorQuiet apart are two runs: the count starts again.
	ep := s[0].Endpoint
	for _, gap := range []time.Duration{time.Second, PeerErrorQuiet - time.Second, PeerErrorQuiet} {
		now = now.Add(gap)
		p.record(PeerError{Endpoint: ep, Errno: unix.EHOSTUNREACH, Error: "no route to host", Reason: "z"})
	}
	for _, e := range p.snapshot() {
		if e.Endpoint == ep && (e.Count != 1 || !e.First.Equal(now) || e.Error != "no route to host") {
			t.Fatalf("after a quiet spell: %+v, want a run of 1 error from %v", e, now)
		}
	}
}

// FuzzParseErrEntry: any control data the kernel could hand over parses
// without a panic.
func FuzzParseErrEntry(f *testing.F) {
	var ee unix.SockExtendedErr
	ee.Errno, ee.Origin, ee.Type, ee.Code = uint32(unix.ECONNREFUSED), eeOriginICMP, 3, 3
	eb := (*[unsafe.Sizeof(ee)]byte)(unsafe.Pointer(&ee))[:]
	ctl := make([]byte, unix.CmsgSpace(len(eb)+unix.SizeofSockaddrInet4))
	var h unix.Cmsghdr
	h.Level, h.Type = unix.SOL_IP, unix.IP_RECVERR
	h.SetLen(unix.CmsgLen(len(eb) + unix.SizeofSockaddrInet4))
	copy(ctl, (*[unix.SizeofCmsghdr]byte)(unsafe.Pointer(&h))[:])
	copy(ctl[unix.CmsgLen(0):], eb)
	f.Add(ctl, uint32(16))
	f.Add(ctl[:unix.CmsgLen(0)+3], uint32(0))
	f.Add([]byte{}, uint32(28))
	f.Fuzz(func(t *testing.T, ctl []byte, namelen uint32) {
		var name unix.RawSockaddrInet6
		e := parseErrEntry(&name, namelen, ctl)
		if e.Error == "" || e.Reason == "" {
			t.Fatalf("%+v: no error text", e)
		}
	})
}
