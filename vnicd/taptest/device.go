// Package taptest is an in-memory tap.Netdev: a pair of connected ends,
// where a frame written to one is read from the other, for engine tests
// that need no kernel, no root and no namespace. One end is the port's
// netdev, the other the kernel's side of it, which the test holds.
//
// It behaves as the TAP does where an engine can tell. Frames: TryRead
// never waits, Read (for the test's end) waits for the first frame; both
// batch the rest, honour offset and sizes, cut a frame too long for its
// buffer to fit, and return os.ErrClosed once the end is closed. Control
// gives an eventfd that is readable while frames may be queued
// (internal/readiness), so the engine's epoll loop drives the fake as it
// drives a TAP. Write copies each frame (the caller keeps its buffers),
// refuses runts and oversized frames with an error, and drops frames,
// counting them, when the reader's queue is full or its end closed, as a
// full TAP queue drops them. In steady state neither reading nor writing
// allocates: queued frames live in buffers that are recycled, at most Depth
// of them per direction.
//
// Each end also has a netdev's settings and state (MAC, MTU, carrier,
// administrative state, multicast list, name and namespace, persistence),
// reported by Watch as a TAP's netlink watch reports them. The test plays
// the user of the netdev with SetUp, SetMcast, SetMTU, Delete and MoveAway,
// makes a move fail with MoveErr, and makes the settings calls as slow as a
// netlink call can be with HoldSettings.
package taptest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/opavnic/opavnic/internal/readiness"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Defaults of Options.
const (
	DefaultDepth     = 256
	DefaultMaxFrame  = 65535
	DefaultBatchSize = 64
	DefaultMTU       = 1500 // a new TAP's
	minFrame         = 14   // an Ethernet header, as the kernel's TAP requires
	minMTU, maxMTU   = 68, 65535
)

// ErrFrameSize is Write's error for a frame shorter than an Ethernet header
// or longer than Options.MaxFrame (the TAP's EINVAL).
var ErrFrameSize = errors.New("taptest: frame size out of range")

// ErrDeleted is the error of I/O on an end whose netdev was deleted
// (Delete), as a TAP's is EBADFD then.
var ErrDeleted = errors.New("taptest: the netdev was deleted")

// Options shape a Pair; zero fields take the defaults.
type Options struct {
	Names     [2]string // "" gives "fake0", "fake1"
	Depth     int       // frames queued per direction before writes drop
	MaxFrame  int       // the longest frame Write accepts
	BatchSize int       // the most frames one read returns
	MTU       int       // both netdevs' MTU at first
	MAC       [6]byte   // the first end's MAC at first
}

// Device is one end of a Pair. It is safe for the tap.Netdev contract's
// concurrency: one reader, any number of writers, settings and Close from
// anywhere.
type Device struct {
	// MoveErr, when set, is what MoveTo answers (and it moves nothing);
	// FollowErr likewise for Follow.
	MoveErr   atomic.Pointer[error]
	FollowErr atomic.Pointer[error]

	batch int
	max   int
	rx    *queue // frames for this end to read
	tx    *queue // the peer's rx

	closeOnce sync.Once
	closed    chan struct{}
	deleted   atomic.Bool

	mu       sync.Mutex // the netdev's state below
	st       tap.LinkEvent
	netns    string
	carrier  bool
	mcast    [][6]byte
	persist  bool
	tag      string
	movedTo  *place // where MoveAway put the netdev, until Follow
	watchers []chan tap.LinkEvent
	gate     <-chan struct{} // HoldSettings
}

var _ tap.Netdev = (*Device)(nil)

// queue carries frames one way. frames and free each have room for depth
// buffers and at most depth buffers exist, so sends on them never block.
type queue struct {
	frames chan []byte // written, not yet read
	free   chan []byte // read, ready for reuse
	made   atomic.Int32
	depth  int32
	drops  atomic.Uint64
	closed <-chan struct{}   // the reading end's
	ready  *readiness.Signal // the reading end's Control fd
}

// place is a netdev's name and namespace.
type place struct{ name, netns string }

// Pair returns two connected ends.
func Pair(o Options) (a, b *Device) {
	if o.Names[0] == "" {
		o.Names[0] = "fake0"
	}
	if o.Names[1] == "" {
		o.Names[1] = "fake1"
	}
	if o.Depth <= 0 {
		o.Depth = DefaultDepth
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MTU <= 0 {
		o.MTU = DefaultMTU
	}
	newEnd := func(name string, mac [6]byte) *Device {
		d := &Device{batch: o.BatchSize, max: o.MaxFrame, closed: make(chan struct{}), carrier: true}
		d.st = tap.LinkEvent{Up: true, MAC: mac, MTU: o.MTU, Name: name}
		d.rx = &queue{
			frames: make(chan []byte, o.Depth),
			free:   make(chan []byte, o.Depth),
			depth:  int32(o.Depth),
			closed: d.closed,
			ready:  readiness.Must(),
		}
		return d
	}
	a, b = newEnd(o.Names[0], o.MAC), newEnd(o.Names[1], [6]byte{})
	a.tx, b.tx = b.rx, a.rx
	return a, b
}

// BatchSize implements tap.Netdev.
func (d *Device) BatchSize() int { return d.batch }

// Queues implements tap.Netdev: a fake has one queue.
func (d *Device) Queues() int { return 1 }

// Queue implements tap.Netdev: queue 0 is the Device.
func (d *Device) Queue(i int) tap.Poller {
	if i != 0 {
		panic(fmt.Sprintf("taptest: queue %d of a single-queue device", i))
	}
	return d
}

// Drops reports how many frames written to this end's peer this end never
// got: its queue was full or it was closed.
func (d *Device) Drops() uint64 { return d.rx.drops.Load() }

// Queued reports how many frames wait for this end's read.
func (d *Device) Queued() int { return len(d.rx.frames) }

// Close implements tap.Netdev: this end's reads and writes return
// os.ErrClosed from now on, frames written to it are dropped, and its
// watches end.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		close(d.closed)
		d.rx.ready.Close()
		d.mu.Lock()
		d.endWatchesLocked()
		d.mu.Unlock()
	})
	return nil
}

func (d *Device) isClosed() bool {
	select {
	case <-d.closed:
		return true
	default:
		return false
	}
}

// ioErr is the error of I/O on this end, or nil when it may go on.
func (d *Device) ioErr() error {
	if d.isClosed() {
		return os.ErrClosed
	}
	if d.deleted.Load() {
		return ErrDeleted
	}
	return nil
}

// Control implements tap.Poller.
func (d *Device) Control(f func(fd uintptr)) error {
	if d.isClosed() {
		return os.ErrClosed
	}
	return d.rx.ready.Control(f)
}

// Write implements tap.Poller.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	if err := d.ioErr(); err != nil {
		return 0, err
	}
	q := d.tx
	queued := false
	defer func() {
		if queued {
			q.ready.Notify()
		}
	}()
	for i, b := range bufs {
		f := b[offset:]
		if len(f) < minFrame || len(f) > d.max {
			return i, ErrFrameSize
		}
		select {
		case <-q.closed:
			q.drops.Add(1)
			continue
		default:
		}
		buf, ok := q.get()
		if !ok {
			q.drops.Add(1)
			continue
		}
		q.frames <- append(buf[:0], f...)
		queued = true
	}
	return len(bufs), nil
}

// get returns a free buffer, making one while fewer than depth exist.
func (q *queue) get() ([]byte, bool) {
	select {
	case b := <-q.free:
		return b, true
	default:
	}
	if q.made.Add(1) <= q.depth {
		return nil, true // append makes it, sized to the frame
	}
	q.made.Add(-1)
	return nil, false
}

// TryRead implements tap.Poller.
func (d *Device) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	if err := d.ioErr(); err != nil {
		return 0, err
	}
	limit := min(len(bufs), len(sizes), d.batch)
	if limit == 0 {
		return 0, nil
	}
	d.rx.ready.Clear() // before taking frames: a Write after this notifies again
	select {
	case f := <-d.rx.frames:
		return d.rx.take(f, bufs, sizes, offset, limit), nil
	default:
		return 0, nil
	}
}

// Read is TryRead that waits for the first frame, for the test's end of a
// pair.
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if err := d.ioErr(); err != nil {
		return 0, err
	}
	limit := min(len(bufs), len(sizes), d.batch)
	if limit == 0 {
		return 0, nil
	}
	select {
	case <-d.closed:
		return 0, os.ErrClosed
	case f := <-d.rx.frames:
		return d.rx.take(f, bufs, sizes, offset, limit), nil
	}
}

// take copies f, and then up to limit-1 more frames that are queued, into
// bufs, and returns how many.
func (q *queue) take(f []byte, bufs [][]byte, sizes []int, offset, limit int) int {
	n := 0
	for {
		sizes[n] = copy(bufs[n][offset:], f)
		n++
		q.free <- f
		if n == limit {
			return n
		}
		select {
		case f = <-q.frames:
		default:
			return n
		}
	}
}

// HoldSettings makes every settings call (SetMAC, SetMTU, SetCarrier,
// IsUp, McastMACs, MoveTo, Follow, SetPersist) wait until gate is closed,
// as a netlink call can take tens of milliseconds; nil lets them through.
func (d *Device) HoldSettings(gate <-chan struct{}) {
	d.mu.Lock()
	d.gate = gate
	d.mu.Unlock()
}

// settings waits for HoldSettings's gate, then takes d.mu; it fails once
// the end is closed.
func (d *Device) settings(what string) error {
	d.mu.Lock()
	gate := d.gate
	d.mu.Unlock()
	if gate != nil {
		<-gate
	}
	d.mu.Lock()
	if d.isClosed() {
		d.mu.Unlock()
		return fmt.Errorf("taptest: %s: %s: %w", d.Name(), what, os.ErrClosed)
	}
	return nil
}

// Name implements tap.Netdev.
func (d *Device) Name() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Name
}

// NetNS implements tap.Netdev: the namespace MoveTo or Follow last put the
// netdev in ("" at first).
func (d *Device) NetNS() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.netns
}

// SetMAC implements tap.Netdev.
func (d *Device) SetMAC(mac [6]byte) error {
	if err := d.settings("set MAC"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	if mac == ([6]byte{}) || mac[0]&1 != 0 {
		return fmt.Errorf("taptest: %s: set MAC %x: not a unicast address", d.st.Name, mac)
	}
	d.st.MAC = mac
	d.announceLocked()
	return nil
}

// SetMTU implements tap.Netdev; the test calls it too, as a user who sets
// the netdev's MTU.
func (d *Device) SetMTU(mtu int) error {
	if err := d.settings("set MTU"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	if mtu < minMTU || mtu > maxMTU {
		return fmt.Errorf("taptest: %s: MTU %d out of range [%d, %d]", d.st.Name, mtu, minMTU, maxMTU)
	}
	d.st.MTU = mtu
	d.announceLocked()
	return nil
}

// SetCarrier implements tap.Netdev.
func (d *Device) SetCarrier(on bool) error {
	if err := d.settings("set carrier"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	d.carrier = on
	return nil
}

// Carrier reports SetCarrier's last value (on at first).
func (d *Device) Carrier() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.carrier
}

// MTU returns the netdev's MTU.
func (d *Device) MTU() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.MTU
}

// MAC returns the netdev's MAC.
func (d *Device) MAC() [6]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.MAC
}

// IsUp implements tap.Netdev.
func (d *Device) IsUp() (bool, error) {
	if err := d.settings("read link"); err != nil {
		return false, err
	}
	defer d.mu.Unlock()
	return d.st.Up, nil
}

// SetUp sets the netdev's administrative state, as ip link set up/down.
func (d *Device) SetUp(up bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Up = up
	d.announceLocked()
}

// McastMACs implements tap.Netdev.
func (d *Device) McastMACs() ([][6]byte, error) {
	if err := d.settings("read multicast list"); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	return slices.Clone(d.mcast), nil
}

// SetMcast replaces the netdev's multicast list, as a user joining and
// leaving groups.
func (d *Device) SetMcast(macs [][6]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mcast = slices.Clone(macs)
}

// OffloadCounters implements tap.Netdev: the fake has no offloads.
func (d *Device) OffloadCounters() []tap.Counter { return nil }

// SetPersist implements tap.Netdev by recording its arguments.
func (d *Device) SetPersist(on bool, tag string) error {
	if err := d.settings("set persist"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	d.persist, d.tag = on, tag
	return nil
}

// Persistent reports SetPersist's last on, and its tag.
func (d *Device) Persistent() (bool, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.persist, d.tag
}

// MoveTo implements tap.Netdev: Name and NetNS answer the new place, the
// netdev is up, and its watches end. Addresses are ignored. It fails with
// MoveErr when set.
func (d *Device) MoveTo(netns, name string, _ []netip.Prefix) error {
	if e := d.MoveErr.Load(); e != nil && *e != nil {
		return *e
	}
	if err := d.settings("move"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	d.st.Name, d.netns, d.st.Up, d.movedTo = name, netns, true, nil
	d.endWatchesLocked()
	return nil
}

// MoveAway moves the netdev to another namespace from outside vnicd (ip
// link set DEV netns NS name NAME): its watches report Moved and end, and
// Follow finds it there. Frames go on flowing, as through a TAP's fd.
func (d *Device) MoveAway(netns, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.movedTo = &place{name: name, netns: netns}
	ev := d.st
	ev.Moved = true
	d.sendLocked(ev)
	d.endWatchesLocked()
}

// Follow implements tap.Netdev: it takes the place MoveAway put the netdev
// in. It fails with FollowErr when set, and when the netdev was not moved.
func (d *Device) Follow() error {
	if e := d.FollowErr.Load(); e != nil && *e != nil {
		return *e
	}
	if err := d.settings("follow"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	if d.movedTo == nil {
		return fmt.Errorf("taptest: %s: follow: the netdev was not moved", d.st.Name)
	}
	d.st.Name, d.netns, d.movedTo = d.movedTo.name, d.movedTo.netns, nil
	return nil
}

// Delete deletes the netdev from outside vnicd (ip link del): its watches
// report Deleted and end, and reads and writes fail with ErrDeleted.
func (d *Device) Delete() {
	d.deleted.Store(true)
	d.rx.ready.Notify() // as a TAP's fd turns readable (EPOLLERR) then
	d.mu.Lock()
	defer d.mu.Unlock()
	ev := d.st
	ev.Deleted = true
	d.sendLocked(ev)
	d.endWatchesLocked()
}

// Watch implements tap.Netdev.
func (d *Device) Watch(ctx context.Context) (<-chan tap.LinkEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.isClosed() {
		return nil, fmt.Errorf("taptest: %s: watch: %w", d.st.Name, os.ErrClosed)
	}
	if d.deleted.Load() {
		return nil, fmt.Errorf("taptest: %s: watch: %w", d.st.Name, ErrDeleted)
	}
	ch := make(chan tap.LinkEvent, 1)
	ch <- d.st
	d.watchers = append(d.watchers, ch)
	context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if i := slices.Index(d.watchers, ch); i >= 0 {
			d.watchers = slices.Delete(d.watchers, i, i+1)
			close(ch)
		}
	})
	return ch, nil
}

// announceLocked tells the watches the netdev's state; d.mu is held.
func (d *Device) announceLocked() { d.sendLocked(d.st) }

// sendLocked gives each watch ev, in place of an event it has not read
// yet (events carry state); d.mu is held, so no other send races.
func (d *Device) sendLocked(ev tap.LinkEvent) {
	for _, ch := range d.watchers {
		select {
		case <-ch:
		default:
		}
		ch <- ev
	}
}

// endWatchesLocked closes every watch; d.mu is held.
func (d *Device) endWatchesLocked() {
	for _, ch := range d.watchers {
		close(ch)
	}
	d.watchers = nil
}
