package hfi

import (
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyIPv6Sockets makes socket(AF_INET6, ...) fail with EAFNOSUPPORT in this
// process, as on a kernel booted with ipv6.disable=1 (seccomp(2), all
// threads; no privilege needed with no_new_privs).
func denyIPv6Sockets() error {
	const (
		seccompSetModeFilter   = 1
		seccompFilterFlagTsync = 1
		seccompRetAllow        = 0x7fff0000
		seccompRetErrno        = 0x00050000
	)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // args[0], low half (little-endian)
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AF_INET6, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: seccompRetErrno | uint32(unix.EAFNOSUPPORT)},
		{Code: unix.BPF_RET | unix.BPF_K, K: seccompRetAllow},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, seccompFilterFlagTsync,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// TestUDPDualStackListenWithoutIPv6: where the kernel has no IPv6, Go
// answers a listen on [::] (the default listen address) with an IPv4
// socket. The transport must then send as an IPv4 socket: sockaddr_in6
// destinations on an AF_INET socket are refused (udp_sendmsg: EAFNOSUPPORT),
// and nothing would ever leave. It runs in a child process whose AF_INET6
// sockets seccomp refuses, as Go probes the stack once per process.
func TestUDPDualStackListenWithoutIPv6(t *testing.T) {
	if os.Getenv("HFI_TEST_NO_IPV6") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUDPDualStackListenWithoutIPv6$", "-test.v")
		cmd.Env = append(os.Environ(), "HFI_TEST_NO_IPV6=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	if err := denyIPv6Sockets(); err != nil {
		t.Skipf("cannot refuse IPv6 sockets here with seccomp: %v", err)
	}
	if fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0); err == nil {
		unix.Close(fd)
		t.Fatal("seccomp filter in place, yet an AF_INET6 socket was made")
	}
	u, err := ListenUDP(netip.AddrPortFrom(netip.IPv6Unspecified(), 0), 4)
	if err != nil {
		t.Fatalf("listen on [::]:0 without IPv6: %v", err)
	}
	defer u.Close()
	self := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), u.LocalAddr().Port())
	p := make([]byte, 88)
	p[0] = 0x5A
	if n, err := u.WriteBatch([]Message{{Buf: p, N: len(p), Addr: self}}); n != 1 {
		t.Fatalf("WriteBatch to %v = %d, %v; want 1", self, n, err)
	}
	msgs := newReadBatch(4)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		k, err := u.TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if k > 0 {
			if msgs[0].N != len(p) || msgs[0].Buf[0] != 0x5A || msgs[0].Addr != self {
				t.Fatalf("read %d bytes from %v, want %d from %v", msgs[0].N, msgs[0].Addr, len(p), self)
			}
			return
		}
		// A non-blocking reader's pause between empty reads.
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the datagram sent to ourselves did not arrive")
}
