//go:build linux

package vnicd

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWriteRefusedSuperFrame: when the kernel refuses a coalesced
// super-frame (a kernel before 6.2 refuses GSO_UDP_L4), Write writes the
// run's frames one by one, as they came, and coalesces no more runs of that
// kind; a refused UDP run leaves TCP coalescing on, and a refused TCP run
// turns all coalescing off. The "TAP" is one end of a SEQPACKET socket pair
// whose send buffer takes a frame but not a run of them, so no root is needed.
func TestWriteRefusedSuperFrame(t *testing.T) {
	for _, udp := range []bool{false, true} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel doubles it: messages up to about 16 KB pass, a run of
		// 16 frames of 1376 or 1400 bytes does not (EMSGSIZE).
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 8192); err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds { // non-blocking: the runtime's poller, and deadlines
			if err := unix.SetNonblock(fd, true); err != nil {
				t.Fatal(err)
			}
		}
		f := os.NewFile(uintptr(fds[0]), "seqpacket")
		peer := os.NewFile(uintptr(fds[1]), "peer")
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		tp := newTAP(f, rc, "test", -1, 1500)

		var frames [][]byte
		if udp {
			frames = datagrams(t, false, 0, 1400*16, 1400)
		} else {
			frames = segments(t, false, 1376*16, 1376, 0, tcpFlagACK)
		}
		if n := runs(withHeadroom(frames, 20), 20); len(n) != 1 {
			t.Fatalf("the frames are not one run: %v", n)
		}
		got := make(chan [][]byte, 1)
		go func() { // the peer: every message, until 2 s pass without one
			var msgs [][]byte
			buf := make([]byte, 1<<16)
			for {
				_ = peer.SetReadDeadline(time.Now().Add(2 * time.Second))
				n, err := peer.Read(buf)
				if err != nil {
					got <- msgs
					return
				}
				msgs = append(msgs, append([]byte(nil), buf[:n]...))
				if len(msgs) == len(frames) {
					got <- msgs
					return
				}
			}
		}()
		if n, err := tp.Write(withHeadroom(frames, 20), 20); n != len(frames) || err != nil {
			t.Fatalf("udp %v: Write = %d, %v; want %d, nil", udp, n, err, len(frames))
		}
		msgs := <-got
		if len(msgs) != len(frames) {
			t.Fatalf("udp %v: the peer got %d messages, want %d frames one by one", udp, len(msgs), len(frames))
		}
		for i, m := range msgs {
			if !bytes.Equal(m[:vnetHdrLen], zeroVnetHdr[:]) || !bytes.Equal(m[vnetHdrLen:], frames[i]) {
				t.Fatalf("udp %v: message %d is not frame %d as it came", udp, i, i)
			}
		}
		if tp.RxCoalesced.Load() != 0 || tp.noUDPGRO.Load() != udp || tp.noGRO.Load() != !udp {
			t.Errorf("udp %v: rx_coalesced %d, UDP coalescing off %v, all coalescing off %v",
				udp, tp.RxCoalesced.Load(), tp.noUDPGRO.Load(), tp.noGRO.Load())
		}
		_ = tp.Close()
		_ = peer.Close()
	}
}
