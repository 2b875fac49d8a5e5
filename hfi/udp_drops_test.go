package hfi

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUDPKernelDrops: datagrams the kernel drops because the socket's
// receive buffer is full are exactly the ones KernelDrops counts. Over
// loopback a send is delivered (or dropped) before sendto returns, so
// after sending n datagrams into a small buffer and reading what it kept,
// kept + dropped == n. A second round shows the count is a running total.
func TestUDPKernelDrops(t *testing.T) {
	u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 64)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer u.Close()
	if n, ok := u.KernelDrops(); !ok {
		t.Skip("the kernel does not report socket drops (SO_MEMINFO)")
	} else if n != 0 {
		t.Fatalf("a new socket reports %d drops", n)
	}
	// The smallest receive buffer the kernel allows (SOCK_MIN_RCVBUF):
	// a few datagrams at most.
	if err := u.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 1)
	}); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(u.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload := make([]byte, 1000)
	var want uint64
	for round := range 2 {
		const n = 200
		for i := range n {
			if _, err := c.Write(payload); err != nil {
				t.Fatalf("round %d: send %d: %v", round, i, err)
			}
		}
		kept := 0
		msgs := make([]Message, 64)
		for i := range msgs {
			msgs[i].Buf = make([]byte, 2048)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			k, err := u.TryReadBatch(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				break
			}
			kept += k
		}
		if kept == 0 || kept >= n {
			t.Fatalf("round %d: the socket kept %d of %d datagrams; the test needs some kept and some dropped", round, kept, n)
		}
		want += uint64(n - kept)
		got, ok := u.KernelDrops()
		if !ok || got != want {
			t.Fatalf("round %d: KernelDrops = %d, %v; want %d (%d sent, %d read)", round, got, ok, want, n, kept)
		}
		t.Logf("round %d: %d sent, %d kept, %d dropped in all", round, n, kept, got)
	}
}

// TestUDPKernelDropsWrap: the kernel's 32-bit count wrapping around is
// still counted as the drops since the last reading.
func TestUDPKernelDropsWrap(t *testing.T) {
	u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer u.Close()
	if _, ok := u.KernelDrops(); !ok {
		t.Skip("the kernel does not report socket drops (SO_MEMINFO)")
	}
	// As if the kernel's count had last read 2^32 - 5, and 1000 total.
	u.dropsMu.Lock()
	u.dropsLast, u.dropsTotal = 1<<32-5, 1000
	u.dropsMu.Unlock()
	// The socket's real count is 0: 5 drops since, across the wrap.
	if got, ok := u.KernelDrops(); !ok || got != 1005 {
		t.Fatalf("KernelDrops = %d, %v; want 1005", got, ok)
	}
	u.Close()
	if _, ok := u.KernelDrops(); ok {
		t.Error("a closed socket still reports drops")
	}
}
