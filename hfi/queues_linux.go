package hfi

import (
	"errors"
	"fmt"
	"net/netip"
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
// EADDRINUSE, as for ListenUDP, even if that socket would share it. On an
// error every socket opened is closed.
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
	qs := make([]*UDP, 0, n)
	fail := func(err error) ([]*UDP, error) {
		for _, u := range qs {
			u.Close()
		}
		return nil, err
	}
	for range n {
		u, err := listenUDP(addr, batch, true)
		if err != nil {
			return fail(err)
		}
		qs = append(qs, u)
	}
	if err := attachSteering(qs[0], n); err != nil {
		return fail(fmt.Errorf("hfi: listen %s: steering program: %w", qs[0].local, err))
	}
	return qs, nil
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

// attachSteering puts the steering program on u's group.
func attachSteering(u *UDP, n int) error {
	prog := steeringProgram(n)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var serr error
	err := u.rc.Control(func(fd uintptr) {
		_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
			uintptr(unsafe.Pointer(&fprog)), unsafe.Sizeof(fprog), 0)
		if e != 0 {
			serr = e
		}
	})
	return errors.Join(err, serr)
}
