//go:build linux

package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestDataPlaneUSO sends UDP with UDP_SEGMENT (GSO) across two engines:
// host a's TAP hands vnicd UDP super-frames (USO, kernels from 6.2), vnicd
// cuts them into datagrams, host b's vnicd writes runs of them to its TAP
// coalesced, and host b's socket (no UDP_GRO: the kernel cuts them again)
// gets every datagram intact, once and in order, with no UDP checksum error.
func TestDataPlaneUSO(t *testing.T) {
	a, b := newLinkedPair(t, "usa", "usb", "192.168.73")
	rc, sc := udpPair(t, a, b, "192.168.73.2")

	// Each write is one GSO send: per datagrams of gsoSize bytes, the last
	// one shorter. Every datagram starts with its number and is filled
	// with a pattern of it.
	const writes, perWrite, gsoSize, tail = 40, 20, 1000, 333
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT, gsoSize)
	}); err != nil {
		t.Fatal(err)
	}
	nstest.RequireKernel(t, "UDP_SEGMENT", serr)
	datagram := func(seq int) []byte {
		n := gsoSize
		if seq%perWrite == perWrite-1 {
			n = tail
		}
		d := make([]byte, n)
		binary.BigEndian.PutUint32(d, uint32(seq))
		for i := 4; i < n; i++ {
			d[i] = byte(seq*7 + i)
		}
		return d
	}

	buf := make([]byte, 65536)
	next := 0
	for w := range writes {
		var send []byte
		for i := range perWrite {
			send = append(send, datagram(w*perWrite+i)...)
		}
		if _, err := sc.Write(send); err != nil {
			t.Fatalf("GSO write %d: %v", w, err)
		}
		// Lockstep: this write's datagrams arrive before the next write, so
		// that no receive buffer overflows and a loss is a failure.
		for next < (w+1)*perWrite {
			_ = rc.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, err := rc.Read(buf)
			if err != nil {
				t.Fatalf("datagram %d of %d did not arrive: %v (a's port: %v)", next, writes*perWrite, err, counters(a, 0))
			}
			if want := datagram(next); !bytes.Equal(buf[:n], want) {
				got := -1
				if n >= 4 {
					got = int(binary.BigEndian.Uint32(buf))
				}
				t.Fatalf("datagram %d: got %d bytes numbered %d, want %d bytes", next, n, got, len(want))
			}
			next++
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snmp, err := b.ns.Exec(ctx, "cat", "/proc/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := snmpField(string(snmp), "Udp", "InCsumErrors"); !ok || v != 0 {
		t.Errorf("host b's UDP InCsumErrors %d (found %v)", v, ok)
	}
	c, cb := counters(a, 0), counters(b, 0)
	t.Logf("host a: tx_uso_superframes %d tx_uso_segments %d offload_drops %d; host b: rx_coalesced %d of rx_packets %d",
		c["tx_uso_superframes"], c["tx_uso_segments"], c["offload_drops"], cb["rx_coalesced"], cb["rx_packets"])
	if c["offload_drops"] != 0 || cb["offload_drops"] != 0 {
		t.Errorf("frames vnicd could not finish: host a %d, host b %d", c["offload_drops"], cb["offload_drops"])
	}
	if !kernelAtLeast(t, 6, 2) {
		t.Log("kernel older than 6.2: no USO, the kernel cut the super-frames")
		return
	}
	if c["tx_uso_superframes"] == 0 || c["tx_uso_segments"] < 2*c["tx_uso_superframes"] {
		t.Errorf("the sends did not reach vnicd as UDP super-frames: tx_uso_superframes %d tx_uso_segments %d",
			c["tx_uso_superframes"], c["tx_uso_segments"])
	}
	if cb["rx_coalesced"] < writes*perWrite/2 {
		t.Errorf("host b coalesced %d of the %d datagrams", cb["rx_coalesced"], writes*perWrite)
	}
}

// udpPair opens a UDP socket on host b at addr (a free port) and one on host
// a connected to it; both close when t ends.
func udpPair(t testing.TB, a, b *pollHost, addr string) (rc, sc *net.UDPConn) {
	t.Helper()
	if err := b.ns.Do(func() (err error) {
		rc, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(addr)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	if err := a.ns.Do(func() (err error) {
		sc, err = net.DialUDP("udp4", nil, rc.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return rc, sc
}

// counters returns port vport's counters on host h by name.
func counters(h *pollHost, vport uint8) map[string]uint64 {
	m := map[string]uint64{}
	if p := h.engine.Port(vport); p != nil {
		for _, c := range p.AllCounters() {
			m[c.Name] = c.Value
		}
	}
	return m
}

// snmpField reads one field of /proc/net/snmp's text: a header line and a
// value line per protocol.
func snmpField(text, proto, field string) (uint64, bool) {
	var names []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == field && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}

// kernelAtLeast reports whether the running kernel is major.minor or newer.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		t.Fatalf("kernel release %q: %v", unix.ByteSliceToString(u.Release[:]), err)
	}
	return ma > major || ma == major && mi >= minor
}

// BenchmarkDataPlaneUDPGSO (root) sends UDP with UDP_SEGMENT, 44 datagrams
// of 1400 bytes a write, as fast as it can, across two engines in their
// poll loops (TAPs in namespaces, UDP on loopback) to a socket with UDP_GRO,
// and reports what arrived: delivered-Gbit/s, and delivered-% of what was
// sent (the rest was dropped on the way, mostly at host a's TAP queue).
// With USO and UDP coalescing each write crosses vnicd as one super-frame.
func BenchmarkDataPlaneUDPGSO(b *testing.B) {
	ha, hb := newLinkedPair(b, "uba", "ubb", "192.168.74")
	rc, sc := udpPair(b, ha, hb, "192.168.74.2")
	const size, per = 1400, 44
	for _, x := range []struct {
		c   *net.UDPConn
		opt int
		val int
	}{{sc, unix.UDP_SEGMENT, size}, {rc, unix.UDP_GRO, 1}} {
		raw, err := x.c.SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		var serr error
		_ = raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, x.opt, x.val) })
		nstest.RequireKernel(b, "UDP_SEGMENT and UDP_GRO", serr)
	}
	_ = rc.SetReadBuffer(8 << 20)

	var got, last atomic.Int64 // bytes, and when the last came (UnixNano)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			_ = rc.SetReadDeadline(time.Now().Add(time.Second))
			n, err := rc.Read(buf)
			if err != nil {
				return
			}
			got.Add(int64(n))
			last.Store(time.Now().UnixNano())
		}
	}()
	send := make([]byte, size*per)
	start := time.Now()
	for b.Loop() {
		if _, err := sc.Write(send); err != nil {
			b.Fatal(err)
		}
	}
	<-done // a second without a datagram: all that will come has come
	el := time.Unix(0, last.Load()).Sub(start)
	if got.Load() == 0 || el <= 0 {
		b.Fatal("nothing arrived")
	}
	sent := float64(b.N) * size * per
	b.ReportMetric(float64(got.Load())*8/el.Seconds()/1e9, "delivered-Gbit/s")
	b.ReportMetric(float64(got.Load())/sent*100, "delivered-%")
}
