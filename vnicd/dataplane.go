package vnicd

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

// The data plane's poll loop: one goroutine does all of a node's per-packet
// work, both directions, for the UDP transport and every TAP. It waits in
// epoll_wait on its own epoll set and reads every ready fd without waiting.
//
// With a goroutine per direction and port parked in the runtime's poller,
// every packet that crossed a daemon was two or three hand-offs between
// runtime threads (netpoll wake-up, wakep of a spinning thread, futex and
// nanosleep calls of the scheduler): per ping across two daemons, 16 of 28
// syscalls were the scheduler's. In the loop, a datagram that arrives wakes
// the one thread that handles it, and the frame its TAP write makes the
// kernel answer (an ACK, an echo reply) is read and sent by the same thread
// before it waits again. Measured interleaved on the bench's two daemons:
// ping average 0.72-0.83 ms before, 0.31-0.46 ms after, TCP about 20% more.
// (The loop's own timer wake-ups and yields, below, make more context
// switches per second when traffic is sparse; they are off the packets'
// path.) Also measured there, and not kept: a loop per direction (TCP
// 25-30% lower, ping slower). Polling for a while before sleeping, without
// yielding the CPU, was no better: both daemons and both ends of the test
// share two cores. Polling that yields the CPU between polls is the
// opt-in busy-poll window (SetBusyPoll). In the bench it took back-to-back
// pings from 146-360 us to 52-76 us. TCP stayed within the noise, and CPU
// per gigabit rose by 7-29%. So it is off by default, as the kernel's
// net.core.busy_poll is.
//
// Devices that cannot be polled (test doubles) keep their own transmit
// goroutine (Port.txLoop), and a transport that cannot be polled is read by
// hfi.HFI.Run.

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

// pollDevice is a Device the poll loop can drive (TAP).
type pollDevice interface {
	TryRead(bufs [][]byte, sizes []int, offset int) (int, error)
	Control(f func(fd uintptr)) error
}

// Tags of the poll loop's epoll events; a port's is its vport index.
const (
	pollTagUDP  = -1
	pollTagWake = -2
)

// dataPlane is an engine's poll loop and its epoll set.
type dataPlane struct {
	e    *Engine
	rx   *hfi.RxPoller
	ep   int // epoll fd
	wake int // eventfd: a control change or stop

	mu      sync.Mutex // fds' lifetime: add, remove, close
	closed  bool
	started bool
	done    chan struct{} // closed when run returns
	stopped atomic.Bool

	ports   atomic.Pointer[polledPorts]
	rawWait bool // the loop's

	busyPoll  atomic.Int64  // SetBusyPoll, in ns; 0 = off
	busyPolls atomic.Uint64 // polls of the busy-poll window that found nothing
}

// polledPorts is the loop's port set, immutable once built.
type polledPorts struct {
	list    []*Port
	byVPort [256]*Port
}

// EnablePolling makes the engine's data plane one poll loop (RunDataPlane)
// instead of a goroutine per port and direction, when the HFI's transport
// can be polled. It must be called before the first port is created. An
// error leaves the engine as it was.
func (e *Engine) EnablePolling() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ports) > 0 {
		return errors.New("vnicd: EnablePolling after ports were created")
	}
	if e.dp != nil {
		return nil
	}
	rx := e.hfi.NewRxPoller()
	if rx == nil {
		return errors.New("vnicd: the HFI's transport cannot be polled")
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("vnicd: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return fmt.Errorf("vnicd: eventfd: %w", err)
	}
	dp := &dataPlane{e: e, rx: rx, ep: ep, wake: wake, done: make(chan struct{})}
	dp.ports.Store(&polledPorts{})
	err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: pollTagWake})
	if err == nil {
		cerr := rx.Control(func(fd uintptr) {
			err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: unix.EPOLLIN, Fd: pollTagUDP})
		})
		err = errors.Join(err, cerr)
	}
	if err != nil {
		dp.close()
		return fmt.Errorf("vnicd: epoll_ctl: %w", err)
	}
	e.dp = dp
	return nil
}

// Polling reports whether the engine's data plane is the poll loop.
func (e *Engine) Polling() bool { return e.dataPlane() != nil }

// dataPlane returns the engine's poll loop, or nil.
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
// more often than every d. It takes effect at the loop's next wait; it
// needs the poll loop (EnablePolling) and GOMAXPROCS >= 2 (with one P the
// loop must give the P back to sleep, and is never busy-polled).
func (e *Engine) SetBusyPoll(d time.Duration) error {
	if d < 0 || d > MaxBusyPoll {
		return fmt.Errorf("vnicd: busy-poll window %v: must be 0 (off) to %v", d, MaxBusyPoll)
	}
	dp := e.dataPlane()
	if dp == nil {
		if d == 0 {
			return nil
		}
		return errors.New("vnicd: busy polling needs the poll loop (EnablePolling)")
	}
	dp.busyPoll.Store(int64(d))
	return nil
}

// BusyPoll returns the busy-poll window in effect: SetBusyPoll's, or 0
// when the engine has no poll loop or GOMAXPROCS < 2.
func (e *Engine) BusyPoll() time.Duration {
	dp := e.dataPlane()
	if dp == nil || runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	return time.Duration(dp.busyPoll.Load())
}

// BusyPolls returns how many times the loop polled in its busy-poll window
// and found nothing (each such poll also yields the CPU once).
func (e *Engine) BusyPolls() uint64 {
	dp := e.dataPlane()
	if dp == nil {
		return 0
	}
	return dp.busyPolls.Load()
}

// RunDataPlane runs the data plane until ctx is done: the poll loop when
// EnablePolling succeeded, the HFI's own receive loop otherwise. As
// hfi.HFI.Run, it returns nil on a clean stop and closes the transport.
func (e *Engine) RunDataPlane(ctx context.Context) error {
	dp := e.dataPlane()
	if dp == nil {
		return e.hfi.Run(ctx)
	}
	defer e.hfi.Transport().Close()
	return dp.run(ctx)
}

// add puts a port's device (p.pd) in the loop.
func (dp *dataPlane) add(p *Port) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return ErrDataPlaneStopped
	}
	p.tx = newTxState(p.dev.BatchSize(), p.st.Load().maxFrame)
	p.txReady = true // frames may be queued already
	if err := dp.ctl(p, unix.EPOLL_CTL_ADD, unix.EPOLLIN); err != nil {
		return fmt.Errorf("vnicd: vport %d: epoll_ctl: %w", p.vport, err)
	}
	old := dp.ports.Load()
	n := &polledPorts{list: append(append([]*Port(nil), old.list...), p), byVPort: old.byVPort}
	n.byVPort[p.vport] = p
	dp.ports.Store(n)
	dp.kickLocked()
	return nil
}

// remove takes a port out of the loop before its device closes. The loop
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
		_ = dp.ctl(p, unix.EPOLL_CTL_DEL, 0)
	}
}

// ctl adds, changes (events) or deletes p's device in the loop's epoll set,
// tagged with its vport; dp.mu is held.
func (dp *dataPlane) ctl(p *Port, op int, events uint32) error {
	var err error
	cerr := p.pd.Control(func(fd uintptr) {
		err = unix.EpollCtl(dp.ep, op, int(fd), &unix.EpollEvent{Events: events, Fd: int32(p.vport)})
	})
	return errors.Join(err, cerr)
}

// isClosed reports whether the loop has stopped for good.
func (dp *dataPlane) isClosed() bool {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.closed
}

// kickLocked wakes the loop; dp.mu is held.
func (dp *dataPlane) kickLocked() {
	if !dp.closed {
		var one = [8]byte{1}
		_, _ = unix.Write(dp.wake, one[:])
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
	unix.Close(dp.ep)
	unix.Close(dp.wake)
}

// run is the loop. Each round reads one batch from every ready source: the
// transport (its datagrams go to their ports' TAPs, in hfi.ReceiveBatch)
// and each port's TAP (its frames go out wrapped). A source is ready when
// epoll said so or its last batch was full; when none is, the loop waits.
// The epoll set is level-triggered, so a source misjudged empty is seen
// again at once.
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

	dp.rawWait = runtime.GOMAXPROCS(0) >= 2
	s := dp.e.hfi.NewSender()
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
			full, err := dp.rx.Poll()
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
			if p.txReady && dp.txPoll(p, s) {
				busy = true
			}
		}
		if busy {
			continue
		}
		quiet := time.Since(lastBusy)
		var n int
		var err error
		if bp := time.Duration(dp.busyPoll.Load()); bp > 0 && quiet < bp && dp.rawWait {
			n, err = dp.poll(events)
		} else {
			n, err = dp.wait(events, quiet >= idleAfter)
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
			case pollTagWake:
				_, _ = unix.Read(dp.wake, drain[:])
			default:
				if p := ports.byVPort[uint8(ev.Fd)]; p != nil && ev.Fd >= 0 && ev.Fd < 256 {
					p.txReady = true
				}
			}
		}
	}
	return nil
}

// txPoll reads one batch from p's device and sends it; it reports whether
// the batch was full (more may be queued). A read error that is not the
// device closing is counted and the device is left alone for a while
// (epoll would report it again and again).
func (dp *dataPlane) txPoll(p *Port, s *hfi.Sender) bool {
	p.tx = p.txBuffers(p.tx)
	tx := p.tx
	n, err := p.pd.TryRead(tx.bufs, tx.sizes, encap.Headroom)
	if n > 0 {
		p.transmit(tx, n, s)
	}
	if err != nil && n == 0 {
		p.txReady = false
		if p.closing.Load() || isClosed(err) {
			return false
		}
		p.Counters.TxFifoErrors.Add(1)
		dp.pause(p)
		return false
	}
	p.txReady = n == len(tx.bufs)
	return p.txReady
}

// pause takes p's device out of the epoll set for readErrorBackoff.
func (dp *dataPlane) pause(p *Port) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return
	}
	_ = dp.ctl(p, unix.EPOLL_CTL_MOD, 0)
	time.AfterFunc(readErrorBackoff, func() {
		dp.mu.Lock()
		defer dp.mu.Unlock()
		if dp.closed || p.closing.Load() {
			return
		}
		_ = dp.ctl(p, unix.EPOLL_CTL_MOD, unix.EPOLLIN)
	})
}

// poll is one round of the busy-poll window: the loop's fds that are ready
// now, without waiting; when none is, the thread yields its CPU (a raw
// sched_yield: it keeps the loop's P) so that a thread the loop's last
// frame woke (an iperf3, a ping) runs at once on this CPU.
func (dp *dataPlane) poll(events []unix.EpollEvent) (int, error) {
	n, err := dp.rawEpollWait(events, 0)
	if n == 0 && err == nil {
		dp.busyPolls.Add(1)
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return n, err
}

// wait waits for the loop's fds. While traffic flows, with a P to spare
// (GOMAXPROCS >= 2), it waits in a raw epoll_wait, which keeps the loop's P.
// A wait through the runtime's system-call path gives the P back after a
// while, and taking it again on waking costs a thread switch and futex and
// nanosleep calls of the scheduler (measured, one run each: ping average
// 0.52 ms with that wait against 0.33 ms with the raw one; with a 5 ms
// limit on it, 22 more syscalls and 20 more context switches per ping).
// The runtime still stops the loop whenever it must: its preemption signal
// ends the wait with EINTR, and the wait ends after pollWaitMs in any case
// (and the loop yields, yieldEvery). An idle loop (nothing for idleAfter),
// or one with no P to spare, waits the ordinary way and without a time
// limit, so that an idle vnicd does not wake up every few milliseconds and
// the rest of vnicd can run.
func (dp *dataPlane) wait(events []unix.EpollEvent, idle bool) (int, error) {
	if idle || !dp.rawWait {
		return unix.EpollWait(dp.ep, events, -1)
	}
	return dp.rawEpollWait(events, pollWaitMs)
}

// rawEpollWait is epoll_wait for at most ms milliseconds as a raw system call,
// which keeps the loop's P (wait).
func (dp *dataPlane) rawEpollWait(events []unix.EpollEvent, ms int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(dp.ep), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
