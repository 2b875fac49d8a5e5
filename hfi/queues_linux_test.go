package hfi

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestQueueSteering sends runs of VNIC packets of several entropies,
// management packets and runts to a group of three queues, in one batch
// whose same-size runs the sender would send with GSO, and checks that each
// datagram reaches the queue the program names, in the order sent.
func TestQueueSteering(t *testing.T) {
	for _, tc := range []struct{ name, listen, dst string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1"},
		{"dual-stack", "[::]:0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			qs := listenQueues(t, netip.MustParseAddrPort(tc.listen), 64, n)
			if len(qs) != n {
				t.Fatalf("%d queues, want %d", len(qs), n)
			}
			port := qs[0].LocalAddr().Port()
			for i, q := range qs {
				if q.LocalAddr().Port() != port {
					t.Fatalf("queue %d on port %d, queue 0 on %d", i, q.LocalAddr().Port(), port)
				}
			}
			a, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 64)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			dst := netip.AddrPortFrom(netip.MustParseAddr(tc.dst), port)

			var msgs []Message
			var want [n][]int // per queue, indexes of msgs in the order sent
			add := func(size int, l4, entropy byte, q int) {
				p := make([]byte, size)
				for i := range p {
					p[i] = byte(len(msgs) + i)
				}
				if size > steerL4Off {
					p[steerL4Off] = l4
				}
				if size > steerEntropyOff {
					p[steerEntropyOff] = entropy
				}
				if size > steerEntropyOff+1 {
					p[steerEntropyOff+1] = 0xA5
				}
				want[q] = append(want[q], len(msgs))
				msgs = append(msgs, Message{Buf: p, N: size, Addr: dst})
			}
			for e := range 12 {
				for range 5 {
					add(1200, 0x78, byte(e*37), int(byte(e*37))%n)
				}
			}
			add(200, 0x08, 1, 0) // management: queue 0, whatever its entropy
			add(200, 0x08, 2, 0)
			add(12, 0x78, 0, 0)   // a VNIC L4 byte but too short for the entropy byte: queue 0
			add(13, 0x78, 2, 2%n) // just long enough for it
			add(8, 0x78, 0, 0)    // too short for the L4 byte: queue 0
			add(1200, 0x78, 254, 254%n)
			if k, err := a.WriteBatch(msgs); k != len(msgs) || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", k, err, len(msgs))
			}

			rmsgs := make([]Message, 16)
			for i := range rmsgs {
				rmsgs[i].Buf = make([]byte, 2048)
			}
			for q := range n {
				var got []int
				for deadline := time.Now().Add(3 * time.Second); len(got) < len(want[q]) && time.Now().Before(deadline); {
					k, err := qs[q].TryReadBatch(rmsgs)
					if err != nil {
						t.Fatal(err)
					}
					if k == 0 {
						// A non-blocking reader's pause between empty reads.
						time.Sleep(time.Millisecond)
						continue
					}
					for _, m := range rmsgs[:k] {
						got = append(got, indexOf(msgs, m.Buf[:m.N]))
					}
				}
				if !slices.Equal(got, want[q]) {
					t.Errorf("queue %d got datagrams %v, want %v (-1: not one sent)", q, got, want[q])
				}
			}
		})
	}
}

// listenQueues opens a queue group for the test, which skips where the
// kernel cannot make one, and closes it when the test ends.
func listenQueues(t *testing.T, addr netip.AddrPort, batch, n int) []*UDP {
	t.Helper()
	qs, err := ListenUDPQueues(addr, batch, n)
	if err != nil {
		t.Skipf("cannot make a queue group here: %v", err)
	}
	t.Cleanup(func() {
		for _, q := range qs {
			q.Close()
		}
	})
	return qs
}

func indexOf(msgs []Message, b []byte) int {
	for i, m := range msgs {
		if string(m.Buf[:m.N]) == string(b) {
			return i
		}
	}
	return -1
}

// TestQueuesPortTaken: a queue group is refused a port that a socket holds,
// whether that socket would share the port or not, and a bad count is an
// error.
func TestQueuesPortTaken(t *testing.T) {
	qs := listenQueues(t, netip.MustParseAddrPort("127.0.0.1:0"), 8, 2)
	addr := qs[0].LocalAddr()
	if _, err := ListenUDPQueues(addr, 8, 2); !errors.Is(err, unix.EADDRINUSE) {
		t.Errorf("a second group on %v: %v, want EADDRINUSE", addr, err)
	}
	if _, err := ListenUDP(addr, 8); !errors.Is(err, unix.EADDRINUSE) {
		t.Errorf("a plain socket on %v: %v, want EADDRINUSE", addr, err)
	}
	plain, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := ListenUDPQueues(plain.LocalAddr(), 8, 2); !errors.Is(err, unix.EADDRINUSE) {
		t.Errorf("a group on a plain socket's %v: %v, want EADDRINUSE", plain.LocalAddr(), err)
	}
	if _, err := ListenUDPQueues(netip.MustParseAddrPort("127.0.0.1:0"), 8, MaxQueues+1); err == nil {
		t.Errorf("%d queues: no error", MaxQueues+1)
	}
}

// TestQueueMisrouted: when datagrams of several flows reach a queue as one
// GSO skb, as receive GRO on a NIC merges them, the group steers them whole
// by the first; the queues' pollers count the VNIC packets that belong to
// another queue, and only those.
func TestQueueMisrouted(t *testing.T) {
	qs := listenQueues(t, netip.MustParseAddrPort("127.0.0.1:0"), 16, 2)
	h := New(qs[0], Config{})
	polls := []*RxPoller{h.NewRxPoller(), h.NewQueueRxPoller(qs[1], nil)}
	for i, p := range polls {
		p.SetQueue(i, 2)
	}
	conn, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(qs[0].LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const size = 100
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT, size)
	}); err != nil || serr != nil {
		t.Skipf("no UDP_SEGMENT here: %v %v", err, serr)
	}
	// One send, one GSO skb: its datagrams' L4 types and entropies.
	send := func(pkts ...[2]byte) {
		t.Helper()
		buf := make([]byte, size*len(pkts))
		for i, p := range pkts {
			buf[i*size+steerL4Off], buf[i*size+steerEntropyOff] = p[0], p[1]
		}
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	const vnic, mgmt = 0x78, 0x08
	send([2]byte{vnic, 0}, [2]byte{vnic, 2}, [2]byte{vnic, 1}, [2]byte{vnic, 3}, [2]byte{mgmt, 1}) // queue 0: 2 misrouted
	send([2]byte{vnic, 5}, [2]byte{vnic, 4}, [2]byte{vnic, 7})                                     // queue 1: 1 misrouted
	want := [2]struct{ pkts, misrouted uint64 }{{5, 2}, {3, 1}}
	for i, p := range polls {
		var got uint64
		for deadline := time.Now().Add(3 * time.Second); got < want[i].pkts && time.Now().Before(deadline); {
			k, _, err := p.Poll()
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				// A non-blocking reader's pause between empty reads.
				time.Sleep(time.Millisecond)
			}
			got += uint64(k)
		}
		if got != want[i].pkts || p.Misrouted() != want[i].misrouted {
			t.Errorf("queue %d: %d datagrams, %d misrouted; want %d, %d", i, got, p.Misrouted(), want[i].pkts, want[i].misrouted)
		}
	}
}

// TestQueueGroupFormedUnderTraffic forms queue groups on a port that
// datagrams of both queues' flows already stream to, as a restarted daemon's
// peers keep sending: while the group is incomplete the kernel cannot steer
// by the program, so no datagram may be delivered before every queue has
// joined. Each queue must read only its own flow's datagrams.
func TestQueueGroupFormedUnderTraffic(t *testing.T) {
	probe, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 1)
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.LocalAddr()
	probe.Close()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// The sender: datagrams of entropy 0 (queue 0) and 1 (queue 1) in turn,
	// until told to stop, for at most 20 s.
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		dst := net.UDPAddrFromAddrPort(addr)
		p := make([]byte, 64)
		p[steerL4Off] = 0x78
		sent := 0
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); sent++ {
			select {
			case <-stop:
				done <- sent
				return
			default:
			}
			p[steerEntropyOff] = byte(sent & 1)
			conn.WriteToUDP(p, dst) // refused while no group listens
		}
		done <- sent
	}()
	defer func() {
		close(stop)
		t.Logf("sent %d datagrams", <-done)
	}()

	rmsgs := newReadBatch(64)
	const rounds = 30
	var read [2]int
	for r := range rounds {
		qs, err := ListenUDPQueues(addr, 64, 2)
		if err != nil {
			if r == 0 {
				t.Skipf("cannot make a queue group here: %v", err)
			}
			t.Fatalf("round %d: %v", r, err)
		}
		time.Sleep(2 * time.Millisecond)
		var wrong [2]int
		for q, u := range qs {
			for range 1000 {
				k, err := u.TryReadBatch(rmsgs)
				if err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					break
				}
				for _, m := range rmsgs[:k] {
					if int(m.Buf[steerEntropyOff]) != q {
						wrong[q]++
					}
				}
				read[q] += k
			}
		}
		if wrong != [2]int{} {
			t.Errorf("round %d: queues 0 and 1 read %d and %d datagrams of the other's flow", r, wrong[0], wrong[1])
		}
		for _, u := range qs {
			u.Close()
		}
	}
	t.Logf("queues read %d and %d datagrams in %d rounds", read[0], read[1], rounds)
	if read[0] == 0 || read[1] == 0 {
		t.Errorf("queues read %d and %d datagrams: the traffic did not reach the groups", read[0], read[1])
	}
}
