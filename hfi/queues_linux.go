package hfi

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
)

// MaxQueues bounds the sockets of a queue group (ListenUDPQueues).
const MaxQueues = 16

// ListenUDPQueues opens n transports on one address (as ListenUDP does) in
// one SO_REUSEPORT group, a queue of a multiqueue data plane each. A
// classic BPF program on the group gives each datagram to one queue by its
// 16B header: a VNIC packet (L4 0x78) to queue entropy % n, so that the
// packets of one flow, whose entropy is its hash, always reach the same
// queue, in order; every other packet (management, L4 0x08) and any too
// short to have the fields to queue 0, the first transport. n <= 1 is
// ListenUDP. The address must be free: a port another socket holds is
// EADDRINUSE, as for ListenUDP, even if that socket would share it.
// Datagrams that arrive before every queue has joined and the program is in
// place are dropped, as if the port were not yet open, so that no queue
// reads another's. On an error every socket opened is closed.
func ListenUDPQueues(addr netip.AddrPort, batch, n int) ([]*UDP, error) {
	if n <= 1 {
		u, err := ListenUDP(addr, batch)
		if err != nil {
			return nil, err
		}
		return []*UDP{u}, nil
	}
	if n > MaxQueues {
		return nil, fmt.Errorf("hfi: %d queues: at most %d", n, MaxQueues)
	}
	// A plain bind first: it fails, as ListenUDP would, when the port is
	// taken, even by a group that would let the queues join it. It also
	// picks the port when addr asks for any (port 0).
	probe, err := ListenUDP(addr, 1)
	if err != nil {
		return nil, err
	}
	addr = probe.LocalAddr() // [::] for the dual-stack default, an IPv4 address unmapped
	probe.Close()
	// Until every queue has joined, the kernel cannot steer by the program
	// (an index beyond the sockets joined falls back to a hash of the
	// addresses), so a queue would read other queues' datagrams, of flows
	// already streaming to a restarted daemon. Each socket therefore drops
	// everything from its bind until the group is whole, as if the port
	// were not yet open.
	qs := make([]*UDP, 0, n)
	fail := func(err error) ([]*UDP, error) {
		for _, u := range qs {
			u.Close()
		}
		return nil, err
	}
	for range n {
		u, err := listenUDP(addr, batch, func(fd int) error {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
				return fmt.Errorf("SO_REUSEPORT: %w", err)
			}
			if err := setsockoptProg(fd, unix.SO_ATTACH_FILTER, dropAll); err != nil {
				return fmt.Errorf("SO_ATTACH_FILTER: %w", err)
			}
			return nil
		})
		if err != nil {
			return fail(err)
		}
		if len(qs) > 0 {
			u.joinPeerErrors(qs[0].perr) // one record of peer errors for the group
		}
		qs = append(qs, u)
	}
	if err := control(qs[0], func(fd int) error {
		return setsockoptProg(fd, unix.SO_ATTACH_REUSEPORT_CBPF, steeringProgram(n))
	}); err != nil {
		return fail(fmt.Errorf("hfi: listen %s: steering program: %w", qs[0].local, err))
	}
	// A datagram the kernel looked up before the program was in place, or
	// while the group was incomplete, may still be on its way to the
	// socket's filter: the receive path runs inside an RCU read-side
	// section, so wait for a grace period before opening the sockets.
	waitRCUGracePeriod()
	for _, u := range qs {
		if err := control(u, func(fd int) error {
			return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
		}); err != nil {
			return fail(fmt.Errorf("hfi: listen %s: open the queue: %w", u.local, err))
		}
	}
	return qs, nil
}

// waitRCUGracePeriod waits until every RCU read-side section that began
// before it has ended: membarrier(MEMBARRIER_CMD_GLOBAL) is synchronize_rcu
// on a kernel with more than one CPU. Where it is refused (nohz_full,
// seccomp), a sleep far longer than a softirq's run stands in.
func waitRCUGracePeriod() {
	const membarrierCmdGlobal = 1
	if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); e != 0 {
		time.Sleep(20 * time.Millisecond)
	}
}

// dropAll is a socket filter that drops every datagram.
var dropAll = []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}

// setsockoptProg sets a SOL_SOCKET option that takes a classic BPF program.
func setsockoptProg(fd, opt int, prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, uintptr(opt),
		uintptr(unsafe.Pointer(&fprog)), unsafe.Sizeof(fprog), 0)
	if e != 0 {
		return e
	}
	return nil
}

// control calls f with u's socket.
func control(u *UDP, f func(fd int) error) error {
	var ferr error
	err := u.rc.Control(func(fd uintptr) { ferr = f(int(fd)) })
	return errors.Join(err, ferr)
}

// steeringProgram is the classic BPF program of a queue group of n sockets.
// The kernel runs it on a datagram's UDP payload and delivers the datagram
// to the socket its result indexes, in the order they joined the group. A
// load beyond the payload ends the program with 0.
func steeringProgram(n int) []unix.SockFilter {
	const (
		ldB    = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS
		jeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		modK   = unix.BPF_ALU | unix.BPF_MOD | unix.BPF_K
		retA   = unix.BPF_RET | unix.BPF_A
		retK   = unix.BPF_RET | unix.BPF_K
		vnicL4 = encap.L4Ethernet
	)
	return []unix.SockFilter{
		{Code: ldB, K: steerL4Off},
		{Code: jeqK, Jt: 0, Jf: 3, K: vnicL4},
		{Code: ldB, K: steerEntropyOff},
		{Code: modK, K: uint32(n)},
		{Code: retA},
		{Code: retK, K: 0},
	}
}
