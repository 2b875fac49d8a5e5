package hfi_test

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
)

// TestUDPPeerErrorFloodBreaker: a flood of errors (forged ICMP port
// unreachable, more than 10000 a second) trips the breaker: the socket
// takes no more errors (IP_RECVERR off) for a while, then again; the
// trip is counted, and reads go on unharmed. Without the breaker every
// read and send would meet an error first and the data path starve.
func TestUDPPeerErrorFloodBreaker(t *testing.T) {
	raw, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		t.Skipf("no raw ICMP socket (needs CAP_NET_RAW): %v", err)
	}
	defer unix.Close(raw)
	u, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer u.Close()
	const offFor = 300 * time.Millisecond
	u.SetErrorsOffFor(offFor)
	h := hfi.New(u, hfi.Config{LID: 1})
	recvErr := func() int {
		var v int
		var gerr error
		if err := u.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_IP, unix.IP_RECVERR) }); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		return v
	}
	if recvErr() != 1 {
		t.Fatal("IP_RECVERR is not on")
	}
	icmp := hfitest.ForgedPortUnreachable(u.LocalAddr(), netip.MustParseAddrPort("127.0.0.2:4793"))
	to := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	msgs := make([]hfi.Message, 8)
	for i := range msgs {
		msgs[i].Buf = make([]byte, 2048)
	}
	tripped := time.Time{}
	for i := 0; i < 20*hfi.MaxErrsPerWindow && u.PeerErrorFloods() == 0; i++ {
		if err := unix.Sendto(raw, icmp, 0, to); err != nil {
			t.Fatal(err)
		}
		if i%16 == 15 {
			if _, err := u.TryReadBatch(msgs); err != nil {
				t.Fatalf("read during the flood: %v", err)
			}
		}
	}
	if u.PeerErrorFloods() != 1 || h.Counters.PeerErrorFloods.Load() != 1 {
		t.Fatalf("after %d errors: %d trips (HFI counts %d), want 1", u.PeerErrorCount(), u.PeerErrorFloods(), h.Counters.PeerErrorFloods.Load())
	}
	tripped = time.Now()
	if recvErr() != 0 {
		t.Fatal("IP_RECVERR still on after the trip")
	}
	// Off: forged errors are not taken.
	if err := u.DrainErrors(); err != nil { // what was queued before the trip
		t.Fatal(err)
	}
	before := u.PeerErrorCount()
	for range 100 {
		_ = unix.Sendto(raw, icmp, 0, to)
	}
	if k, err := u.TryReadBatch(msgs); k != 0 || err != nil {
		t.Fatalf("read with errors off: %d, %v", k, err)
	}
	if err := u.DrainErrors(); err != nil || u.PeerErrorCount() != before {
		t.Fatalf("with errors off: errors %d -> %d (%v)", before, u.PeerErrorCount(), err)
	}
	if !waitfor.Poll(time.Until(tripped.Add(offFor+5*time.Second)), func() bool { return recvErr() == 1 }) {
		t.Fatalf("IP_RECVERR not back on %v after the trip", offFor+5*time.Second)
	}
	// On again: they are.
	_ = unix.Sendto(raw, icmp, 0, to)
	if err := u.DrainErrors(); err != nil || u.PeerErrorCount() != before+1 {
		t.Fatalf("with errors on again: errors %d -> %d (%v)", before, u.PeerErrorCount(), err)
	}
}
