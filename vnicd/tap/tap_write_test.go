//go:build linux

package tap

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
)

// seqpacketTAP is a TAP on one end of a SEQPACKET socket pair, which keeps
// message boundaries as a TAP's fd does, so no root is needed; sndbuf > 0
// sets that end's send buffer. Both ends are non-blocking (the runtime's
// poller, and deadlines); peer is the other end's fd, for the caller to
// close.
func seqpacketTAP(t *testing.T, sndbuf int) (tp *TAP, peer int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sndbuf > 0 {
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf); err != nil {
			t.Fatal(err)
		}
	}
	for _, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
	}
	f := os.NewFile(uintptr(fds[0]), "seqpacket")
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return newTAP(f, rc, "test"), fds[1]
}

// TestWriteRefusedSuperFrame: when the kernel refuses a coalesced
// super-frame (a kernel before 6.2 refuses GSO_UDP_L4), Write writes the
// run's frames one by one, as they came, and coalesces no more runs of that
// kind; a refused UDP run leaves TCP coalescing on, and a refused TCP run
// turns all coalescing off. The "TAP" is one end of a SEQPACKET socket pair
// whose send buffer takes a frame but not a run of them, so no root is needed.
func TestWriteRefusedSuperFrame(t *testing.T) {
	for _, udp := range []bool{false, true} {
		// The kernel doubles it: messages up to about 16 KB pass, a run of
		// 16 frames of 1376 or 1400 bytes does not (EMSGSIZE).
		tp, pfd := seqpacketTAP(t, 8192)
		peer := os.NewFile(uintptr(pfd), "peer")

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

// TestWriteFailedRunKeepsCoalescing: a run the kernel refuses whose frames
// are then refused one by one too (as a TAP that is down refuses every
// write with EIO) says nothing about coalescing: Write returns the error
// at the run's first frame and coalescing stays on. A peer that has gone
// (EPIPE for every write) stands in for the TAP that is down.
func TestWriteFailedRunKeepsCoalescing(t *testing.T) {
	for _, udp := range []bool{false, true} {
		tp, peer := seqpacketTAP(t, 0)
		_ = unix.Close(peer)
		var frames [][]byte
		if udp {
			frames = datagrams(t, false, 0, 1400*4, 1400)
		} else {
			frames = segments(t, false, 1376*4, 1376, 0, tcpFlagACK)
		}
		if n, err := tp.Write(withHeadroom(frames, 20), 20); n != 0 || err == nil {
			t.Errorf("udp %v: Write to a gone peer = %d, %v; want 0 and an error", udp, n, err)
		}
		if tp.noUDPGRO.Load() || tp.noGRO.Load() {
			t.Errorf("udp %v: a write error that every frame meets turned coalescing off (UDP %v, all %v)",
				udp, tp.noUDPGRO.Load(), tp.noGRO.Load())
		}
		_ = tp.Close()
	}
}

// TestReadSegmentsFollowBuffers: a super-frame's segments are bounded by
// the reader's buffers (the port's eth_mtu + 18), not by the netdev's MTU
// when the TAP was made: after eth_mtu and the netdev's MTU are raised from
// 1500 to 9000, the kernel's 8948-byte segments come through; into buffers
// for eth_mtu 1500 the same super-frame is dropped, and counted.
func TestReadSegmentsFollowBuffers(t *testing.T) {
	tp, peer := seqpacketTAP(t, 0)
	defer unix.Close(peer)
	defer tp.Close()

	const mss = 9000 - 20 - 32 // IPv4, TCP with timestamps: what MTU 9000 gives
	sf := superFrame(false, 3*mss, tcpFlagACK)
	vh := make([]byte, vnetHdrLen)
	vh[0], vh[1] = vnetFNeedsCsum, vnetGSOTCPv4
	binary.LittleEndian.PutUint16(vh[2:], 14+20+32)
	binary.LittleEndian.PutUint16(vh[4:], mss)
	binary.LittleEndian.PutUint16(vh[6:], 14+20)
	binary.LittleEndian.PutUint16(vh[8:], 16)
	for _, x := range []struct {
		ethMTU, frames int
		drops          uint64
	}{{9000, 3, 0}, {1500, 0, 1}} {
		if _, err := unix.Write(peer, append(vh, sf...)); err != nil {
			t.Fatal(err)
		}
		before := tp.OffloadDrops.Load()
		// Buffers as the engine sizes them: headroom, the largest frame
		// (eth_mtu + a VLAN-tagged header), a spare byte, tailroom.
		bufs, sizes := make([][]byte, BatchSize), make([]int, BatchSize)
		for i := range bufs {
			bufs[i] = make([]byte, encap.Headroom+x.ethMTU+18+1+encap.Tailroom)
		}
		n, err := tp.TryRead(bufs, sizes, encap.Headroom)
		if err != nil || n != x.frames || tp.OffloadDrops.Load()-before != x.drops {
			t.Errorf("eth_mtu %d: TryRead = %d frames, %v, offload_drops +%d; want %d frames, +%d",
				x.ethMTU, n, err, tp.OffloadDrops.Load()-before, x.frames, x.drops)
		}
		for i := range n {
			if sizes[i] != 14+20+32+mss {
				t.Errorf("eth_mtu %d: segment %d is %d bytes, want %d", x.ethMTU, i, sizes[i], 14+20+32+mss)
			}
		}
	}
}
