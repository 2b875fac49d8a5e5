//go:build linux

package engine_test

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// pollHost is one host of TestDataPlanePollLoop: an engine on a real UDP
// socket (loopback) with its data plane in the poll loop, its TAPs in ns.
type pollHost struct {
	ns     *nstest.NS
	engine *engine.Engine
	tr     *hfi.UDP
	done   chan error
	stop   context.CancelFunc
}

// newQueuedHost makes a pollHost with a data plane of queues queues (a
// queue group on loopback, multiqueue TAPs).
func newQueuedHost(t testing.TB, suffix string, queues int) *pollHost {
	t.Helper()
	return newQueuedHostWith(t, suffix, queues, engine.TAPFactory(nil))
}

// newQueuedHostWith is newQueuedHost with the ports' devices made by
// factory.
func newQueuedHostWith(t testing.TB, suffix string, queues int, factory engine.DeviceFactory) *pollHost {
	t.Helper()
	qs, err := hfi.ListenUDPQueues(netip.MustParseAddrPort("127.0.0.1:0"), 0, queues)
	if err != nil {
		t.Fatal(err)
	}
	tr := qs[0]
	var more []hfi.PollTransport
	for _, q := range qs[1:] {
		more = append(more, q)
	}
	h := hfi.New(tr, hfi.Config{VerifyICRC: true})
	e, err := engine.NewEngine(h, factory, nil)
	if err == nil {
		err = e.EnableQueues(more)
	}
	if err != nil {
		for _, q := range qs {
			q.Close()
		}
		t.Fatal(err)
	}
	ph := &pollHost{ns: nstest.NewNS(t, suffix), engine: e, tr: tr, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	ph.stop = cancel
	go func() { ph.done <- e.RunDataPlane(ctx) }()
	t.Cleanup(func() { ph.halt(t) })
	return ph
}

// halt stops the loop and closes the engine; the loop must return nil.
func (ph *pollHost) halt(t testing.TB) {
	if ph.stop == nil {
		return
	}
	ph.stop()
	ph.stop = nil
	select {
	case err := <-ph.done:
		if err != nil {
			t.Errorf("RunDataPlane: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("RunDataPlane did not return within 5 s of its context's end")
	}
	if err := ph.engine.Close(); err != nil {
		t.Errorf("engine close: %v", err)
	}
}

func (ph *pollHost) addPort(t testing.TB, vport uint8, lid uint32, vesw encap.VESWID, addr string) {
	t.Helper()
	nd := engine.NetdevConfig{IfName: "vnic" + string('0'+rune(vport)), NetNS: ph.ns.Path(),
		Addresses: []netip.Prefix{netip.MustParsePrefix(addr)}}
	if err := ph.engine.SetPort(vport, enginetest.PortConfig(lid, vesw, 0x8001), nd, nil); err != nil {
		t.Fatal(err)
	}
}

// The LIDs of newPollPair's hosts.
const lidA, lidB = 0x10, 0xC001

// newPollPair makes two poll hosts, lidA and lidB, each with the other in
// its directory.
func newPollPair(t testing.TB, suffixA, suffixB string) (a, b *pollHost) {
	return newQueuedPair(t, suffixA, suffixB, 1)
}

// newQueuedPair is newPollPair with queues queues on each host.
func newQueuedPair(t testing.TB, suffixA, suffixB string, queues int) (a, b *pollHost) {
	t.Helper()
	return pairUp(t, newQueuedHost(t, suffixA, queues), newQueuedHost(t, suffixB, queues))
}

// pairUp gives a and b LIDs lidA and lidB and each the other in its
// directory.
func pairUp(t testing.TB, a, b *pollHost) (*pollHost, *pollHost) {
	t.Helper()
	dir, err := hfi.NewDirectory(map[uint32]netip.AddrPort{lidA: a.tr.LocalAddr(), lidB: b.tr.LocalAddr()},
		map[uint32][]uint32{enginetest.Mcast: {lidA, lidB}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		h   *pollHost
		lid uint32
	}{{a, lidA}, {b, lidB}} {
		x.h.engine.HFI().SetLID(x.lid)
		x.h.engine.HFI().SetDirectory(dir)
	}
	return a, b
}

// newLinkedPair is newPollPair with a port on vesw 1 on each host, at
// net.1/24 and net.2/24 (net is three octets), and a ping answered across.
func newLinkedPair(t testing.TB, suffixA, suffixB, net string) (a, b *pollHost) {
	t.Helper()
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ping")
	a, b = newPollPair(t, suffixA, suffixB)
	a.addPort(t, 0, lidA, 1, net+".1/24")
	b.addPort(t, 0, lidB, 1, net+".2/24")
	a.ns.PingWithin(t, net+".2", 5*time.Second)
	return a, b
}

// TestDataPlanePollLoop runs two engines in their poll loops (real UDP on
// loopback, real TAPs in two namespaces): traffic flows both ways, a port
// added while the loop runs is polled at once, a deleted one leaves the
// loop (and the others) working, and the loop stops cleanly.
func TestDataPlanePollLoop(t *testing.T) {
	a, b := newLinkedPair(t, "pla", "plb", "192.168.71")
	if a.engine.Port(0).Queues() != 1 || b.engine.Port(0).Queues() != 1 {
		t.Error("a TAP port is not in the poll loop")
	}

	// A second switch, added while both loops run.
	a.addPort(t, 1, lidA, 2, "192.168.72.1/24")
	b.addPort(t, 1, lidB, 2, "192.168.72.2/24")
	b.ns.PingWithin(t, "192.168.72.1", 5*time.Second)

	// A bulk transfer over the first: every frame through both loops.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := a.ns.Exec(ctx, "ping", "-c", "200", "-i", "0.002", "-s", "1400", "-q", "-W", "2", "192.168.71.2"); err != nil {
		t.Fatalf("200 pings of 1400 bytes: %v\n%s", err, out)
	}
	pa, pb := a.engine.Port(0), b.engine.Port(0)
	if tx, rx := pa.Counters.TxUnicast.Load(), pb.Counters.RxUnicast.Load(); tx < 200 || rx < 200 {
		t.Errorf("port counters after 200 echo requests: a tx_unicast %d, b rx_unicast %d", tx, rx)
	}

	// Delete the first switch's port on b: the second goes on.
	if err := b.engine.DeletePort(0); err != nil {
		t.Fatal(err)
	}
	a.ns.PingWithin(t, "192.168.72.2", 5*time.Second)
	if out, err := a.ns.Exec(ctx, "ping", "-c", "2", "-W", "1", "192.168.71.2"); err == nil {
		t.Errorf("the deleted port still answers:\n%s", out)
	}

	// A stopped loop returns nil; the engine makes no port after it, and
	// closes its ports.
	a.stop()
	if err := <-a.done; err != nil {
		t.Errorf("RunDataPlane: %v", err)
	}
	a.stop = nil
	if err := a.engine.SetPort(2, enginetest.PortConfig(lidA, 3, 0x8001), engine.NetdevConfig{NetNS: a.ns.Path()}, nil); err == nil {
		t.Error("SetPort after the data plane stopped succeeded")
	} else if !errors.Is(err, engine.ErrDataPlaneStopped) {
		t.Errorf("SetPort after the data plane stopped: %v", err)
	}
	if err := a.engine.Close(); err != nil {
		t.Errorf("engine close: %v", err)
	}
}

// plainTransport hides every method of its transport but hfi.Transport's:
// a transport a poll loop cannot drive.
type plainTransport struct{ hfi.Transport }

// TestEngineRefusals: an HFI whose transport cannot be polled has no
// engine, and the data plane's queues are set before the first port or
// not at all.
func TestEngineRefusals(t *testing.T) {
	n := hfitest.NewNetwork()
	h := hfi.New(plainTransport{n.Listen(enginetest.EPA)}, hfi.Config{LID: enginetest.LIDA})
	if e, err := engine.NewEngine(h, enginetest.Fakes(nil), nil); !errors.Is(err, engine.ErrNotPollable) || e != nil {
		t.Errorf("NewEngine on a transport that cannot be polled: %v, %v; want ErrNotPollable", e, err)
	}
	nd := enginetest.NewStoppedNode(t, n, enginetest.LIDB, enginetest.EPB)
	if err := nd.Engine.SetPort(0, enginetest.PortConfig(enginetest.LIDB, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := nd.Engine.EnableQueues([]hfi.PollTransport{n.Listen(netip.MustParseAddrPort("10.0.0.9:4793"))}); err == nil {
		t.Error("EnableQueues after a port was made succeeded")
	}
	if q := nd.Engine.Queues(); q != 1 {
		t.Errorf("%d queues after a refused EnableQueues, want 1", q)
	}
}

// TestSetBusyPollRefusals: a window out of range is an error; 0 is always
// accepted.
func TestSetBusyPollRefusals(t *testing.T) {
	n := hfitest.NewNetwork()
	nd := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	if err := nd.Engine.SetBusyPoll(0); err != nil {
		t.Errorf("SetBusyPoll(0): %v", err)
	}
	for _, d := range []time.Duration{-time.Microsecond, engine.MaxBusyPoll + 1} {
		if err := nd.Engine.SetBusyPoll(d); err == nil || !strings.Contains(err.Error(), "must be 0 (off) to 1s") {
			t.Errorf("SetBusyPoll(%v): %v", d, err)
		}
	}
	if nd.Engine.BusyPolls() != 0 {
		t.Errorf("BusyPolls with the window off = %d", nd.Engine.BusyPolls())
	}
}

// TestDataPlaneBusyPoll: with a busy-poll window both loops poll instead of
// sleeping while pings come and go (and every ping is answered); with the
// window back at 0 they sleep again and poll no more.
func TestDataPlaneBusyPoll(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ping")
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("busy polling needs GOMAXPROCS >= 2")
	}
	a, b := newPollPair(t, "bpa", "bpb")
	a.addPort(t, 0, lidA, 1, "192.168.73.1/24")
	b.addPort(t, 0, lidB, 1, "192.168.73.2/24")
	a.ns.PingWithin(t, "192.168.73.2", 5*time.Second)
	if a.engine.BusyPolls() != 0 || b.engine.BusyPolls() != 0 {
		t.Fatalf("busy polls with the window off: a %d, b %d", a.engine.BusyPolls(), b.engine.BusyPolls())
	}

	for _, h := range []*pollHost{a, b} {
		if err := h.engine.SetBusyPoll(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 100 pings 5 ms apart: each loop is never quiet for the window.
	if out, err := a.ns.Exec(ctx, "ping", "-c", "100", "-i", "0.005", "-q", "-W", "2", "192.168.73.2"); err != nil {
		t.Fatalf("100 pings with busy polling: %v\n%s", err, out)
	}
	pa, pb := a.engine.BusyPolls(), b.engine.BusyPolls()
	if pa == 0 || pb == 0 {
		t.Fatalf("busy polls with a 50 ms window and pings 5 ms apart: a %d, b %d", pa, pb)
	}

	for _, h := range []*pollHost{a, b} {
		if err := h.engine.SetBusyPoll(0); err != nil {
			t.Fatal(err)
		}
	}
	// The loops may still be in a round; a ping later, they sleep.
	time.Sleep(100 * time.Millisecond)
	a.ns.PingWithin(t, "192.168.73.2", 5*time.Second)
	pa, pb = a.engine.BusyPolls(), b.engine.BusyPolls()
	if out, err := a.ns.Exec(ctx, "ping", "-c", "20", "-i", "0.005", "-q", "-W", "2", "192.168.73.2"); err != nil {
		t.Fatalf("20 pings after busy polling: %v\n%s", err, out)
	}
	if da, db := a.engine.BusyPolls()-pa, b.engine.BusyPolls()-pb; da != 0 || db != 0 {
		t.Errorf("busy polls with the window back at 0: a +%d, b +%d", da, db)
	}

	// A loop in the middle of its longest window still stops at once.
	if err := a.engine.SetBusyPoll(engine.MaxBusyPoll); err != nil {
		t.Fatal(err)
	}
	a.ns.PingWithin(t, "192.168.73.2", 5*time.Second)
	start := time.Now()
	a.halt(t)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a busy-polling loop took %v to stop", d)
	}
}

// failingDevice is a netdev whose fd (an eventfd) is always readable and
// whose every read fails, as a TAP whose netdev was deleted under it does
// (EBADFD) before its watcher says so.
type failingDevice struct {
	*taptest.Device
	efd   int
	reads atomic.Int64
}

func newFailingDevice(t *testing.T) *failingDevice {
	port, _ := taptest.Pair(taptest.Options{Names: [2]string{"failing0", ""}})
	return &failingDevice{Device: port, efd: readableFD(t)}
}

func (d *failingDevice) TryRead([][]byte, []int, int) (int, error) {
	d.reads.Add(1)
	return 0, unix.EBADFD
}
func (d *failingDevice) Control(f func(fd uintptr)) error { f(uintptr(d.efd)); return nil }

// readableFD returns an eventfd that is always readable, closed when the
// test ends.
func readableFD(t *testing.T) int {
	t.Helper()
	efd, err := unix.Eventfd(1, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(efd) })
	return efd
}

// polledEngineOn returns an engine on a loopback UDP transport whose port
// 0 is dev; it is closed when the test ends.
func polledEngineOn(t *testing.T, dev tap.Netdev) *engine.Engine {
	t.Helper()
	tr, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	h := hfi.New(tr, hfi.Config{LID: enginetest.LIDA})
	e, err := engine.NewEngine(h, func(engine.DeviceSpec) (tap.Netdev, error) { return dev, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.SetPort(0, enginetest.PortConfig(enginetest.LIDA, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// runDataPlane runs e's poll loop until the returned stop is called (once),
// which checks that the loop returned nil.
func runDataPlane(t *testing.T, e *engine.Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunDataPlane(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunDataPlane: %v", err)
		}
	}
}

// TestDataPlaneFailingDeviceNotSpun: a device whose reads keep failing is
// counted (tx_fifo_errors) and left alone for a while after each failure,
// so the loop neither spins on it nor stops serving the others.
func TestDataPlaneFailingDeviceNotSpun(t *testing.T) {
	dev := newFailingDevice(t)
	e := polledEngineOn(t, dev)
	if e.Port(0).Queues() != 1 {
		t.Fatal("the device is not in the poll loop")
	}
	stop := runDataPlane(t, e)
	const run = 300 * time.Millisecond
	time.Sleep(run)
	stop()
	// One read per pause (10 ms) and a few more: a spinning loop would make
	// hundreds of thousands.
	reads, counted := dev.reads.Load(), e.Port(0).Counters.TxFifoErrors.Load()
	if reads < 2 || reads > int64(run/(10*time.Millisecond))+10 {
		t.Errorf("%d reads of a failing device in %v; want one per 10 ms pause", reads, run)
	}
	if counted != uint64(reads) {
		t.Errorf("tx_fifo_errors %d, want one per failed read (%d)", counted, reads)
	}
}

// TestDataPlaneUnfollowedDeviceLeavesLoop: a port whose netdev was moved
// by hand and could not be followed leaves the poll loop, as a port whose
// netdev was deleted does, instead of counting a transmit error for every
// failed read of its fd for as long as vnicd runs.
func TestDataPlaneUnfollowedDeviceLeavesLoop(t *testing.T) {
	dev := newFailingDevice(t)
	notFound := errors.New("find vnic0: Link not found")
	dev.FollowErr.Store(&notFound)
	e := polledEngineOn(t, dev)
	defer runDataPlane(t, e)()
	dev.MoveAway("elsewhere", "vnic0")
	p := e.Port(0)
	waitfor.Until(t, 2*time.Second, "the port's link down after its netdev was lost", func() bool { return !p.LinkUp() })
	time.Sleep(50 * time.Millisecond) // a read already under way ends
	before := p.Counters.TxFifoErrors.Load()
	time.Sleep(300 * time.Millisecond) // the window in which no more may be counted
	if after := p.Counters.TxFifoErrors.Load(); after != before {
		t.Errorf("tx_fifo_errors went from %d to %d in 300 ms after the netdev was lost", before, after)
	}
}

// TestDataPlaneDrainsPeerErrors: an error the kernel queued for a datagram
// sent, whose pending error a later send already took (so no read sees
// it), is taken off the socket by the poll loop when epoll reports it
// (EPOLLERR), and recorded. Left there, it would make the level-triggered
// epoll set report the socket at every wait: a loop that spins.
func TestDataPlaneDrainsPeerErrors(t *testing.T) {
	tr, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 0)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	live, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead := hfitest.ClosedPort(t, "127.0.0.1:0")
	// To the dead port (the ICMP error comes back at once over loopback),
	// then to a live one: that send takes the pending error, and the
	// entry stays queued.
	pkt := make([]byte, 64)
	for _, to := range []netip.AddrPort{dead, live.LocalAddr()} {
		if n, err := tr.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: to}}); n != 1 {
			t.Fatalf("send to %v: %v", to, err)
		}
	}
	pollErr := func() bool {
		var revents int16
		_ = tr.Control(func(fd uintptr) {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			_, _ = unix.Poll(p, 0)
			revents = p[0].Revents
		})
		return revents&unix.POLLERR != 0
	}
	if !pollErr() || tr.PeerErrorCount() != 0 {
		t.Fatalf("setup: POLLERR %v, %d errors recorded; want an error queued, none recorded", pollErr(), tr.PeerErrorCount())
	}

	h := hfi.New(tr, hfi.Config{LID: enginetest.LIDA})
	e, err := engine.NewEngine(h, func(engine.DeviceSpec) (tap.Netdev, error) { return nil, errors.New("no devices here") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer runDataPlane(t, e)()
	for deadline := time.Now().Add(5 * time.Second); pollErr() || h.Counters.XmitPeerErrors.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: POLLERR %v, xmit_peer_errors %d; the loop left the error queued", pollErr(), h.Counters.XmitPeerErrors.Load())
		}
	}
	if pe := h.PeerErrors(); len(pe) != 1 || pe[0].Endpoint != dead || pe[0].Errno != unix.ECONNREFUSED {
		t.Fatalf("recorded %+v, want connection refused from %v", pe, dead)
	}
}
