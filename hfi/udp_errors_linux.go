package hfi

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The errors the kernel reports for datagrams the transport sent.
//
// Without IP_RECVERR the kernel drops the ICMP errors that come back for an
// unconnected UDP socket's datagrams: a peer whose host has no vnicd
// listening (ICMP port unreachable), a host that does not answer ARP (host
// unreachable), a router that has no route: every datagram to it was lost
// and nothing said so. With IP_RECVERR (and IPV6_RECVERR) the kernel
// queues each such error on the socket's error queue, sets the socket's
// pending error, and the next recvmmsg returns that error instead of
// datagrams. The read path then drains the error queue (recvmsg with
// MSG_ERRQUEUE), records what each entry says against the endpoint the
// datagram was sent to, and reads again: the data path never sees the
// error. The ICMP errors a host sends are rate-limited (about one a second
// to each destination, net.ipv4.icmp_ratelimit), so the count is of
// errors reported, not of datagrams lost.
//
// With IP_RECVERR the kernel also returns ENOBUFS from a send that a full
// device queue refused, which it otherwise swallows; WriteBatch counts
// such a datagram as not sent (XmitDiscards), which it was not, and gives
// up the rest of its batch at the second. A flood of errors trips a
// breaker (peer_errors.go).

// PeerErrors returns, for each endpoint the kernel reported errors for
// (at most maxPeerErrors, the latest first), the last error and how many
// there were. For status and logs; each call copies the record under its
// lock.
func (u *UDP) PeerErrors() []PeerError { return u.perr.snapshot() }

// PeerErrorCount returns how many errors the kernel reported for the
// transport's datagrams (its queue group's, for a queue).
func (u *UDP) PeerErrorCount() uint64 { return u.perr.total.Load() }

// PeerErrorFloods returns how often errors came so fast that the
// transport stopped taking them for a while (errorsOffFor): a flood,
// which anyone who reaches the host can forge, would starve its traffic.
func (u *UDP) PeerErrorFloods() uint64 { return u.perr.floods.Load() }

// countPeerErrorsIn makes the transport count each error in errs, and each
// flood in floods, as well.
func (u *UDP) countPeerErrorsIn(errs, floods *atomic.Uint64) {
	u.perr.sink.Store(errs)
	u.perr.fsink.Store(floods)
}

// joinPeerErrors makes p the socket's record (a queue group shares one),
// whose breaker turns the errors of all its sockets on and off.
func (u *UDP) joinPeerErrors(p *peerErrors) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u.perr = p
	prev := p.toggle
	p.toggle = func(on bool) {
		if prev != nil {
			prev(on)
		}
		u.setRecvErr(on)
	}
}

// setRecvErr asks the kernel for the errors of the socket's datagrams, or
// for none (IP_RECVERR; also IPV6_RECVERR on an IPv6 socket, whose
// IPv4-mapped peers' errors come through IP_RECVERR). Where the kernel
// refuses, the transport works as before and reports nothing. Errors
// already queued stay there, to be read.
func (u *UDP) setRecvErr(on bool) {
	v := 0
	if on {
		v = 1
	}
	_ = u.rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_RECVERR, v)
		if u.v6 {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_RECVERR, v)
		}
	})
}

// reportedErr reports whether a read's error is one the kernel took from
// an ICMP error or a local one for a datagram sent (ip_icmp_error,
// icmp_err_convert): the read drains the error queue and reads on.
func reportedErr(e syscall.Errno) bool {
	switch e {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN, unix.EMSGSIZE,
		unix.ENOPROTOOPT, unix.EOPNOTSUPP, unix.ENONET, unix.EPROTO, unix.EACCES,
		// Kernels before 5.10 without "sock: set sk_err to ee_errno on
		// dequeue from errq" leave the next entry's ee_origin (2 or 3)
		// as the pending error when a drain stops with entries queued.
		unix.ENOENT, unix.ESRCH:
		return true
	}
	return false
}

// onlyPendingErr reports whether err is one a send never returns of itself
// (udp_sendmsg: its route lookup gives EHOSTUNREACH, ENETUNREACH or EACCES,
// a datagram too large EMSGSIZE): a send that returned it sent nothing
// because the socket had an error pending, which it cleared.
func onlyPendingErr(err error) bool {
	switch err {
	case unix.ECONNREFUSED, unix.EHOSTDOWN, unix.ENONET, unix.ENOPROTOOPT, unix.EPROTO:
		return true
	}
	return false
}

// isReportedErr is reportedErr for an error value.
func isReportedErr(err error) bool {
	e, ok := err.(syscall.Errno)
	return ok && reportedErr(e)
}

// DrainErrors takes every entry off the socket's error queue and records
// it (PeerErrors), at most maxErrDrain of them; the data plane calls it when
// epoll says the socket has an error (EPOLLERR), in case one is queued
// that no read has seen yet. It reads nothing else.
func (u *UDP) DrainErrors() error {
	return u.ioErr(u.rc.Control(func(fd uintptr) { u.drainErrors(fd, &u.errs) }))
}

// errScratch is the memory drainErrors reads into: one entry's destination,
// its control messages and the start of its datagram. The reader has one,
// and each writer's scratch (udpWriteScratch).
type errScratch struct {
	name unix.RawSockaddrInet6
	ctl  [256]byte
	buf  [16]byte
	iov  unix.Iovec
	hdr  unix.Msghdr
}

// drainErrors takes the entries off the error queue until it is empty or
// maxErrDrain of them are taken; it returns how many it took.
func (u *UDP) drainErrors(fd uintptr, s *errScratch) int {
	n := 0
	for n < maxErrDrain {
		s.iov = unix.Iovec{Base: &s.buf[0]}
		s.iov.SetLen(len(s.buf))
		s.hdr = unix.Msghdr{
			Name:    (*byte)(unsafe.Pointer(&s.name)),
			Namelen: unix.SizeofSockaddrInet6,
			Iov:     &s.iov,
			Iovlen:  1,
			Control: &s.ctl[0],
		}
		s.hdr.SetControllen(len(s.ctl))
		_, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.hdr)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return n
		}
		n++
		u.perr.record(parseErrEntry(&s.name, s.hdr.Namelen, s.ctl[:s.hdr.Controllen]))
	}
	return n
}

// sock_extended_err's ee_origin (include/uapi/linux/errqueue.h).
const (
	eeOriginLocal = 1
	eeOriginICMP  = 2
	eeOriginICMP6 = 3
)

// parseErrEntry reads one error-queue entry: the destination of the datagram
// it is about (msg_name), and the IP_RECVERR or IPV6_RECVERR control
// message (a sock_extended_err and the address of who sent the error).
func parseErrEntry(name *unix.RawSockaddrInet6, namelen uint32, ctl []byte) PeerError {
	var e PeerError
	if namelen > 0 {
		e.Endpoint = sockaddrToAddrPort(name)
	}
	for len(ctl) >= unix.CmsgLen(0) {
		// Copied out, not pointed at: the bytes need not be aligned.
		var h unix.Cmsghdr
		copy((*[unix.SizeofCmsghdr]byte)(unsafe.Pointer(&h))[:], ctl)
		l := int(h.Len)
		if l < unix.CmsgLen(0) || l > len(ctl) {
			break
		}
		data := ctl[unix.CmsgLen(0):l]
		var ee unix.SockExtendedErr
		eeLen := int(unsafe.Sizeof(ee))
		if ((h.Level == unix.SOL_IP && h.Type == unix.IP_RECVERR) || (h.Level == unix.SOL_IPV6 && h.Type == unix.IPV6_RECVERR)) &&
			len(data) >= eeLen {
			copy((*[unsafe.Sizeof(ee)]byte)(unsafe.Pointer(&ee))[:], data)
			e.Errno = syscall.Errno(ee.Errno)
			e.Error = e.Errno.Error()
			e.Reason = errReason(ee)
			if ee.Origin == eeOriginICMP && ee.Type == 3 && ee.Code == 4 || ee.Origin == eeOriginICMP6 && ee.Type == 2 ||
				ee.Origin == eeOriginLocal && e.Errno == unix.EMSGSIZE {
				e.MTU = ee.Info
			}
			if off := data[eeLen:]; ee.Origin != eeOriginLocal && len(off) >= unix.SizeofSockaddrInet4 {
				var sa unix.RawSockaddrInet6
				copy((*[unix.SizeofSockaddrInet6]byte)(unsafe.Pointer(&sa))[:], off)
				e.From = sockaddrToAddrPort(&sa).Addr()
			}
		}
		ctl = ctl[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(ctl)):]
	}
	if e.Error == "" {
		e.Error, e.Reason = "unknown error", "no detail from the kernel"
	}
	return e
}

// errReason names what sent an error: the ICMP or ICMPv6 message, or this
// host.
func errReason(ee unix.SockExtendedErr) string {
	switch ee.Origin {
	case eeOriginLocal:
		return "local error"
	case eeOriginICMP:
		if ee.Type == 3 { // destination unreachable
			switch ee.Code {
			case 0, 6, 11:
				return "ICMP network unreachable"
			case 1, 7, 12:
				return "ICMP host unreachable"
			case 2:
				return "ICMP protocol unreachable"
			case 3:
				return "ICMP port unreachable"
			case 4:
				return "ICMP fragmentation needed"
			case 9, 10, 13:
				return "ICMP administratively prohibited"
			}
			return fmt.Sprintf("ICMP destination unreachable, code %d", ee.Code)
		}
		if ee.Type == 11 {
			return "ICMP time exceeded"
		}
		return fmt.Sprintf("ICMP type %d code %d", ee.Type, ee.Code)
	case eeOriginICMP6:
		switch ee.Type {
		case 1: // destination unreachable
			switch ee.Code {
			case 0:
				return "ICMPv6 no route to destination"
			case 1, 5, 6:
				return "ICMPv6 administratively prohibited"
			case 3:
				return "ICMPv6 address unreachable"
			case 4:
				return "ICMPv6 port unreachable"
			}
			return fmt.Sprintf("ICMPv6 destination unreachable, code %d", ee.Code)
		case 2:
			return "ICMPv6 packet too big"
		case 3:
			return "ICMPv6 time exceeded"
		}
		return fmt.Sprintf("ICMPv6 type %d code %d", ee.Type, ee.Code)
	}
	return fmt.Sprintf("origin %d", ee.Origin)
}
