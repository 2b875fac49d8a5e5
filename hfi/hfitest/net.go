// Package hfitest is an in-memory fabric for tests: transports that carry
// datagrams between each other by copying, with no sockets, so that whole
// engines can be joined without a kernel. A Transport is an
// hfi.PollTransport: its Control fd (internal/readiness) is readable while
// datagrams may be queued, so an engine's epoll loop drives it as it drives
// a UDP socket.
package hfitest

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/readiness"
)

// Network joins Transports by address.
type Network struct {
	mu    sync.RWMutex
	nodes map[netip.AddrPort]*Transport
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{nodes: make(map[netip.AddrPort]*Transport)} }

// queueLen is how many datagrams a transport holds before it drops, as a
// socket buffer would.
const queueLen = 256

type datagram struct {
	buf []byte
	n   int
	src netip.AddrPort
}

// Transport is one endpoint of a Network. It implements hfi.PollTransport.
// Datagrams to unknown addresses, or to a full queue, are dropped and counted.
type Transport struct {
	net   *Network
	addr  netip.AddrPort
	queue chan datagram
	free  chan []byte
	done  chan struct{}
	once  sync.Once
	ready *readiness.Signal

	// Dropped counts datagrams this transport could not deliver.
	Dropped atomic.Uint64
}

var _ hfi.PollTransport = (*Transport)(nil)

// Listen adds an endpoint at addr, replacing any earlier one.
func (n *Network) Listen(addr netip.AddrPort) *Transport {
	t := &Transport{
		net:   n,
		addr:  addr,
		queue: make(chan datagram, queueLen),
		free:  make(chan []byte, queueLen),
		done:  make(chan struct{}),
		ready: readiness.Must(),
	}
	for range queueLen {
		// A byte more than the largest packet, as the HFI's own buffers:
		// a longer datagram is cut to this, and so stays malformed.
		t.free <- make([]byte, encap.MaxPacketLen+1)
	}
	n.mu.Lock()
	n.nodes[addr] = t
	n.mu.Unlock()
	return t
}

// Inject delivers a datagram to t as if src had sent it.
func (t *Transport) Inject(src netip.AddrPort, b []byte) bool {
	select {
	case buf := <-t.free:
		n := copy(buf, b)
		select {
		case t.queue <- datagram{buf, n, src}:
			t.ready.Notify()
			return true
		default:
			t.free <- buf
		}
	default:
	}
	return false
}

// ReadBatch implements hfi.Transport.
func (t *Transport) ReadBatch(msgs []hfi.Message) (int, error) {
	var d datagram
	select {
	case d = <-t.queue:
	case <-t.done:
		return 0, net.ErrClosed
	}
	return t.take(d, msgs), nil
}

// TryReadBatch implements hfi.PollTransport.
func (t *Transport) TryReadBatch(msgs []hfi.Message) (int, error) {
	select {
	case <-t.done:
		return 0, net.ErrClosed
	default:
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	t.ready.Clear() // before taking datagrams: an Inject after this notifies again
	select {
	case d := <-t.queue:
		return t.take(d, msgs), nil
	default:
		return 0, nil
	}
}

// Control implements hfi.PollTransport.
func (t *Transport) Control(f func(fd uintptr)) error {
	if err := t.ready.Control(f); err != nil {
		return net.ErrClosed
	}
	return nil
}

// take copies d, and then up to len(msgs)-1 more datagrams that are
// queued, into msgs, and returns how many.
func (t *Transport) take(d datagram, msgs []hfi.Message) int {
	k := 0
	for {
		msgs[k].N = copy(msgs[k].Buf, d.buf[:d.n])
		msgs[k].Addr = d.src
		t.free <- d.buf
		k++
		if k == len(msgs) {
			return k
		}
		select {
		case d = <-t.queue:
		default:
			return k
		}
	}
}

// WriteBatch implements hfi.Transport.
func (t *Transport) WriteBatch(msgs []hfi.Message) (int, error) {
	select {
	case <-t.done:
		for i := range msgs {
			msgs[i].Refused = true
		}
		return 0, net.ErrClosed
	default:
	}
	t.net.mu.RLock()
	defer t.net.mu.RUnlock()
	sent := 0
	for i := range msgs {
		dst := t.net.nodes[msgs[i].Addr]
		msgs[i].Refused = dst == nil || !dst.Inject(t.addr, msgs[i].Buf[:msgs[i].N])
		if msgs[i].Refused {
			t.Dropped.Add(1)
			continue
		}
		sent++
	}
	return sent, nil
}

// BatchSize implements hfi.Transport.
func (t *Transport) BatchSize() int { return 32 }

// LocalAddr implements hfi.Transport.
func (t *Transport) LocalAddr() netip.AddrPort { return t.addr }

// Close implements hfi.Transport: blocked and later reads return
// net.ErrClosed, and the Control fd stays readable so that a poll loop
// waiting on it wakes up to find the transport closed.
func (t *Transport) Close() error {
	t.once.Do(func() {
		close(t.done)
		t.ready.Close()
	})
	return nil
}

// ClosedPort returns a UDP endpoint on addr (its port 0: any) where nothing
// listens: a port the kernel gave a socket that is closed again. Datagrams
// sent there come back as ICMP port unreachable (over loopback at once,
// with no rate limit). It skips the test if addr cannot be had.
func ClosedPort(t testing.TB, addr string) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	ep := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	return ep
}

// ForgedPortUnreachable is an ICMP port unreachable that quotes a UDP
// datagram from src to dst (IPv4), as any host on the path could forge
// one; sent to src's host from a raw ICMP socket, it reaches src's socket
// as an error for a datagram it sent (with IP_RECVERR).
func ForgedPortUnreachable(src, dst netip.AddrPort) []byte {
	q := make([]byte, 28)
	q[0], q[8], q[9] = 0x45, 64, 17 // IPv4, TTL, UDP
	binary.BigEndian.PutUint16(q[2:], 28+64)
	binary.BigEndian.PutUint16(q[6:], 0x4000) // DF
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(q[12:], s4[:])
	copy(q[16:], d4[:])
	binary.BigEndian.PutUint16(q[10:], InetChecksum(q[:20]))
	binary.BigEndian.PutUint16(q[20:], src.Port())
	binary.BigEndian.PutUint16(q[22:], dst.Port())
	binary.BigEndian.PutUint16(q[24:], 8+64)
	icmp := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, q...) // destination unreachable, port
	binary.BigEndian.PutUint16(icmp[2:], InetChecksum(icmp))
	return icmp
}

// InetChecksum is RFC 1071's checksum of the concatenation of bs.
func InetChecksum(bs ...[]byte) uint16 {
	var s uint32
	odd := false
	for _, b := range bs {
		for _, c := range b {
			if odd {
				s += uint32(c)
			} else {
				s += uint32(c) << 8
			}
			odd = !odd
		}
	}
	for s > 0xFFFF {
		s = s>>16 + s&0xFFFF
	}
	return ^uint16(s)
}
