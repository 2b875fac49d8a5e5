// Package taptest is an in-memory vnicd.Device: a pair of connected ends,
// where a frame written to one is read from the other, for engine tests
// that need no kernel, no root and no namespace.
//
// It behaves as the TAP does where an engine can tell: Read blocks for the
// first frame and batches the rest without blocking, honours offset and
// sizes, cuts a frame too long for its buffer to fit, and returns
// os.ErrClosed once its end is closed; Write copies each
// frame (the caller keeps its buffers), refuses runts and oversized frames
// with an error, and drops frames, counting them, when the reader's queue is
// full or its end closed, as a full TAP queue drops them. In steady state
// neither Read nor Write allocates: queued frames live in buffers that are
// recycled, at most Depth of them per direction.
package taptest

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/opavnic/opavnic/vnicd/tap"
)

// Defaults of Options.
const (
	DefaultDepth     = 256
	DefaultMaxFrame  = 65535
	DefaultBatchSize = 64
	minFrame         = 14 // an Ethernet header, as the kernel's TAP requires
)

// ErrFrameSize is Write's error for a frame shorter than an Ethernet header
// or longer than Options.MaxFrame (the TAP's EINVAL).
var ErrFrameSize = errors.New("taptest: frame size out of range")

// Options shape a Pair; zero fields take the defaults.
type Options struct {
	Names     [2]string // "" gives "fake0", "fake1"
	Depth     int       // frames queued per direction before writes drop
	MaxFrame  int       // the longest frame Write accepts
	BatchSize int       // the most frames one Read returns
}

// Device is one end of a Pair. It is safe for the Device contract's
// concurrency: one reader, any number of writers, Close from anywhere.
type Device struct {
	place atomic.Pointer[place] // name and namespace (MoveTo changes them)
	// Persist and Tag are SetPersist's last arguments.
	persist atomic.Bool
	tag     atomic.Pointer[string]
	// MoveErr, when set, is what MoveTo answers (and it moves nothing).
	MoveErr atomic.Pointer[error]
	batch   int
	max     int
	rx      *queue // frames for this end to read
	tx      *queue // the peer's rx

	closeOnce sync.Once
	closed    chan struct{}
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
	closed <-chan struct{} // the reading end's
}

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
	a = &Device{batch: o.BatchSize, max: o.MaxFrame, closed: make(chan struct{})}
	b = &Device{batch: o.BatchSize, max: o.MaxFrame, closed: make(chan struct{})}
	a.place.Store(&place{name: o.Names[0]})
	b.place.Store(&place{name: o.Names[1]})
	a.rx, b.rx = newQueue(o.Depth, a.closed), newQueue(o.Depth, b.closed)
	a.tx, b.tx = b.rx, a.rx
	return a, b
}

func newQueue(depth int, closed <-chan struct{}) *queue {
	return &queue{
		frames: make(chan []byte, depth),
		free:   make(chan []byte, depth),
		depth:  int32(depth),
		closed: closed,
	}
}

// place is where a Device's pretend netdev is.
type place struct{ name, netns string }

// Name implements vnicd.Device.
func (d *Device) Name() string { return d.place.Load().name }

// NetNS is the namespace MoveTo last named ("" at first).
func (d *Device) NetNS() string { return d.place.Load().netns }

// MoveTo records a move of the netdev (TAP.MoveTo): Name and NetNS answer
// the new place. Addresses are ignored. It fails with MoveErr when set.
func (d *Device) MoveTo(netns, name string, _ []netip.Prefix) error {
	if e := d.MoveErr.Load(); e != nil && *e != nil {
		return *e
	}
	if d.isClosed() {
		return os.ErrClosed
	}
	d.place.Store(&place{name: name, netns: netns})
	return nil
}

// SetPersist records TAP.SetPersist's arguments.
func (d *Device) SetPersist(on bool, tag string) error {
	d.persist.Store(on)
	d.tag.Store(&tag)
	return nil
}

// Persistent reports SetPersist's last on, and its tag.
func (d *Device) Persistent() (bool, string) {
	t := ""
	if p := d.tag.Load(); p != nil {
		t = *p
	}
	return d.persist.Load(), t
}

// BatchSize implements vnicd.Device.
func (d *Device) BatchSize() int { return d.batch }

// Drops reports how many frames written to this end's peer this end never
// got: its queue was full or it was closed.
func (d *Device) Drops() uint64 { return d.rx.drops.Load() }

// Queued reports how many frames wait for this end's Read.
func (d *Device) Queued() int { return len(d.rx.frames) }

// Close implements vnicd.Device: this end's Read and Write return
// os.ErrClosed from now on; frames written to it are dropped.
func (d *Device) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
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

// Write implements vnicd.Device.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	if d.isClosed() {
		return 0, os.ErrClosed
	}
	q := d.tx
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

// Read implements vnicd.Device.
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	limit := min(len(bufs), len(sizes), d.batch)
	if d.isClosed() {
		return 0, os.ErrClosed
	}
	if limit == 0 {
		return 0, nil
	}
	q := d.rx
	var f []byte
	select {
	case <-d.closed:
		return 0, os.ErrClosed
	case f = <-q.frames:
	}
	n := 0
	for {
		sizes[n] = copy(bufs[n][offset:], f)
		n++
		q.free <- f
		if n == limit {
			return n, nil
		}
		select {
		case f = <-q.frames:
		default:
			return n, nil
		}
	}
}
