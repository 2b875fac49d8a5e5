package opaswitch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
)

// tagWake is the epoll tag of the loop's wake-up eventfd; a port's is its
// number.
const tagWake = -1

// Run forwards packets until ctx is done or a cable's transport fails: one
// goroutine waits in epoll_wait for every cabled port, reads a batch from
// each port that is ready, and sends what the batch routes out of each
// port in one batch per port. It returns nil on a clean stop and closes
// the cables' transports when it returns.
func (s *Switch) Run(ctx context.Context) error {
	var trs []hfi.PollTransport
	for _, p := range s.ports[1:] {
		if p.tr != nil {
			trs = append(trs, p.tr)
		}
	}
	defer func() {
		for _, tr := range trs {
			tr.Close()
		}
	}()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("opaswitch: epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("opaswitch: eventfd: %w", err)
	}
	defer unix.Close(wake)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: tagWake}); err != nil {
		return fmt.Errorf("opaswitch: epoll_ctl: %w", err)
	}
	msgs := make([][]hfi.Message, len(s.ports))
	for _, p := range s.ports[1:] {
		if p.tr == nil {
			continue
		}
		var cerr error
		if err := p.tr.Control(func(fd uintptr) {
			cerr = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p.num)})
		}); err != nil || cerr != nil {
			return fmt.Errorf("opaswitch: %s: port %d: epoll_ctl: %w", s.name, p.num, errors.Join(err, cerr))
		}
		m := make([]hfi.Message, p.tr.BatchSize())
		for i := range m {
			// A byte more than the longest packet: a longer datagram is
			// cut to it and fails the length check.
			m[i].Buf = make([]byte, encap.MaxPacketLen+1)
		}
		msgs[p.num] = m
	}
	stop := context.AfterFunc(ctx, func() {
		var one = [8]byte{1}
		_, _ = unix.Write(wake, one[:])
	})
	defer stop()

	events := make([]unix.EpollEvent, len(s.ports)+1)
	for ctx.Err() == nil {
		n, err := unix.EpollWait(ep, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("opaswitch: epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			if ev.Fd == tagWake || ev.Fd < 1 || int(ev.Fd) >= len(s.ports) {
				continue
			}
			p := s.ports[ev.Fd]
			if ev.Events&unix.EPOLLERR != 0 {
				if d, ok := p.tr.(interface{ DrainErrors() error }); ok {
					_ = d.DrainErrors() // an error the kernel queued for a datagram sent
				}
			}
			if err := s.readPort(p, msgs[p.num]); err != nil {
				if ctx.Err() != nil || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
					return nil
				}
				return fmt.Errorf("opaswitch: %s: port %d: %w", s.name, p.num, err)
			}
		}
	}
	return nil
}

// readPort reads one batch from port p (without waiting), routes each
// packet, and sends every port's out batch.
func (s *Switch) readPort(p *Port, msgs []hfi.Message) error {
	k, err := p.tr.TryReadBatch(msgs)
	for i := range k {
		m := &msgs[i]
		s.receive(p, m.Buf[:m.N], m.Addr)
	}
	for _, q := range s.ports[1:] {
		if len(q.out) > 0 {
			s.flushPort(q)
		}
	}
	return err
}
