package hfi

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultPort is the fabric's UDP port.
const DefaultPort = 4793

// DefaultBatchSize is how many datagrams one recvmmsg/sendmmsg moves at most.
const DefaultBatchSize = 64

// socketBuffer is the send and receive buffer the UDP transport asks for; a
// burst of full batches from several senders must fit.
const socketBuffer = 8 << 20

// UDP is the Transport over a UDP socket, moving batches with recvmmsg and
// sendmmsg. An IPv4 listen address gives an IPv4 socket; an IPv6 or
// unspecified one a dual-stack socket, whose IPv4 peers appear unmapped.
type UDP struct {
	conn  *net.UDPConn
	rc    syscall.RawConn
	v6    bool
	batch int
	local netip.AddrPort

	// Receive state, owned by the single reader.
	rhdrs  []unix.Mmsghdr
	riov   []unix.Iovec
	rnames []unix.RawSockaddrInet6
	rcount int
	rn     int
	rerr   error
	readFn func(fd uintptr) bool

	wpool sync.Pool // *udpWriteScratch
}

var _ Transport = (*UDP)(nil)

// ListenUDP opens the transport on addr. A zero addr means all addresses on
// DefaultPort. batch <= 0 means DefaultBatchSize.
func ListenUDP(addr netip.AddrPort, batch int) (*UDP, error) {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	network := "udp"
	var la *net.UDPAddr
	switch {
	case !addr.IsValid():
		la = &net.UDPAddr{Port: DefaultPort}
	case addr.Addr().Unmap().Is4():
		network = "udp4"
		la = net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()))
	default:
		la = net.UDPAddrFromAddrPort(addr)
	}
	conn, err := net.ListenUDP(network, la)
	if err != nil {
		return nil, fmt.Errorf("hfi: listen %s: %w", la, err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("hfi: %w", err)
	}
	u := &UDP{
		conn:   conn,
		rc:     rc,
		v6:     network == "udp",
		batch:  batch,
		local:  conn.LocalAddr().(*net.UDPAddr).AddrPort(),
		rhdrs:  make([]unix.Mmsghdr, batch),
		riov:   make([]unix.Iovec, batch),
		rnames: make([]unix.RawSockaddrInet6, batch),
	}
	u.readFn = u.doRead
	u.wpool.New = func() any { return newUDPWriteScratch(u) }
	u.setBuffers()
	return u, nil
}

// setBuffers asks for large socket buffers: the forced variants (root) first,
// then the ordinary ones, which the kernel caps at its rmem_max/wmem_max.
func (u *UDP) setBuffers() {
	var forced bool
	_ = u.rc.Control(func(fd uintptr) {
		e1 := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer)
		e2 := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer)
		forced = e1 == nil && e2 == nil
	})
	if !forced {
		_ = u.conn.SetReadBuffer(socketBuffer)
		_ = u.conn.SetWriteBuffer(socketBuffer)
	}
}

// BatchSize returns the largest batch one call moves.
func (u *UDP) BatchSize() int { return u.batch }

// LocalAddr returns the bound address.
func (u *UDP) LocalAddr() netip.AddrPort { return u.local }

// Close closes the socket; a blocked ReadBatch returns net.ErrClosed.
func (u *UDP) Close() error { return u.conn.Close() }

// ReadBatch implements Transport.
func (u *UDP) ReadBatch(msgs []Message) (int, error) {
	n := min(len(msgs), u.batch)
	for i := range n {
		b := msgs[i].Buf
		u.riov[i] = unix.Iovec{Base: unsafe.SliceData(b)}
		u.riov[i].SetLen(len(b))
		u.rhdrs[i] = unix.Mmsghdr{Hdr: unix.Msghdr{
			Name:    (*byte)(unsafe.Pointer(&u.rnames[i])),
			Namelen: unix.SizeofSockaddrInet6,
			Iov:     &u.riov[i],
			Iovlen:  1,
		}}
	}
	u.rcount = n
	if err := u.rc.Read(u.readFn); err != nil {
		return 0, err
	}
	if u.rerr != nil {
		return 0, u.rerr
	}
	for i := range u.rn {
		msgs[i].N = int(u.rhdrs[i].Len)
		msgs[i].Addr = sockaddrToAddrPort(&u.rnames[i])
	}
	return u.rn, nil
}

func (u *UDP) doRead(fd uintptr) bool {
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&u.rhdrs[0])),
		uintptr(u.rcount), unix.MSG_DONTWAIT, 0, 0)
	for e == unix.EINTR {
		r, _, e = unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&u.rhdrs[0])),
			uintptr(u.rcount), unix.MSG_DONTWAIT, 0, 0)
	}
	switch e {
	case 0:
		u.rn, u.rerr = int(r), nil
	case unix.EAGAIN:
		return false
	default:
		u.rn, u.rerr = 0, e
	}
	return true
}

// udpWriteScratch is one writer's mmsghdr arrays; pooled so that concurrent
// WriteBatch calls share nothing.
type udpWriteScratch struct {
	u     *UDP
	hdrs  []unix.Mmsghdr
	iov   []unix.Iovec
	names []unix.RawSockaddrInet6
	base  int
	count int
	sent  int
	err   error
	fn    func(fd uintptr) bool
}

func newUDPWriteScratch(u *UDP) *udpWriteScratch {
	s := &udpWriteScratch{
		u:     u,
		hdrs:  make([]unix.Mmsghdr, u.batch),
		iov:   make([]unix.Iovec, u.batch),
		names: make([]unix.RawSockaddrInet6, u.batch),
	}
	s.fn = s.do
	return s
}

func (s *udpWriteScratch) do(fd uintptr) bool {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[s.base])),
		uintptr(s.count), unix.MSG_DONTWAIT, 0, 0)
	for e == unix.EINTR {
		r, _, e = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[s.base])),
			uintptr(s.count), unix.MSG_DONTWAIT, 0, 0)
	}
	switch e {
	case 0:
		s.sent, s.err = int(r), nil
	case unix.EAGAIN:
		return false
	default:
		s.sent, s.err = 0, e
	}
	return true
}

// ErrAddrFamily is returned for an IPv6 destination on an IPv4 socket.
var ErrAddrFamily = errors.New("hfi: destination address family does not match the socket")

// WriteBatch implements Transport. A datagram the kernel refuses (for
// example an unreachable destination) is skipped; the count returned is the
// number of datagrams the kernel accepted, and the error is the last refusal.
func (u *UDP) WriteBatch(msgs []Message) (int, error) {
	s := u.wpool.Get().(*udpWriteScratch)
	defer u.wpool.Put(s)
	var lastErr error
	done := 0
	for len(msgs) > 0 {
		n := min(len(msgs), u.batch)
		k := 0
		for i := range n {
			namelen, ok := u.putSockaddr(&s.names[k], msgs[i].Addr)
			if !ok {
				lastErr = ErrAddrFamily
				continue
			}
			b := msgs[i].Buf[:msgs[i].N]
			s.iov[k] = unix.Iovec{Base: unsafe.SliceData(b)}
			s.iov[k].SetLen(len(b))
			s.hdrs[k] = unix.Mmsghdr{Hdr: unix.Msghdr{
				Name:    (*byte)(unsafe.Pointer(&s.names[k])),
				Namelen: namelen,
				Iov:     &s.iov[k],
				Iovlen:  1,
			}}
			k++
		}
		msgs = msgs[n:]
		for start := 0; start < k; {
			s.base, s.count = start, k-start
			if err := u.rc.Write(s.fn); err != nil {
				return done, err
			}
			switch {
			case s.err != nil:
				// The first datagram was refused: skip it and go on.
				lastErr = s.err
				start++
			case s.sent == 0:
				start++ // cannot happen; never spin
			default:
				done += s.sent
				start += s.sent
			}
		}
	}
	return done, lastErr
}

// putSockaddr writes ap into sa in the socket's family and returns its length.
func (u *UDP) putSockaddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort) (uint32, bool) {
	port := ap.Port()
	if u.v6 {
		*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		return unix.SizeofSockaddrInet6, true
	}
	a := ap.Addr().Unmap()
	if !a.Is4() {
		return 0, false
	}
	sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
	*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}
	p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	return unix.SizeofSockaddrInet4, true
}

// sockaddrToAddrPort decodes a received source address; IPv4-mapped IPv6
// addresses come out as IPv4, so directory entries compare equal.
func sockaddrToAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	port := uint16(p[0])<<8 | uint16(p[1])
	switch sa.Family {
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	return netip.AddrPort{}
}
