package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
)

// The data plane is a poll loop per queue: one goroutine does all of a
// queue's per-packet work, both directions, for the UDP transport and every
// TAP. It waits in epoll_wait on its own epoll set and reads every ready fd
// without waiting, so that a datagram that arrives wakes the one thread that
// handles it, and the frame its TAP write makes the kernel answer (an ACK,
// an echo reply) is read and sent by the same thread before it waits again.
// docs/performance.md has the measurements behind this shape and the
// alternatives that lost (a goroutine per port and direction, a loop per
// direction, polling without yielding, scheduler policies).

// pollWaitMs bounds one epoll_wait of the loop, and yieldEvery is how
// often the loop yields to the scheduler. The runtime preempts a goroutine
// that has run for 10 ms without a scheduling point, and if that happens in
// a system call it also takes its P away, so that the loop must find one
// again (a thread switch) and the runtime's monitor goes back to ticking
// every 20 us. A loop that yields more often than that is never preempted:
// between two yields there is at most yieldEvery, one wait and one round.
// (A yield costs a futex wake-up of another runtime thread, so not much
// more often than that.)
const (
	pollWaitMs = 4
	yieldEvery = 4 * time.Millisecond
	idleAfter  = 100 * time.Millisecond
)

// ErrDataPlaneStopped is returned by SetPort for a new port once the
// engine's poll loop has stopped.
var ErrDataPlaneStopped = errors.New("vnicd: the data plane has stopped")

// Tags of the poll loop's epoll events; a port's is its vport index.
const (
	pollTagUDP  = -1
	pollTagWake = -2
)

// dataPlane is an engine's poll loops, one per queue: loop i reads the
// HFI's queue i (hfi.ListenUDPQueues) and every port's TAP queue i, and
// writes what it receives to TAP queue i. The kernel keeps a flow on one
// TAP queue and the queue group keeps its packets on one socket, so a flow
// is carried by one loop on each host, in order. With one queue, there is
// one loop on the HFI's own transport and the TAPs' single fds.
type dataPlane struct {
	e     *Engine
	loops []*pollLoop

	mu      sync.Mutex // fds' lifetime: add, remove, close
	closed  bool
	started bool
	done    chan struct{} // closed when run returns
	stopped atomic.Bool

	ports atomic.Pointer[polledPorts]

	busyPoll atomic.Int64 // SetBusyPoll, in ns; 0 = off
}

// pollLoop is one queue's loop and its epoll set.
type pollLoop struct {
	dp      *dataPlane
	q       int // queue index
	rx      *hfi.RxPoller
	tr      hfi.PollTransport // the queue's transport
	ep      int               // epoll fd
	wake    int               // eventfd: a control change or stop
	rawWait bool              // the loop's

	busyPolls atomic.Uint64 // polls of the busy-poll window that found nothing
	rxPackets atomic.Uint64 // datagrams read from the queue's transport
	txFrames  atomic.Uint64 // frames read from the ports' device queues
}

// QueueCounters are one data-plane queue's counts.
type QueueCounters struct {
	// RxPackets counts the datagrams the queue's loop read from its UDP
	// socket, TxFrames the frames it read from its queue of every port's
	// device (TAP queue), before the checks that may drop them.
	RxPackets, TxFrames uint64
	// RxMisrouted counts the VNIC packets among RxPackets that belong to
	// another queue (hfi.RxPoller.Misrouted): the underlay merged
	// datagrams of several flows, and a flow whose frames reach two queues
	// may be reordered.
	RxMisrouted uint64
	// RxKernelDrops counts the datagrams the kernel dropped at the queue's
	// UDP socket before the loop could read them (hfi.UDP.KernelDrops): its
	// receive buffer was full, or their UDP checksum was bad. It stays 0
	// for a transport that does not say.
	RxKernelDrops uint64
}

// kernelDropper is a transport that can say how many datagrams the kernel
// dropped at it (hfi.UDP).
type kernelDropper interface{ KernelDrops() (uint64, bool) }

// QueueCounters returns each data-plane queue's counts, queue 0 first.
func (e *Engine) QueueCounters() []QueueCounters {
	dp := e.dataPlane()
	out := make([]QueueCounters, len(dp.loops))
	for i, l := range dp.loops {
		out[i] = QueueCounters{RxPackets: l.rxPackets.Load(), TxFrames: l.txFrames.Load(), RxMisrouted: l.rx.Misrouted()}
		if kd, ok := l.tr.(kernelDropper); ok {
			out[i].RxKernelDrops, _ = kd.KernelDrops()
		}
	}
	return out
}

// polledPorts is the loop's port set, immutable once built.
type polledPorts struct {
	list    []*Port
	byVPort [256]*Port
}

// EnableQueues gives the data plane a loop per queue: the HFI's transport
// is queue 0, and more are further queues of its port, in the order of the
// queue group (hfi.ListenUDPQueues), which the engine closes when its data
// plane stops (on an error they stay the caller's). Each port's device then
// gets as many queues (a multiqueue TAP) as there are loops. It must be
// called before the first port is created, and at most once with more
// queues. An error leaves the engine as it was.
func (e *Engine) EnableQueues(more []hfi.PollTransport) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ports) > 0 {
		return errors.New("vnicd: EnableQueues after ports were created")
	}
	if len(more) == 0 {
		return nil
	}
	if len(e.dp.loops) > 1 {
		return errors.New("vnicd: EnableQueues: the data plane's queues are already set")
	}
	dp, err := e.newDataPlane(more)
	if err != nil {
		return err
	}
	e.dp.close()
	e.dp = dp
	return nil
}

// newDataPlane makes the loops of the HFI's transport and more.
func (e *Engine) newDataPlane(more []hfi.PollTransport) (*dataPlane, error) {
	tr, ok := e.hfi.Transport().(hfi.PollTransport)
	if !ok {
		return nil, ErrNotPollable
	}
	dp := &dataPlane{e: e, done: make(chan struct{})}
	dp.ports.Store(&polledPorts{})
	trs := append([]hfi.PollTransport{tr}, more...)
	for i, tr := range trs {
		l := &pollLoop{dp: dp, q: i, tr: tr}
		if i == 0 { // the HFI's registered receivers: the engine (rx0), management
			l.rx = e.hfi.NewRxPoller()
		} else {
			rx := &queueRx{e: e, q: i}
			l.rx = e.hfi.NewQueueRxPoller(tr, map[uint8]hfi.Receiver{encap.L4Ethernet: rx})
		}
		if len(trs) > 1 {
			l.rx.SetQueue(i, len(trs))
		}
		if err := l.open(); err != nil {
			dp.close()
			return nil, err
		}
		dp.loops = append(dp.loops, l)
	}
	return dp, nil
}

// open makes the loop's epoll set, with its wake-up eventfd and its
// transport in it.
func (l *pollLoop) open() error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("vnicd: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return fmt.Errorf("vnicd: eventfd: %w", err)
	}
	l.ep, l.wake = ep, wake
	err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: pollTagWake})
	if err == nil {
		cerr := l.rx.Control(func(fd uintptr) {
			err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: unix.EPOLLIN, Fd: pollTagUDP})
		})
		err = errors.Join(err, cerr)
	}
	if err != nil {
		unix.Close(ep)
		unix.Close(wake)
		l.ep = -1
		return fmt.Errorf("vnicd: epoll_ctl: %w", err)
	}
	return nil
}

// Queues returns how many poll loops (queues) the engine's data plane has.
func (e *Engine) Queues() int { return len(e.dataPlane().loops) }

// dataPlane returns the engine's poll loops.
func (e *Engine) dataPlane() *dataPlane {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dp
}

// MaxBusyPoll bounds SetBusyPoll's window.
const MaxBusyPoll = time.Second

// SetBusyPoll sets the poll loop's busy-poll window: for d after it last
// found work, the loop polls its fds without sleeping (epoll_wait with no
// timeout, then sched_yield, so that any other runnable thread on the CPU
// goes first) instead of sleeping in epoll_wait. 0, the default, turns it
// off. It is the userspace counterpart of the kernel's net.core.busy_poll:
// a frame that arrives within the window is handled without a wake-up of
// the loop's thread, which on this kind of VM costs tens of microseconds a
// hop (a ping crosses four such hops), at the price of CPU time spent
// polling: up to d after every burst, all of it while traffic keeps coming
// more often than every d. Each queue's loop busy-polls after its own
// traffic. It takes effect at the loops' next wait; it needs more Ps than
// loops, GOMAXPROCS >= queues + 1 (without a P to spare a loop must give
// its P back to sleep, and is never busy-polled).
func (e *Engine) SetBusyPoll(d time.Duration) error {
	if d < 0 || d > MaxBusyPoll {
		return fmt.Errorf("vnicd: busy-poll window %v: must be 0 (off) to %v", d, MaxBusyPoll)
	}
	e.dataPlane().busyPoll.Store(int64(d))
	return nil
}

// BusyPoll returns the busy-poll window in effect: SetBusyPoll's, or 0
// when the engine has no P to spare (GOMAXPROCS <= queues).
func (e *Engine) BusyPoll() time.Duration {
	dp := e.dataPlane()
	if !dp.loops[0].canRawWait() {
		return 0
	}
	return time.Duration(dp.busyPoll.Load())
}

// BusyPolls returns how many times the loops polled in their busy-poll
// window and found nothing (each such poll also yields the CPU once).
func (e *Engine) BusyPolls() uint64 {
	var n uint64
	for _, l := range e.dataPlane().loops {
		n += l.busyPolls.Load()
	}
	return n
}

// RunDataPlane runs the data plane's loops until ctx is done, Close stops
// them or one fails. It returns nil on a clean stop, and closes the
// transports.
func (e *Engine) RunDataPlane(ctx context.Context) error {
	dp := e.dataPlane()
	defer func() {
		for _, l := range dp.loops {
			l.tr.Close()
		}
	}()
	return dp.run(ctx)
}

// add puts a port's device queues (p.pq) in the loops.
func (dp *dataPlane) add(p *Port) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return ErrDataPlaneStopped
	}
	for i, pq := range p.pq {
		pq.tx = newTxState(p.dev.BatchSize(), p.st.Load().maxFrame)
		pq.txReady = true // frames may be queued already
		if err := dp.loops[i].ctl(p, pq, unix.EPOLL_CTL_ADD, unix.EPOLLIN); err != nil {
			for _, l := range dp.loops[:i] {
				_ = l.ctl(p, p.pq[l.q], unix.EPOLL_CTL_DEL, 0)
			}
			return fmt.Errorf("vnicd: vport %d: queue %d: epoll_ctl: %w", p.vport, i, err)
		}
	}
	old := dp.ports.Load()
	n := &polledPorts{list: append(append([]*Port(nil), old.list...), p), byVPort: old.byVPort}
	n.byVPort[p.vport] = p
	dp.ports.Store(n)
	dp.kickLocked()
	return nil
}

// remove takes a port out of the loops before its device closes. A loop
// may still be in the middle of a batch of it: a closed device's reads and
// writes fail and are counted as the port's.
func (dp *dataPlane) remove(p *Port) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	old := dp.ports.Load()
	n := &polledPorts{byVPort: old.byVPort}
	for _, q := range old.list {
		if q != p {
			n.list = append(n.list, q)
		}
	}
	if n.byVPort[p.vport] == p {
		n.byVPort[p.vport] = nil
	}
	dp.ports.Store(n)
	if !dp.closed {
		for i, pq := range p.pq {
			_ = dp.loops[i].ctl(p, pq, unix.EPOLL_CTL_DEL, 0)
		}
	}
}

// ctl adds, changes (events) or deletes p's device queue pq in the loop's
// epoll set, tagged with its vport; dp.mu is held.
func (l *pollLoop) ctl(p *Port, pq *portQueue, op int, events uint32) error {
	var err error
	cerr := pq.dev.Control(func(fd uintptr) {
		err = unix.EpollCtl(l.ep, op, int(fd), &unix.EpollEvent{Events: events, Fd: int32(p.vport)})
	})
	return errors.Join(err, cerr)
}

// isClosed reports whether the loop has stopped for good.
func (dp *dataPlane) isClosed() bool {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.closed
}

// kickLocked wakes the loops; dp.mu is held.
func (dp *dataPlane) kickLocked() {
	if !dp.closed {
		var one = [8]byte{1}
		for _, l := range dp.loops {
			_, _ = unix.Write(l.wake, one[:])
		}
	}
}

// stop ends the loop (or, if it never started, releases its fds) and
// waits for it.
func (dp *dataPlane) stop() {
	dp.stopped.Store(true)
	dp.mu.Lock()
	started := dp.started
	dp.kickLocked()
	dp.mu.Unlock()
	if started {
		<-dp.done
	} else {
		dp.close()
	}
}

func (dp *dataPlane) close() {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return
	}
	dp.closed = true
	for _, l := range dp.loops {
		if l.ep >= 0 {
			unix.Close(l.ep)
			unix.Close(l.wake)
		}
	}
}

// run runs the loops, the first in the calling goroutine, until ctx is done
// or one of them fails; it returns the first error.
func (dp *dataPlane) run(ctx context.Context) error {
	dp.mu.Lock()
	if dp.started {
		dp.mu.Unlock()
		return errors.New("vnicd: the data plane is already running")
	}
	if dp.closed { // stopped (Engine.Close) before it ran
		dp.mu.Unlock()
		return nil
	}
	dp.started = true
	dp.mu.Unlock()
	defer func() {
		dp.close()
		close(dp.done)
	}()
	stopKick := context.AfterFunc(ctx, func() {
		dp.mu.Lock()
		dp.kickLocked()
		dp.mu.Unlock()
	})
	defer stopKick()

	errs := make(chan error, len(dp.loops))
	for _, l := range dp.loops[1:] {
		go func() { errs <- l.runStopAll(ctx) }()
	}
	err := dp.loops[0].runStopAll(ctx)
	for range dp.loops[1:] {
		if e := <-errs; err == nil {
			err = e
		}
	}
	return err
}

// runStopAll runs the loop and, if it fails, stops the others.
func (l *pollLoop) runStopAll(ctx context.Context) error {
	err := l.run(ctx)
	if err != nil {
		dp := l.dp
		dp.stopped.Store(true)
		dp.mu.Lock()
		dp.kickLocked()
		dp.mu.Unlock()
		if len(dp.loops) > 1 {
			err = fmt.Errorf("queue %d: %w", l.q, err)
		}
	}
	return err
}

// canRawWait reports whether the loops may wait holding their P (wait):
// with a P to spare for the rest of vnicd.
func (l *pollLoop) canRawWait() bool { return runtime.GOMAXPROCS(0) > len(l.dp.loops) }

// run is the loop. Each round reads one batch from every ready source: the
// transport (its datagrams go to their ports' TAPs, in hfi.ReceiveBatch)
// and each port's TAP (its frames go out wrapped). A source is ready when
// epoll said so or its last batch was full; when none is, the loop waits.
// The epoll set is level-triggered, so a source misjudged empty is seen
// again at once.
func (l *pollLoop) run(ctx context.Context) error {
	dp := l.dp
	l.rawWait = l.canRawWait()
	s := dp.e.hfi.NewQueueSender(l.tr)
	events := make([]unix.EpollEvent, 64)
	var drain [8]byte
	rxReady := true
	lastYield, lastBusy := time.Now(), time.Now()
	for ctx.Err() == nil && !dp.stopped.Load() {
		if now := time.Now(); now.Sub(lastYield) >= yieldEvery {
			runtime.Gosched()
			lastYield = now
		}
		ports := dp.ports.Load()
		busy := false
		if rxReady {
			k, full, err := l.rx.Poll()
			if k > 0 {
				l.rxPackets.Add(uint64(k))
			}
			if err != nil {
				if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || ctx.Err() != nil {
					return nil
				}
				return err
			}
			rxReady = full
			busy = full
		}
		for _, p := range ports.list {
			if l.q < len(p.pq) && p.pq[l.q].txReady && l.txPoll(p, p.pq[l.q], s) {
				busy = true
			}
		}
		if busy {
			continue
		}
		quiet := time.Since(lastBusy)
		var n int
		var err error
		if bp := time.Duration(dp.busyPoll.Load()); bp > 0 && quiet < bp && l.rawWait {
			n, err = l.poll(events)
		} else {
			n, err = l.wait(events, quiet >= idleAfter)
		}
		if n > 0 {
			lastBusy = time.Now()
		}
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("vnicd: epoll_wait: %w", err)
		}
		ports = dp.ports.Load()
		for _, ev := range events[:n] {
			switch ev.Fd {
			case pollTagUDP:
				rxReady = true
				if ev.Events&unix.EPOLLERR != 0 {
					l.rx.DrainErrors() // an error for a datagram sent (hfi.UDP.PeerErrors)
				}
			case pollTagWake:
				_, _ = unix.Read(l.wake, drain[:])
			default:
				if p := ports.byVPort[uint8(ev.Fd)]; p != nil && ev.Fd >= 0 && ev.Fd < 256 && l.q < len(p.pq) {
					p.pq[l.q].txReady = true
				}
			}
		}
	}
	return nil
}

// txPoll reads one batch from p's device queue pq and sends it; it reports
// whether the batch was full (more may be queued). A read error that is not
// the device closing is counted and the queue is left alone for a while
// (epoll would report it again and again).
func (l *pollLoop) txPoll(p *Port, pq *portQueue, s *hfi.Sender) bool {
	pq.tx = p.txBuffers(pq.tx)
	tx := pq.tx
	n, err := pq.dev.TryRead(tx.bufs, tx.sizes, encap.Headroom)
	if n > 0 {
		l.txFrames.Add(uint64(n))
		p.transmit(tx, n, s)
	}
	if err != nil && n == 0 {
		pq.txReady = false
		if p.closing.Load() || isClosed(err) {
			return false
		}
		p.Counters.TxFifoErrors.Add(1)
		l.pause(p, pq)
		return false
	}
	pq.txReady = n == len(tx.bufs)
	return pq.txReady
}

// pause takes p's device queue pq out of the loop's epoll set for
// readErrorBackoff. Out, not masked: epoll reports EPOLLERR and EPOLLHUP
// whatever the mask, and a TAP whose netdev was deleted is in EPOLLERR.
func (l *pollLoop) pause(p *Port, pq *portQueue) {
	dp := l.dp
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return
	}
	_ = l.ctl(p, pq, unix.EPOLL_CTL_DEL, 0)
	time.AfterFunc(readErrorBackoff, func() {
		dp.mu.Lock()
		defer dp.mu.Unlock()
		if dp.closed || p.closing.Load() || dp.ports.Load().byVPort[p.vport] != p {
			return
		}
		_ = l.ctl(p, pq, unix.EPOLL_CTL_ADD, unix.EPOLLIN)
	})
}

// poll is one round of the busy-poll window: the loop's fds that are ready
// now, without waiting; when none is, the thread yields its CPU (a raw
// sched_yield: it keeps the loop's P) so that a thread the loop's last
// frame woke (an iperf3, a ping) runs at once on this CPU.
func (l *pollLoop) poll(events []unix.EpollEvent) (int, error) {
	n, err := l.rawEpollWait(events, 0)
	if n == 0 && err == nil {
		l.busyPolls.Add(1)
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return n, err
}

// wait waits for the loop's fds. While traffic flows, with a P to spare
// (GOMAXPROCS > queues, canRawWait), it waits in a raw epoll_wait, which
// keeps the loop's P.
// A wait through the runtime's system-call path gives the P back after a
// while, and taking it again on waking costs a thread switch and futex and
// nanosleep calls of the scheduler on every packet (docs/performance.md).
// The runtime still stops the loop whenever it must: its preemption signal
// ends the wait with EINTR, and the wait ends after pollWaitMs in any case
// (and the loop yields, yieldEvery). An idle loop (nothing for idleAfter),
// or one with no P to spare, waits the ordinary way and without a time
// limit, so that an idle vnicd does not wake up every few milliseconds and
// the rest of vnicd can run.
func (l *pollLoop) wait(events []unix.EpollEvent, idle bool) (int, error) {
	if idle || !l.rawWait {
		return unix.EpollWait(l.ep, events, -1)
	}
	return l.rawEpollWait(events, pollWaitMs)
}

// rawEpollWait is epoll_wait for at most ms milliseconds as a raw system call,
// which keeps the loop's P (wait).
func (l *pollLoop) rawEpollWait(events []unix.EpollEvent, ms int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.ep), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
