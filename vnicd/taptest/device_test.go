package taptest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/race"
	"github.com/opavnic/opavnic/vnicd/tap"
)

const headroom = 24 // as the 16B encoder would leave

// frame returns a frame of n bytes whose bytes say its seq.
func frame(n int, seq byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = seq + byte(i)
	}
	return f
}

// withHeadroom returns f behind headroom junk bytes, as the engine passes it.
func withHeadroom(f []byte) []byte {
	return append(bytes.Repeat([]byte{0xEE}, headroom), f...)
}

func readBufs(n, size int) ([][]byte, []int) {
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, headroom+size)
	}
	return bufs, make([]int, n)
}

func TestPairCarriesFramesBothWays(t *testing.T) {
	a, b := Pair(Options{Names: [2]string{"left", "right"}})
	if a.Name() != "left" || b.Name() != "right" || a.BatchSize() != DefaultBatchSize {
		t.Fatalf("names %q %q, batch %d", a.Name(), b.Name(), a.BatchSize())
	}
	for _, tc := range []struct {
		name     string
		from, to *Device
	}{{"a to b", a, b}, {"b to a", b, a}} {
		t.Run(tc.name, func(t *testing.T) {
			sent := [][]byte{frame(60, 1), frame(1514, 2), frame(14, 3)}
			var in [][]byte
			for _, f := range sent {
				in = append(in, withHeadroom(f))
			}
			if n, err := tc.from.Write(in, headroom); n != 3 || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			// The writer's buffers are its own again: scribbling on them must
			// not change what is read.
			for _, b := range in {
				clear(b)
			}
			bufs, sizes := readBufs(8, 2000)
			n, err := tc.to.Read(bufs, sizes, headroom)
			if n != 3 || err != nil {
				t.Fatalf("Read = %d, %v; want the 3 frames in one batch", n, err)
			}
			for i, f := range sent {
				if got := bufs[i][headroom : headroom+sizes[i]]; !bytes.Equal(got, f) {
					t.Errorf("frame %d: got %d bytes % x..., want %d bytes % x...", i, len(got), got[:4], len(f), f[:4])
				}
				if bufs[i][headroom-1] != 0 {
					t.Errorf("frame %d: Read wrote into the headroom", i)
				}
			}
		})
	}
}

func TestReadHonoursLimits(t *testing.T) {
	a, b := Pair(Options{BatchSize: 2})
	for i := range 5 {
		if _, err := a.Write([][]byte{frame(64, byte(i))}, 0); err != nil {
			t.Fatal(err)
		}
	}
	bufs, sizes := readBufs(4, 100)
	if n, _ := b.Read(bufs, sizes, 0); n != 2 {
		t.Fatalf("Read = %d frames, want BatchSize 2", n)
	}
	if n, _ := b.Read(bufs, sizes[:1], 0); n != 1 {
		t.Fatalf("Read with one size slot = %d frames, want 1", n)
	}
	if n, _ := b.Read(bufs[:1], sizes, 0); n != 1 {
		t.Fatalf("Read with one buffer = %d frames, want 1", n)
	}
	if n, err := b.Read(bufs, sizes, 0); n != 1 || err != nil || bufs[0][0] != 4 {
		t.Fatalf("last Read = %d, %v, first byte %d; want frame 4", n, err, bufs[0][0])
	}
}

func TestReadCutsLongFrames(t *testing.T) {
	a, b := Pair(Options{})
	long := frame(100, 0)
	_, _ = a.Write([][]byte{long}, 0)
	bufs, sizes := readBufs(1, 50)
	if n, err := b.Read(bufs, sizes, headroom); n != 1 || err != nil || sizes[0] != 50 ||
		!bytes.Equal(bufs[0][headroom:], long[:50]) {
		t.Fatalf("Read = %d, %v, size %d; want the frame's first 50 bytes, as the TAP cuts it", n, err, sizes[0])
	}
}

func TestWriteRefusesBadFrames(t *testing.T) {
	a, b := Pair(Options{MaxFrame: 1518})
	for _, tc := range []struct {
		name string
		size int
	}{{"runt", 13}, {"too long", 1519}} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := a.Write([][]byte{frame(60, 0), frame(tc.size, 1), frame(60, 2)}, 0)
			if n != 1 || !errors.Is(err, ErrFrameSize) {
				t.Fatalf("Write = %d, %v; want 1, ErrFrameSize", n, err)
			}
		})
	}
	if b.Queued() != 2 {
		t.Fatalf("%d frames queued, want the 2 good ones before the bad", b.Queued())
	}
}

func TestDrops(t *testing.T) {
	t.Run("full queue", func(t *testing.T) {
		a, b := Pair(Options{Depth: 2})
		n, err := a.Write([][]byte{frame(60, 0), frame(60, 1), frame(60, 2)}, 0)
		if n != 3 || err != nil || b.Queued() != 2 || b.Drops() != 1 || a.Drops() != 0 {
			t.Fatalf("Write = %d, %v; queued %d, drops %d/%d; want 2 queued, 1 dropped at b",
				n, err, b.Queued(), b.Drops(), a.Drops())
		}
	})
	t.Run("closed peer", func(t *testing.T) {
		a, b := Pair(Options{})
		b.Close()
		if n, err := a.Write([][]byte{frame(60, 0)}, 0); n != 1 || err != nil || b.Drops() != 1 {
			t.Fatalf("Write to a closed peer = %d, %v, drops %d; want it accepted and dropped", n, err, b.Drops())
		}
	})
}

func TestCloseUnblocksRead(t *testing.T) {
	_, b := Pair(Options{})
	errc := make(chan error, 1)
	go func() {
		bufs, sizes := readBufs(1, 100)
		_, err := b.Read(bufs, sizes, 0)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // most likely blocked in Read by now; Close unblocks it either way
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("blocked Read returned %v, want os.ErrClosed", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Read still blocked 1 s after Close")
	}
	if _, err := b.Write([][]byte{frame(60, 0)}, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v, want os.ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	const writers, each = 4, 500
	a, b := Pair(Options{Depth: writers * each})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			f := [][]byte{frame(64, byte(w))}
			for range each {
				if _, err := a.Write(f, 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	got := 0
	bufs, sizes := readBufs(DefaultBatchSize, 100)
	for got < writers*each {
		n, err := b.Read(bufs, sizes, 0)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	wg.Wait()
	if b.Drops() != 0 {
		t.Fatalf("%d drops with room for every frame", b.Drops())
	}
}

func TestNoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	a, b := Pair(Options{})
	in := [][]byte{withHeadroom(frame(1514, 0)), withHeadroom(frame(64, 1))}
	bufs, sizes := readBufs(2, 1514)
	roundTrip := func() {
		if _, err := a.Write(in, headroom); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Read(bufs, sizes, headroom); n != 2 || err != nil {
			t.Fatalf("Read = %d, %v", n, err)
		}
	}
	roundTrip() // makes the queue's buffers
	if allocs := testing.AllocsPerRun(1000, roundTrip); allocs != 0 {
		t.Fatalf("Write+Read allocate %v times per run, want 0", allocs)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{64, 512, 1500, 9000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			x, y := Pair(Options{})
			in := [][]byte{withHeadroom(frame(size, 0))}
			bufs, sizes := readBufs(1, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				_, _ = x.Write(in, headroom)
				_, _ = y.Read(bufs, sizes, headroom)
			}
		})
	}
}

// readable reports whether d's Control fd is readable now.
func readable(t *testing.T, d *Device) bool {
	t.Helper()
	var n int
	if err := d.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ = unix.Poll(p, 0)
	}); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestPollable: the Control fd is readable while frames are queued and
// not once TryRead has taken them all; TryRead never waits.
func TestPollable(t *testing.T) {
	a, b := Pair(Options{BatchSize: 2})
	bufs, sizes := readBufs(4, 100)
	if n, err := b.TryRead(bufs, sizes, headroom); n != 0 || err != nil {
		t.Fatalf("TryRead of an empty queue = %d, %v", n, err)
	}
	if readable(t, b) {
		t.Fatal("readable with nothing queued")
	}
	in := [][]byte{withHeadroom(frame(60, 1)), withHeadroom(frame(60, 2)), withHeadroom(frame(60, 3))}
	if n, err := a.Write(in, headroom); n != 3 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if !readable(t, b) {
		t.Fatal("not readable with three frames queued")
	}
	if n, _ := b.TryRead(bufs, sizes, headroom); n != 2 {
		t.Fatalf("first TryRead = %d frames, want a batch of 2", n)
	}
	// A full batch leaves the fd clear but the reader reads again (the
	// engine does after a full batch) and finds the third.
	if n, _ := b.TryRead(bufs, sizes, headroom); n != 1 || sizes[0] != 60 || bufs[0][headroom] != 3 {
		t.Fatalf("second TryRead = %d frames, first %d bytes", n, sizes[0])
	}
	if readable(t, b) {
		t.Fatal("readable after the queue was drained")
	}
	b.Close()
	if _, err := b.TryRead(bufs, sizes, headroom); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("TryRead after Close: %v", err)
	}
	if err := b.Control(func(uintptr) {}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Control after Close: %v", err)
	}
}

// nextEvent returns the next event of ch, failing after 2 s.
func nextEvent(t *testing.T, ch <-chan tap.LinkEvent) (tap.LinkEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2 s")
	}
	return tap.LinkEvent{}, false
}

// TestNetdevState: settings change the state Watch reports, as a TAP's
// netlink watch reports them; a move from outside ends the watch with
// Moved and Follow takes the new place; a delete ends it with Deleted and
// fails I/O.
func TestNetdevState(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	a, _ := Pair(Options{MTU: 9000, MAC: mac, Names: [2]string{"vnic0", ""}})
	ch, err := a.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := nextEvent(t, ch); !ev.Up || ev.MTU != 9000 || ev.MAC != mac || ev.Name != "vnic0" {
		t.Fatalf("first event %+v", ev)
	}
	a.SetUp(false)
	if ev, _ := nextEvent(t, ch); ev.Up {
		t.Fatalf("after SetUp(false): %+v", ev)
	}
	if err := a.SetMTU(20); err == nil {
		t.Error("SetMTU(20) succeeded")
	}
	if err := a.SetMTU(1500); err != nil {
		t.Fatal(err)
	}
	if ev, _ := nextEvent(t, ch); ev.MTU != 1500 {
		t.Fatalf("after SetMTU(1500): %+v", ev)
	}
	if err := a.SetMAC([6]byte{1}); err == nil {
		t.Error("a multicast MAC was taken")
	}
	if err := a.SetCarrier(false); err != nil || a.Carrier() {
		t.Fatalf("SetCarrier(false): %v, carrier %v", err, a.Carrier())
	}
	a.SetMcast([][6]byte{{1, 0, 0x5e, 0, 0, 1}})
	if m, err := a.McastMACs(); err != nil || len(m) != 1 {
		t.Fatalf("McastMACs = %v, %v", m, err)
	}

	a.MoveAway("ns1", "eth0")
	if ev, _ := nextEvent(t, ch); !ev.Moved {
		t.Fatalf("after MoveAway: %+v", ev)
	}
	if _, ok := nextEvent(t, ch); ok {
		t.Fatal("the watch goes on after Moved")
	}
	if err := a.Follow(); err != nil || a.Name() != "eth0" || a.NetNS() != "ns1" {
		t.Fatalf("Follow: %v, now %s in %q", err, a.Name(), a.NetNS())
	}
	if err := a.Follow(); err == nil {
		t.Error("a second Follow without a move succeeded")
	}

	if ch, err = a.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ch)
	a.Delete()
	if ev, _ := nextEvent(t, ch); !ev.Deleted {
		t.Fatalf("after Delete: %+v", ev)
	}
	bufs, sizes := readBufs(1, 100)
	if _, err := a.TryRead(bufs, sizes, headroom); !errors.Is(err, ErrDeleted) {
		t.Fatalf("TryRead of a deleted netdev: %v", err)
	}
	if !readable(t, a) {
		t.Error("a deleted netdev's fd is not readable (a TAP's is in error)")
	}
}

// TestHoldSettings: a held settings call waits until the gate opens, and
// frames flow meanwhile.
func TestHoldSettings(t *testing.T) {
	a, b := Pair(Options{})
	gate := make(chan struct{})
	a.HoldSettings(gate)
	done := make(chan error, 1)
	go func() { done <- a.SetMTU(2000) }()
	if n, err := b.Write([][]byte{withHeadroom(frame(60, 1))}, headroom); n != 1 || err != nil {
		t.Fatalf("Write while a setting is held: %d, %v", n, err)
	}
	bufs, sizes := readBufs(1, 100)
	if n, err := a.Read(bufs, sizes, headroom); n != 1 || err != nil {
		t.Fatalf("Read while a setting is held: %d, %v", n, err)
	}
	select {
	case err := <-done:
		t.Fatalf("SetMTU returned (%v) before the gate opened", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil || a.MTU() != 2000 {
		t.Fatalf("SetMTU after the gate opened: %v, MTU %d", err, a.MTU())
	}
}
