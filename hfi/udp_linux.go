package hfi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/fdwait"
)

// DefaultPort is the fabric's UDP port.
const DefaultPort = 4793

// DefaultBatchSize is how many datagrams one recvmmsg/sendmmsg moves at most:
// enough for the frames of a TAP super-frame to go in one sendmmsg
// (docs/performance.md has the sizes tried).
const DefaultBatchSize = 128

// socketBuffer is the send and receive buffer the UDP transport asks for; a
// burst of full batches from several senders must fit.
const socketBuffer = 8 << 20

// UDP is the Transport over a UDP socket, moving batches with recvmmsg and
// sendmmsg. An IPv4 listen address gives an IPv4 socket; an IPv6 or
// unspecified one a dual-stack socket, whose IPv4 peers appear unmapped (an
// unspecified one an IPv4 socket where the kernel has no IPv6).
type UDP struct {
	f      *os.File // the socket, outside the runtime's poller (see ListenUDP)
	rc     syscall.RawConn
	closed atomic.Bool
	v6     bool
	batch  int
	local  netip.AddrPort

	// Receive state, owned by the single reader.
	rhdrs  []unix.Mmsghdr
	riov   []unix.Iovec
	rnames []unix.RawSockaddrInet6
	rcount int
	rn     int
	rerr   error
	readFn func(fd uintptr) bool
	try    bool // this read must not wait: EAGAIN is an empty batch

	// UDP GRO (receive): the kernel hands over runs of same-size datagrams
	// from one source as one buffer with their size in a cmsg; ReadBatch
	// splits them. The buffers are the transport's own, 64 KB each; a run
	// that does not fit the caller's msgs is kept for the next ReadBatch.
	gro     bool
	rbufs   [][]byte
	rctl    []byte
	rgso    []int // datagram size of each message read (its length if not coalesced)
	rnext   int   // next message of the last read to hand out
	roff    int   // offset in it
	groMsgs int   // messages that held more than one datagram (tests)

	// UDP GSO (send): runs of same-size datagrams to one endpoint go as one
	// message with a UDP_SEGMENT cmsg. Off for good once the kernel refuses
	// GSO itself (EIO). gsoMax is the largest datagram sent with GSO: a
	// datagram larger than the path MTU can go only alone, as IP fragments
	// (the kernel refuses such a GSO send with EMSGSIZE, or EINVAL before
	// 6.13), so a refusal lowers gsoMax below its size; gsoLowered is when
	// (unix nanoseconds), and gsoProbeAfter later the limit is lifted
	// again, in case the path MTU has grown.
	noGSO      atomic.Bool
	gsoMax     atomic.Int32
	gsoLowered atomic.Int64

	wpool sync.Pool // *udpWriteScratch

	// The kernel's count of the datagrams it dropped at the socket is 32
	// bits wide; KernelDrops widens it.
	dropsMu    sync.Mutex
	dropsLast  uint32
	dropsTotal uint64

	// The errors the kernel reported for datagrams sent (udp_errors_linux.go):
	// the record, shared by a queue group, and the reader's scratch.
	perr *peerErrors
	errs errScratch
}

// groBufLen is one UDP GRO receive buffer: the largest UDP payload.
// maxGROMsgs caps how many of them one recvmmsg fills (64 is 4 MB; a full
// buffer holds 44 datagrams of 1472 bytes, so a batch is rarely short of
// them).
const (
	groBufLen  = 65536
	maxGROMsgs = 64
)

// maxGSOSegs is the most datagrams one UDP_SEGMENT send carries (the
// kernel's UDP_MAX_SEGMENTS is 64 or more); maxGSOBytes the most bytes, so
// that the payload fits one IPv6 (or IPv4) packet's length field.
const (
	maxGSOSegs  = 64
	maxGSOBytes = 65535 - 40 - 8
)

// gsoNoLimit is gsoMax while no GSO send has been refused for its size;
// gsoProbeAfter is how long a lowered gsoMax holds.
const (
	gsoNoLimit    = math.MaxInt32
	gsoProbeAfter = 30 * time.Second
)

// cmsgLen is the space of one UDP_SEGMENT (u16) or UDP_GRO (int) cmsg.
var cmsgLen = unix.CmsgSpace(4)

var _ Transport = (*UDP)(nil)

// ListenUDP opens the transport on addr. A zero addr means all addresses on
// DefaultPort. batch <= 0 means DefaultBatchSize.
func ListenUDP(addr netip.AddrPort, batch int) (*UDP, error) {
	return listenUDP(addr, batch, nil)
}

// listenAddr is the network and address ListenUDP binds for addr.
func listenAddr(addr netip.AddrPort) (string, *net.UDPAddr) {
	switch {
	case !addr.IsValid():
		return "udp", &net.UDPAddr{Port: DefaultPort}
	case addr.Addr().Unmap().Is4():
		return "udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()))
	default:
		return "udp", net.UDPAddrFromAddrPort(addr)
	}
}

// listenUDP is ListenUDP; prebind, when set, is called with the socket
// before it is bound (ListenUDPQueues: SO_REUSEPORT and a filter).
func listenUDP(addr netip.AddrPort, batch int, prebind func(fd int) error) (*UDP, error) {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	network, la := listenAddr(addr)
	var lc net.ListenConfig
	if prebind != nil {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = prebind(int(fd)) })
			return errors.Join(err, serr)
		}
	}
	pc, err := lc.ListenPacket(context.Background(), network, la.String())
	if err != nil {
		return nil, fmt.Errorf("hfi: listen %s: %w", la, err)
	}
	conn := pc.(*net.UDPConn)
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	f, err := unpolled(conn)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("hfi: listen %s: %w", la, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hfi: %w", err)
	}
	// The socket's family, not the network asked for: where the kernel has
	// no IPv6, Go answers "udp" on [::] with an IPv4 socket, which refuses
	// sockaddr_in6 destinations (EAFNOSUPPORT).
	domain := unix.AF_INET
	cerr := rc.Control(func(fd uintptr) { domain, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN) })
	if err = errors.Join(cerr, err); err != nil {
		f.Close()
		return nil, fmt.Errorf("hfi: listen %s: socket family: %w", la, err)
	}
	u := &UDP{
		f:      f,
		rc:     rc,
		v6:     domain == unix.AF_INET6,
		batch:  batch,
		local:  local,
		rhdrs:  make([]unix.Mmsghdr, batch),
		riov:   make([]unix.Iovec, batch),
		rnames: make([]unix.RawSockaddrInet6, batch),
	}
	u.readFn = u.doRead
	u.gsoMax.Store(gsoNoLimit)
	u.wpool.New = func() any { return newUDPWriteScratch(u) }
	u.setBuffers()
	u.setGRO()
	u.joinPeerErrors(newPeerErrors())
	u.setRecvErr(true)
	return u, nil
}

// unpolled returns the socket of conn as a File the runtime's poller does
// not watch: a duplicate of its fd, made while the (shared) file status is
// blocking, which os.NewFile then leaves out of the poller, and set
// non-blocking again. The caller closes conn.
//
// The data plane waits for the socket in its own epoll set (vnicd's poll
// loop). Were the socket also in the runtime's, every datagram would wake a
// runtime thread as well, for nothing (docs/performance.md). The blocking calls (ReadBatch, a full send buffer)
// wait with poll(2) instead (internal/fdwait).
func unpolled(conn *net.UDPConn) (*os.File, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	cerr := rc.Control(func(fd uintptr) {
		if nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return
		}
		err = unix.SetNonblock(nfd, false)
	})
	if err = errors.Join(err, cerr); err != nil {
		if nfd >= 0 {
			unix.Close(nfd)
		}
		return nil, fmt.Errorf("dup socket: %w", err)
	}
	f := os.NewFile(uintptr(nfd), "udp")
	if err := unix.SetNonblock(nfd, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	return f, nil
}

// setGRO turns UDP GRO on where the kernel has it.
func (u *UDP) setGRO() {
	_ = u.rc.Control(func(fd uintptr) {
		u.gro = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	if !u.gro {
		return
	}
	n := min(u.batch, maxGROMsgs)
	backing := make([]byte, n*groBufLen)
	u.rbufs = make([][]byte, n)
	for i := range u.rbufs {
		u.rbufs[i] = backing[i*groBufLen : (i+1)*groBufLen : (i+1)*groBufLen]
	}
	u.rctl = make([]byte, n*cmsgLen)
	u.rgso = make([]int, n)
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
		_ = u.rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, socketBuffer)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
		})
	}
}

// skMeminfoDrops is the index of sk_drops in SO_MEMINFO's answer
// (SK_MEMINFO_DROPS, include/uapi/linux/sock_diag.h), and skMeminfoVars
// the answer's length in u32s up to it.
const (
	skMeminfoDrops = 8
	skMeminfoVars  = skMeminfoDrops + 1
)

// KernelDrops returns how many datagrams the kernel dropped at the socket
// since it was opened, before vnicd could read them: because its receive
// buffer was full (Udp RcvbufErrors), their UDP checksum was bad, or a
// socket filter refused them (a queue group's, while it forms). These
// are the socket's share of the kernel's Udp InErrors. ok is false when
// the kernel does not say (SO_MEMINFO, Linux 4.12) or the socket is closed.
// The kernel's count is 32 bits wide and wraps; KernelDrops keeps a 64-bit
// total, which is right as long as it is read at least once every 2^32
// drops. It is for status and metrics, not the per-packet path: each call
// is a getsockopt under a lock.
func (u *UDP) KernelDrops() (n uint64, ok bool) {
	var info [skMeminfoVars]uint32
	size := uint32(unsafe.Sizeof(info))
	var errno syscall.Errno
	err := u.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	})
	if err != nil || errno != 0 || size < uint32(unsafe.Sizeof(info)) {
		return 0, false
	}
	u.dropsMu.Lock()
	defer u.dropsMu.Unlock()
	cur := info[skMeminfoDrops]
	u.dropsTotal += uint64(cur - u.dropsLast)
	u.dropsLast = cur
	return u.dropsTotal, true
}

// BatchSize returns the largest batch one call moves.
func (u *UDP) BatchSize() int { return u.batch }

// LocalAddr returns the bound address.
func (u *UDP) LocalAddr() netip.AddrPort { return u.local }

// ioErr turns the error of an fd closed under a call into net.ErrClosed.
func (u *UDP) ioErr(err error) error {
	if u.closed.Load() {
		return net.ErrClosed
	}
	return err
}

// Close closes the socket; a blocked ReadBatch returns net.ErrClosed (within
// fdwait.Round).
func (u *UDP) Close() error {
	if u.closed.Swap(true) {
		return net.ErrClosed
	}
	return u.f.Close()
}

// ReadBatch implements Transport. With UDP GRO on, msgs[i].Buf is pointed
// at the transport's own buffers (valid until the next ReadBatch), one
// datagram each, as they were sent.
func (u *UDP) ReadBatch(msgs []Message) (int, error) {
	u.try = false
	return u.readBatch(msgs)
}

// TryReadBatch implements PollTransport: ReadBatch without waiting.
func (u *UDP) TryReadBatch(msgs []Message) (int, error) {
	u.try = true
	return u.readBatch(msgs)
}

// Control implements PollTransport.
func (u *UDP) Control(f func(fd uintptr)) error { return u.rc.Control(f) }

func (u *UDP) readBatch(msgs []Message) (int, error) {
	if u.gro {
		return u.readGRO(msgs)
	}
	n := min(len(msgs), u.batch)
	for i := range n {
		u.setRead(i, msgs[i].Buf, nil)
	}
	u.rcount = n
	if err := u.rc.Read(u.readFn); err != nil {
		return 0, u.ioErr(err)
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

func (u *UDP) setRead(i int, b, ctl []byte) {
	u.riov[i] = unix.Iovec{Base: unsafe.SliceData(b)}
	u.riov[i].SetLen(len(b))
	u.rhdrs[i] = unix.Mmsghdr{Hdr: unix.Msghdr{
		Name:    (*byte)(unsafe.Pointer(&u.rnames[i])),
		Namelen: unix.SizeofSockaddrInet6,
		Iov:     &u.riov[i],
		Iovlen:  1,
	}}
	if ctl != nil {
		u.rhdrs[i].Hdr.Control = &ctl[0]
		u.rhdrs[i].Hdr.SetControllen(len(ctl))
	}
}

// readGRO hands out the datagrams of the last read, reading again when they
// are all out.
func (u *UDP) readGRO(msgs []Message) (int, error) {
	if u.rnext >= u.rn {
		for i := range u.rbufs {
			u.setRead(i, u.rbufs[i], u.rctl[i*cmsgLen:(i+1)*cmsgLen])
		}
		u.rcount = len(u.rbufs)
		u.rn, u.rnext, u.roff = 0, 0, 0
		if err := u.rc.Read(u.readFn); err != nil {
			return 0, u.ioErr(err)
		}
		if u.rerr != nil {
			return 0, u.rerr
		}
		for i := range u.rn {
			u.rgso[i] = groSize(&u.rhdrs[i], u.rctl[i*cmsgLen:])
			if u.rgso[i] < int(u.rhdrs[i].Len) {
				u.groMsgs++
			}
		}
	}
	k := 0
	for k < len(msgs) && u.rnext < u.rn {
		i := u.rnext
		total := int(u.rhdrs[i].Len)
		seg := min(u.rgso[i], total-u.roff)
		msgs[k].Buf = u.rbufs[i][u.roff : u.roff+seg : u.roff+seg]
		msgs[k].N = seg
		msgs[k].Addr = sockaddrToAddrPort(&u.rnames[i])
		k++
		if u.roff += seg; u.roff >= total || seg <= 0 {
			u.rnext, u.roff = u.rnext+1, 0
		}
	}
	return k, nil
}

// groSize returns the size of the datagrams a received message holds: the
// UDP_GRO cmsg's value, or the message's length when there is none.
func groSize(h *unix.Mmsghdr, ctl []byte) int {
	n := int(h.Hdr.Controllen)
	if n >= unix.CmsgLen(4) {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		if c.Level == unix.IPPROTO_UDP && c.Type == unix.UDP_GRO && int(c.Len) >= unix.CmsgLen(4) {
			if g := int(*(*int32)(unsafe.Pointer(&ctl[unix.CmsgLen(0)]))); g > 0 {
				return g
			}
		}
	}
	return int(h.Len)
}

// doRead is one recvmmsg, waiting for datagrams unless u.try. An error the
// kernel reported for a datagram sent (reportedErr) is not the read's: the
// error queue is drained and recorded, and the read goes on (at most
// maxErrRetries times in a row; then a try read returns nothing).
func (u *UDP) doRead(fd uintptr) bool {
	errRetries := 0
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&u.rhdrs[0])),
			uintptr(u.rcount), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			u.rn, u.rerr = int(r), nil
			return true
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			if u.try {
				u.rn, u.rerr = 0, nil
				return true
			}
			rev, ok := fdwait.WaitEvents(fd, unix.POLLIN, &u.closed)
			if !ok {
				u.rn, u.rerr = 0, net.ErrClosed
				return true
			}
			if rev&unix.POLLERR != 0 {
				// poll also wakes for an error queued (POLLERR),
				// which must not be left there.
				u.drainErrors(fd, &u.errs)
			}
		case reportedErr(e):
			if u.drainErrors(fd, &u.errs) == 0 {
				// The pending error without an entry (the kernel could
				// not queue one: the receive buffer was full).
				u.perr.record(PeerError{Errno: e, Error: e.Error(), Reason: "no detail from the kernel"})
			}
			if errRetries++; errRetries > maxErrRetries && u.try {
				u.rn, u.rerr = 0, nil
				return true
			}
		default:
			u.rn, u.rerr = 0, e
			return true
		}
	}
}

// udpWriteScratch is one writer's mmsghdr arrays; pooled so that concurrent
// WriteBatch calls share nothing.
type udpWriteScratch struct {
	u     *UDP
	hdrs  []unix.Mmsghdr
	iov   []unix.Iovec
	names []unix.RawSockaddrInet6
	ctl   []byte
	segs  []int // datagrams in each message
	first []int // index in the batch of each message's first datagram
	base  int
	count int
	sent  int
	err   error
	errs  errScratch // for the error queue, when a wait for room wakes on it
	fn    func(fd uintptr) bool
}

func newUDPWriteScratch(u *UDP) *udpWriteScratch {
	s := &udpWriteScratch{
		u:     u,
		hdrs:  make([]unix.Mmsghdr, u.batch),
		iov:   make([]unix.Iovec, u.batch),
		names: make([]unix.RawSockaddrInet6, u.batch),
		ctl:   make([]byte, u.batch*cmsgLen),
		segs:  make([]int, u.batch),
		first: make([]int, u.batch),
	}
	s.fn = s.do
	return s
}

func (s *udpWriteScratch) do(fd uintptr) bool {
	for {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[s.base])),
			uintptr(s.count), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			s.sent, s.err = int(r), nil
			return true
		case unix.EINTR:
		case unix.EAGAIN:
			// The send buffer is full: wait until it drains.
			rev, ok := fdwait.WaitEvents(fd, unix.POLLOUT, &s.u.closed)
			if !ok {
				s.sent, s.err = 0, net.ErrClosed
				return true
			}
			if rev&unix.POLLERR != 0 {
				// poll also wakes for an error queued (POLLERR),
				// which would wake it again at once.
				s.u.drainErrors(fd, &s.errs)
			}
		default:
			s.sent, s.err = 0, e
			return true
		}
	}
}

// ErrAddrFamily is returned for an IPv6 destination on an IPv4 socket.
var ErrAddrFamily = errors.New("hfi: destination address family does not match the socket")

// WriteBatch implements Transport. A datagram the kernel refuses (for
// example an unreachable destination) is skipped and marked Refused; the
// count returned is the number of datagrams the kernel accepted, and the
// error is the last refusal.
// Consecutive datagrams of one size to one endpoint (the last may be
// shorter) and of one steering key (steerKey: one flow's, as a receiving
// queue group sees it) go as one message with UDP GSO: the kernel cuts it
// into the same datagrams before they leave. If the kernel refuses GSO
// (EIO), the transport stops using it; if it refuses a GSO send for its
// datagrams' size (EMSGSIZE, or EINVAL before Linux 6.13: larger than the
// path MTU), datagrams of that size or larger go without GSO for
// gsoProbeAfter. Either way the refused datagrams are sent again, one by
// one.
func (u *UDP) WriteBatch(msgs []Message) (int, error) {
	s := u.wpool.Get().(*udpWriteScratch)
	defer u.wpool.Put(s)
	for i := range msgs {
		msgs[i].Refused = false
	}
	var lastErr error
	done := 0
	fullQueue := false // a send was refused for a full device queue (ENOBUFS)
	for len(msgs) > 0 {
		k, used, err := s.build(msgs, u.gsoLimit())
		if err != nil {
			lastErr = err
		}
		retried, retries := -1, 0
		for start := 0; start < k; {
			s.base, s.count = start, k-start
			if err := u.rc.Write(s.fn); err != nil {
				clear(s.iov)
				refuse(msgs[s.first[start]:])
				return done, u.ioErr(err)
			}
			switch {
			case isReportedErr(s.err) && (retried != start || retries < maxSendErrRetries && onlyPendingErr(s.err)):
				// Most likely the error the kernel reported for an
				// earlier datagram, perhaps to another peer
				// (udp_errors_linux.go): the send returned it instead of
				// sending, and cleared it. Send again: once for an
				// errno a send can also return of itself (no route to
				// the destination), up to maxSendErrRetries times for
				// one only a reported error gives (onlyPendingErr):
				// another writer's datagram to a dead peer may set a
				// new one between the sends. The entry on the error
				// queue is the reader's to record.
				if retried != start {
					retried, retries = start, 0
				}
				retries++
			case s.err != nil && s.segs[start] > 1 && (s.err == unix.EIO || s.err == unix.EMSGSIZE || s.err == unix.EINVAL):
				// No GSO for these: send them, and the rest, again.
				if s.err == unix.EIO {
					u.noGSO.Store(true)
				} else {
					u.lowerGSOMax(msgs[s.first[start]].N - 1)
				}
				used, k = s.first[start], start
			case s.err == unix.ENOBUFS && fullQueue:
				// The device queue full again (the kernel says so with
				// IP_RECVERR only, and ends the sendmmsg there): the rest
				// would most likely be dropped too, each at the cost of a
				// system call of its own. Give them up.
				clear(s.iov)
				refuse(msgs[s.first[start]:])
				return done, s.err
			case s.err != nil:
				// The first message was refused: skip it and go on.
				lastErr = s.err
				fullQueue = fullQueue || s.err == unix.ENOBUFS
				refuse(msgs[s.first[start] : s.first[start]+s.segs[start]])
				start++
			case s.sent == 0:
				// Cannot happen; never spin.
				refuse(msgs[s.first[start] : s.first[start]+s.segs[start]])
				start++
			default:
				for _, n := range s.segs[start : start+s.sent] {
					done += n
				}
				start += s.sent
			}
		}
		msgs = msgs[used:]
	}
	clear(s.iov) // no reference to the caller's buffers
	return done, lastErr
}

// refuse marks msgs Refused: WriteBatch did not hand them to the kernel.
func refuse(msgs []Message) {
	for i := range msgs {
		msgs[i].Refused = true
	}
}

// gsoLimit is the largest datagram WriteBatch may send with GSO now (0:
// none). A lowered gsoMax is lifted gsoProbeAfter after it was lowered.
func (u *UDP) gsoLimit() int {
	if u.noGSO.Load() {
		return 0
	}
	m := u.gsoMax.Load()
	if m != gsoNoLimit && time.Now().UnixNano()-u.gsoLowered.Load() >= int64(gsoProbeAfter) {
		u.gsoMax.CompareAndSwap(m, gsoNoLimit)
		return gsoNoLimit
	}
	return int(m)
}

// lowerGSOMax makes size the largest datagram sent with GSO, if it is lower
// than the limit now.
func (u *UDP) lowerGSOMax(size int) {
	size = min(max(size, 0), gsoNoLimit)
	u.gsoLowered.Store(time.Now().UnixNano())
	for {
		m := u.gsoMax.Load()
		if int(m) <= size || u.gsoMax.CompareAndSwap(m, int32(size)) {
			return
		}
	}
}

// build fills the scratch with messages for the first datagrams of msgs (at
// most one batch of them) and returns how many messages and how many of
// msgs they cover. Runs of datagrams of at most gsoMax bytes go as GSO
// messages.
func (s *udpWriteScratch) build(msgs []Message, gsoMax int) (k, used int, err error) {
	u := s.u
	n := min(len(msgs), u.batch)
	for i := 0; i < n; {
		namelen, ok := u.putSockaddr(&s.names[k], msgs[i].Addr)
		if !ok {
			err = ErrAddrFamily
			msgs[i].Refused = true
			i++
			continue
		}
		size := msgs[i].N
		j := i + 1
		if size > 0 && size <= gsoMax {
			limit := i + min(maxGSOSegs, maxGSOBytes/size)
			key := steerKey(msgs[i].Buf[:size])
			for j < n && j < limit && msgs[j].N <= size && msgs[j].N > 0 && msgs[j].Addr == msgs[i].Addr &&
				steerKey(msgs[j].Buf[:msgs[j].N]) == key {
				j++
				if msgs[j-1].N < size {
					break
				}
			}
		}
		for d := i; d < j; d++ {
			b := msgs[d].Buf[:msgs[d].N]
			s.iov[d] = unix.Iovec{Base: unsafe.SliceData(b)}
			s.iov[d].SetLen(len(b))
		}
		s.hdrs[k] = unix.Mmsghdr{Hdr: unix.Msghdr{
			Name:    (*byte)(unsafe.Pointer(&s.names[k])),
			Namelen: namelen,
			Iov:     &s.iov[i],
		}}
		s.hdrs[k].Hdr.SetIovlen(j - i)
		if j-i > 1 {
			ctl := s.ctl[k*cmsgLen : (k+1)*cmsgLen]
			c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
			c.Level, c.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
			c.SetLen(unix.CmsgLen(2))
			*(*uint16)(unsafe.Pointer(&ctl[unix.CmsgLen(0)])) = uint16(size)
			s.hdrs[k].Hdr.Control = &ctl[0]
			s.hdrs[k].Hdr.SetControllen(unix.CmsgSpace(2))
		}
		s.segs[k], s.first[k] = j-i, i
		k++
		i = j
	}
	return k, n, err
}

// putSockaddr writes ap into sa in the socket's family and returns its
// length. It sets no scope id: a directory holds no link-local or zoned
// endpoint (Scoped).
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
// addresses come out as IPv4, so directory entries compare equal. The scope
// id is not kept: a directory holds no link-local or zoned endpoint (Scoped).
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
