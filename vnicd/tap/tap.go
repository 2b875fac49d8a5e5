//go:build linux

package tap

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/fdwait"
	"github.com/opavnic/opavnic/vnicd/internal/nlutil"
)

// DefaultName is the name pattern of a TAP whose config names none: the
// kernel replaces %d with the lowest free number (docs/design.md, names).
const DefaultName = "vnic%d"

// BatchSize is the largest number of frames one TAP read returns, as the
// UDP batch (hfi.DefaultBatchSize): nearly three 64 KB super-frames of
// 1428-byte frames, sent in one sendmmsg.
const BatchSize = 128

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/var/run/netns"

// TxQueueLen is the length of a TAP's kernel transmit queue (frames the
// stack has sent and vnicd has not yet read). The kernel's default, 1000, is
// less than one wake-up's worth of a TCP burst at 10 Gbit/s: the overflow is
// dropped (tx_dropped) and becomes a TCP retransmit.
const TxQueueLen = 10000

// netlinkTimeout bounds every netlink request a TAP makes.
const netlinkTimeout = 5 * time.Second

// ErrBadConfig is wrapped by every error Open returns for a config it
// rejects before touching the kernel.
var ErrBadConfig = errors.New("vnicd: bad TAP config")

// Config is how Open makes a TAP netdev.
type Config struct {
	// Name of the netdev, at most 15 bytes; a %d in it becomes the lowest
	// free number. "" means DefaultName. The name must be free in the
	// target namespace: Open never attaches to an existing netdev.
	Name string
	// MAC is the netdev's address; the zero MAC keeps the random one the
	// kernel chose.
	MAC [6]byte
	// MTU of the netdev; 0 keeps the kernel's default (1500).
	MTU int
	// NetNS is the network namespace the netdev is placed in: "" for the
	// caller's own, a name under /var/run/netns (as `ip netns` makes),
	// "pid:N" (the namespace of process N), or an absolute path to a namespace file (/proc/PID/ns/net, a bind mount).
	NetNS string
	// Addresses are added to the netdev once it is up; IPv6 ones without
	// duplicate address detection.
	Addresses []netip.Prefix
	// Queues is how many queues (fds) the TAP has: more than one makes a
	// multiqueue TAP (IFF_MULTI_QUEUE), whose kernel side steers each flow
	// to one queue. 0 means 1; at most MaxQueues.
	Queues int
}

// MaxQueues bounds Config.Queues.
const MaxQueues = 16

// TAP is a Linux TAP netdev (IFF_TAP, IFF_NO_PI): the Netdev of a VNIC
// port. Its fds are non-blocking and kept out of the Go runtime's poller:
// the engine's poll loop waits for them in its own epoll set (Control,
// TryRead). A blocking Read or Write waits in internal/fdwait, which sees
// Close within fdwait.Round.
//
// Lifetime: the netdev lives as long as the fd. The TAP is not persistent
// and its fd is close-on-exec and never shared, so closing it makes the
// kernel delete the netdev, in whatever namespace it then is. A TAP holds
// no reference to its netdev's namespace (tapns.go): when that namespace is
// destroyed, its netdev goes with it, and a Watch reports it Deleted.
//
// If the netdev is deleted from outside (ip link del), Read and Write fail
// with EBADFD and a watcher reports Deleted; the TAP must still be closed.
type TAP struct {
	f      *os.File
	rc     syscall.RawConn
	place  atomic.Pointer[tapPlace] // name and namespace; changed only by MoveTo
	index  int                      // in the TAP's namespace; changed only by MoveTo, under mu
	closed atomic.Bool
	// persist is TUNSETPERSIST's state: a persistent TAP outlives its fd,
	// so Close leaves its netdev where it is (tapmove.go).
	persist atomic.Bool

	// queues are the TAP's fds, each a queue of its netdev: the first is
	// f, the others (a multiqueue TAP, Config.Queues) are read and
	// written through Queue. Fixed once the TAP is made.
	queues []*Queue

	// OffloadDrops counts frames from the kernel that could not be finished
	// (segmented or checksummed) and were dropped.
	OffloadDrops atomic.Uint64
	// RxCoalesced counts frames written to the kernel as part of a
	// coalesced super-frame.
	RxCoalesced atomic.Uint64
	// TxSuperFrames counts TCP super-frames (TSO) read from the kernel, and
	// TxSegments the frames they were cut into; TxUSOSuperFrames and
	// TxUSOSegments the same for UDP super-frames (USO).
	TxSuperFrames    atomic.Uint64
	TxSegments       atomic.Uint64
	TxUSOSuperFrames atomic.Uint64
	TxUSOSegments    atomic.Uint64
	noGRO            atomic.Bool // the kernel refused a super-frame
	noUDPGRO         atomic.Bool // the kernel refused a UDP super-frame

	// mu serializes the netlink side: Close, MoveTo, Follow, Watch and
	// the settings. It holds no namespace between them (tapns.go).
	mu       sync.Mutex
	done     chan struct{} // closed by Close: stops watchers
	moved    chan struct{} // closed by MoveTo (and replaced): stops watchers
	watchers sync.WaitGroup
}

// tapPlace is where a TAP's netdev is: its name and its namespace as
// Config.NetNS names it ("" for the namespace it was made in).
type tapPlace struct{ name, netns string }

var _ Netdev = (*TAP)(nil)

// Open creates a TAP netdev as cfg says: it is created in the caller's
// namespace (under a temporary name when it is to move, so that its name
// never clashes there), moved into cfg.NetNS and renamed there, given its
// MAC and MTU, set up, and given its addresses, every step through a
// netlink socket opened in the namespace it acts on. If a step fails the
// netdev is deleted and the error says which step.
//
// "The caller's namespace" is that of the calling thread, so a caller that
// has locked its goroutine to a thread in another namespace gets its TAP
// there.
func Open(cfg Config) (*TAP, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	move := cfg.NetNS != ""

	// Keep one thread from reading the current namespace to opening the fd,
	// so that both see the same namespace. This thread's namespace is never
	// changed: sockets for other namespaces are made by nlutil.Do.
	runtime.LockOSThread()
	here, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("vnicd: open TAP %s: current netns: %w", name, err)
	}
	createName := name
	if move {
		createName = fmt.Sprintf("vnictmp%08x", rand.Uint32())
	}
	files, created, err := createTAP(createName, true, cfg.Queues)
	runtime.UnlockOSThread()
	if err != nil {
		here.Close()
		return nil, fmt.Errorf("vnicd: open TAP %s: create: %w", name, err)
	}

	t, err := tapFromFiles(files, created)
	if err != nil {
		here.Close()
		return nil, fmt.Errorf("vnicd: open TAP %s: %w", name, err)
	}
	// h is a netlink handle where the netdev is, and nsh that namespace;
	// both are released on the way out: the TAP keeps neither.
	var h *netlink.Handle
	nsh := here
	defer func() {
		if h != nil {
			h.Close()
		}
		nsh.Close()
	}()
	fail := func(step string, err error) (*TAP, error) {
		if cerr := t.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", cerr))
		}
		return nil, fmt.Errorf("vnicd: open TAP %s: %s: %w", name, step, err)
	}

	// From here on t.index names the netdev where it is, so that Close
	// (the rollback) finds it whichever step failed.
	if h, err = nlutil.Handle(here, netlinkTimeout); err != nil {
		return fail("netlink", err)
	}
	link, err := h.LinkByName(created)
	if err != nil {
		return fail("find new link", err)
	}
	t.index = link.Attrs().Index

	if move {
		target, err := openNS(cfg.NetNS)
		if err != nil {
			return fail("open netns", err)
		}
		ht, err := nlutil.Handle(target, netlinkTimeout)
		if err != nil {
			target.Close()
			return fail("netlink in netns", err)
		}
		if err := h.LinkSetNsFd(link, int(target)); err != nil {
			ht.Close()
			target.Close()
			return fail("move to netns "+cfg.NetNS, err)
		}
		h.Close()
		nsh.Close()
		h, nsh, t.index = ht, target, 0 // the index may change in a new namespace
		if link, err = h.LinkByName(created); err != nil {
			return fail("find moved link", err)
		}
		t.index = link.Attrs().Index
		if err := h.LinkSetName(link, name); err != nil {
			return fail("rename to "+name, err)
		}
		if link, err = h.LinkByIndex(t.index); err != nil {
			return fail("find renamed link", err)
		}
		t.place.Store(&tapPlace{name: link.Attrs().Name, netns: cfg.NetNS})
	}

	if cfg.MAC != ([6]byte{}) {
		if err := h.LinkSetHardwareAddr(link, cfg.MAC[:]); err != nil {
			return fail("set MAC", err)
		}
	}
	if cfg.MTU != 0 {
		if err := h.LinkSetMTU(link, cfg.MTU); err != nil {
			return fail(fmt.Sprintf("set MTU %d", cfg.MTU), err)
		}
	}
	if err := h.LinkSetTxQLen(link, TxQueueLen); err != nil {
		return fail("set txqueuelen", err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fail("set up", err)
	}
	for _, p := range cfg.Addresses {
		if err := h.AddrAdd(link, nlutil.Addr(p)); err != nil {
			return fail("add address "+p.String(), err)
		}
	}
	return t, nil
}

// newTAP wraps a TAP fd; the netdev is name.
func newTAP(f *os.File, rc syscall.RawConn, name string) *TAP {
	t := &TAP{f: f, rc: rc, done: make(chan struct{}), moved: make(chan struct{})}
	t.place.Store(&tapPlace{name: name})
	t.queues = []*Queue{newTAPQueue(t, f, rc)}
	return t
}

// tapFromFiles wraps the fds createTAP opened, a queue each, the first
// being the TAP's own. On an error it closes them all (a TAP that is not
// persistent goes with them).
func tapFromFiles(files []*os.File, name string) (*TAP, error) {
	rcs := make([]syscall.RawConn, len(files))
	for i, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		rcs[i] = rc
	}
	t := newTAP(files[0], rcs[0], name)
	for i, f := range files[1:] {
		t.queues = append(t.queues, newTAPQueue(t, f, rcs[i+1]))
	}
	return t, nil
}

func newTAPQueue(t *TAP, f *os.File, rc syscall.RawConn) *Queue {
	q := &Queue{t: t, f: f, rc: rc, vbuf: make([]byte, vnetHdrLen+maxSuperFrameLen)}
	q.readFn = q.readBatch
	return q
}

// Queue is one queue of a TAP's netdev: an fd of its own, with the
// frames the kernel steers to it (a flow's frames to one queue) and its own
// read state. A queue is read by one goroutine at a time, as a TAP is, and
// may be written concurrently; a TAP's Read, TryRead, Control and Write
// are its first queue's. A TAP's counters and settings are the queues'.
type Queue struct {
	t  *TAP
	f  *os.File
	rc syscall.RawConn

	// Read state, owned by the one goroutine in Read.
	rbufs  [][]byte
	rsizes []int
	roff   int
	rn     int
	rerr   error
	readFn func(fd uintptr) bool
	vbuf   []byte       // one read(2): virtio_net_hdr and a frame of up to 64 KB
	try    bool         // this read must not wait: EAGAIN ends the batch, even empty
	seg    gsoSegmenter // the super-frame being cut, across Reads
}

// Queues returns how many queues the TAP has (Config.Queues, or fewer
// for a persistent TAP made single-queue, Attach).
func (t *TAP) Queues() int { return len(t.queues) }

// Queue returns queue i (a *Queue), 0 <= i < Queues().
func (t *TAP) Queue(i int) Poller { return t.queues[i] }

// The TAP is a Netdev, and each of its queues a Poller.
var (
	_ Netdev = (*TAP)(nil)
	_ Poller = (*Queue)(nil)
)

func (c *Config) validate() error {
	if err := validIfName(c.Name); c.Name != "" && err != nil {
		return err
	}
	if c.MTU < 0 {
		return fmt.Errorf("%w: MTU %d", ErrBadConfig, c.MTU)
	}
	if c.Queues < 0 || c.Queues > MaxQueues {
		return fmt.Errorf("%w: %d queues: 0 to %d", ErrBadConfig, c.Queues, MaxQueues)
	}
	if c.NetNS != "" && strings.ContainsRune(c.NetNS, '/') && !filepath.IsAbs(c.NetNS) {
		return fmt.Errorf("%w: netns %q is neither a name nor an absolute path", ErrBadConfig, c.NetNS)
	}
	for _, p := range c.Addresses {
		if !p.IsValid() {
			return fmt.Errorf("%w: invalid address %v", ErrBadConfig, p)
		}
	}
	return nil
}

// validIfName applies the kernel's rules for netdev names (dev_valid_name).
func validIfName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("%w: name %q", ErrBadConfig, name)
	case len(name) >= unix.IFNAMSIZ:
		return fmt.Errorf("%w: name %q longer than %d bytes", ErrBadConfig, name, unix.IFNAMSIZ-1)
	case strings.ContainsAny(name, "/: \t\n\v\f\r"):
		return fmt.Errorf("%w: name %q has '/', ':' or a space", ErrBadConfig, name)
	}
	return nil
}

// createTAP makes a TAP netdev in the calling thread's namespace and returns
// its fds (non-blocking, close-on-exec, not in the runtime's poller), one per
// queue, and its name. More than one queue makes a multiqueue TAP
// (IFF_MULTI_QUEUE). Every frame read or written carries a virtio_net_hdr
// (IFF_VNET_HDR); the TAP takes TCP super-frames and partial checksums
// (offload.go) when the kernel allows it, and plain frames otherwise.
// With excl, IFF_TUN_EXCL makes a name clash an error (EBUSY) where the
// kernel would otherwise attach to an existing persistent TAP of that name;
// without it, that attaching is the point (Attach). A persistent TAP
// made single-queue or multiqueue is attached as it was made (the kernel
// refuses the other kind, EINVAL), with one fd if single-queue.
func createTAP(name string, excl bool, queues int) ([]*os.File, string, error) {
	mq := queues > 1
	f, got, err := openTUN(name, excl, mq)
	if err != nil && !excl && errors.Is(err, unix.EINVAL) {
		mq = !mq // a persistent TAP of the other kind
		f, got, err = openTUN(name, excl, mq)
	}
	if err != nil {
		return nil, "", err
	}
	files := []*os.File{f}
	for len(files) < queues && mq {
		// The next queues attach to the netdev the first made, by name;
		// without IFF_TUN_EXCL, which would refuse it as existing.
		f, _, err := openTUN(got, false, true)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, "", fmt.Errorf("queue %d: %w", len(files), err)
		}
		files = append(files, f)
	}
	return files, got, nil
}

// openTUN opens one fd of a TAP (createTAP).
func openTUN(name string, excl, mq bool) (*os.File, string, error) {
	// Opened blocking, so that os.NewFile leaves it out of the runtime's
	// poller (internal/fdwait says why), then made non-blocking.
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
		if excl {
			flags |= unix.IFF_TUN_EXCL
		}
		if mq {
			flags |= unix.IFF_MULTI_QUEUE
		}
		ifr.SetUint16(flags)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("TUNSETIFF: %w", err)
	}
	// USO (UDP super-frames) came in 6.2 and older kernels refuse the
	// whole request, so without it they cut UDP super-frames themselves. A
	// kernel that refuses the rest too hands the TAP finished frames.
	const tso = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	if unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tso|unix.TUN_F_USO4|unix.TUN_F_USO6) != nil {
		_ = unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tso)
	}
	f := os.NewFile(uintptr(fd), "/dev/net/tun")
	if err := unix.SetNonblock(fd, true); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("set non-blocking: %w", err)
	}
	return f, ifr.Name(), nil
}

// openNS opens a namespace named as Config.NetNS names it.
func openNS(spec string) (netns.NsHandle, error) {
	return netns.GetFromPath(NetNSPath(spec))
}

// Name returns the netdev's name as the kernel made it (a %d filled in).
func (t *TAP) Name() string { return t.place.Load().name }

// NetNS returns the namespace the netdev is in, as Config.NetNS or
// MoveTo named it ("" for the one it was made in).
func (t *TAP) NetNS() string { return t.place.Load().netns }

// Index returns the netdev's ifindex in its namespace.
func (t *TAP) Index() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.index
}

// BatchSize returns BatchSize.
func (t *TAP) BatchSize() int { return BatchSize }

// Read reads a batch of frames, waiting for the first (TryRead does not wait). One frame from the kernel is one read(2); a batch
// is the frames the kernel has queued when the first arrives, so a batch costs
// one wake-up. A TCP super-frame comes out as the frames it is cut into, in
// this Read and, when they do not all fit, the next ones; it is dropped
// (OffloadDrops) if its segments are longer than a buffer takes with one
// spare byte and encap.Tailroom after the frame, as a port's buffers are
// made (txBufLen). The kernel cuts a frame too long for its buffer to the
// buffer's length.
func (t *TAP) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	return t.queues[0].Read(bufs, sizes, offset)
}

// TryRead is Read that never waits: it returns 0 and no error when no frame
// is queued. A poll loop that waits for the fd itself (Control) uses it.
func (t *TAP) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	return t.queues[0].TryRead(bufs, sizes, offset)
}

// Control runs f with the TAP's file descriptor, which stays open while f
// runs.
func (t *TAP) Control(f func(fd uintptr)) error { return t.queues[0].Control(f) }

// Read is TAP.Read on the queue.
func (q *Queue) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	q.try = false
	return q.read(bufs, sizes, offset)
}

// TryRead is TAP.TryRead on the queue.
func (q *Queue) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	q.try = true
	return q.read(bufs, sizes, offset)
}

// Control runs f with the queue's file descriptor, which stays open while
// f runs.
func (q *Queue) Control(f func(fd uintptr)) error {
	if err := q.rc.Control(f); err != nil {
		return q.t.ioErr(err)
	}
	return nil
}

// BatchSize returns BatchSize.
func (q *Queue) BatchSize() int { return BatchSize }

func (q *Queue) read(bufs [][]byte, sizes []int, offset int) (int, error) {
	q.rbufs, q.rsizes, q.roff, q.rn, q.rerr = bufs, sizes, offset, 0, nil
	var err error
	if q.drainSegments(); q.rn < min(len(bufs), len(sizes), BatchSize) {
		err = q.rc.Read(q.readFn)
	}
	n, rerr := q.rn, q.rerr
	q.rbufs, q.rsizes, q.rerr = nil, nil, nil
	switch {
	case n > 0:
		return n, nil
	case err != nil:
		return 0, q.t.ioErr(err)
	case rerr != nil:
		return 0, q.t.ioErr(rerr) // a netdev deleted under Close: EBADFD
	default:
		return 0, nil
	}
}

// drainSegments writes segments of the current super-frame into the batch.
func (q *Queue) drainSegments() {
	limit := min(len(q.rbufs), len(q.rsizes), BatchSize)
	for !q.seg.done() && q.rn < limit {
		dst := q.rbufs[q.rn][q.roff:]
		if len(dst) < q.seg.hdrLen+q.seg.mss {
			// A caller's buffer too short for a segment: drop the rest.
			q.t.OffloadDrops.Add(1)
			q.seg.frame = nil
			return
		}
		q.rsizes[q.rn] = q.seg.next(dst)
		q.rn++
	}
}

// readBatch runs under the poller's read lock: it reads frames until the
// batch is full or the queue empty, and asks the poller to wait (returns
// false) only while it has read nothing.
func (q *Queue) readBatch(fd uintptr) bool {
	limit := min(len(q.rbufs), len(q.rsizes), BatchSize)
	for q.rn < limit {
		m, err := unix.Read(int(fd), q.vbuf)
		switch err {
		case nil:
			q.frameIn(q.vbuf[:m])
		case unix.EINTR:
		case unix.EAGAIN:
			if q.rn > 0 || q.try {
				return true
			}
			if !fdwait.Wait(fd, unix.POLLIN, &q.t.closed) {
				q.rerr = os.ErrClosed
				return true
			}
		default:
			q.rerr = err
			return true
		}
	}
	return true
}

// frameIn finishes one frame read with its virtio_net_hdr: a plain frame is
// copied into the batch (its checksum completed if partial), a super-frame
// is cut into it.
func (q *Queue) frameIn(b []byte) {
	t := q.t
	if len(b) < vnetHdrLen {
		t.OffloadDrops.Add(1)
		return
	}
	h := parseVnetHdr(b)
	frame := b[vnetHdrLen:]
	if h.gsoType != vnetGSONone {
		// A segment may be as long as a frame the caller's buffers take
		// (readBatch has room for one more): the port's eth_mtu + 18 when
		// they were made. Not the netdev's MTU when the TAP was made: the
		// admin may raise that later, with eth_mtu.
		maxSeg := len(q.rbufs[q.rn]) - q.roff - 1 - encap.Tailroom
		if err := q.seg.start(frame, h, maxSeg); err != nil {
			t.OffloadDrops.Add(1)
			return
		}
		if q.seg.udp {
			t.TxUSOSuperFrames.Add(1)
			t.TxUSOSegments.Add(uint64(q.seg.count()))
		} else {
			t.TxSuperFrames.Add(1)
			t.TxSegments.Add(uint64(q.seg.count()))
		}
		q.drainSegments()
		return
	}
	if h.flags&vnetFNeedsCsum != 0 && finishCsum(frame, h) != nil {
		t.OffloadDrops.Add(1)
		return
	}
	q.rsizes[q.rn] = copy(q.rbufs[q.rn][q.roff:], frame)
	q.rn++
}

// OffloadCounters returns the TAP's offload counters, as vnicctl and the
// metrics show them after a port's kernel counters.
func (t *TAP) OffloadCounters() []Counter {
	return []Counter{
		{Name: "tx_tso_superframes", Value: t.TxSuperFrames.Load()},
		{Name: "tx_tso_segments", Value: t.TxSegments.Load()},
		{Name: "tx_uso_superframes", Value: t.TxUSOSuperFrames.Load()},
		{Name: "tx_uso_segments", Value: t.TxUSOSegments.Load()},
		{Name: "rx_coalesced", Value: t.RxCoalesced.Load()},
		{Name: "offload_drops", Value: t.OffloadDrops.Load()},
	}
}

// zeroVnetHdr is the virtio_net_hdr of a finished frame: no GSO, checksums
// complete. The kernel only reads it.
var zeroVnetHdr [vnetHdrLen]byte

// Write implements Poller: one writev(2) per frame, behind a zero
// virtio_net_hdr, except that runs of consecutive TCP segments of one flow
// are coalesced into one super-frame (gro.go) unless the kernel refused one.
// The frames' bytes are never changed. A refused super-frame's frames are
// written one by one; if the kernel takes them so, it refused that kind of
// super-frame, and coalescing of that kind stops for the TAP.
func (t *TAP) Write(bufs [][]byte, offset int) (int, error) { return t.queues[0].Write(bufs, offset) }

// Write is TAP.Write on the queue: the frames go into the kernel as
// received on it.
func (q *Queue) Write(bufs [][]byte, offset int) (int, error) {
	t := q.t
	w := tapWrites.Get().(*tapWrite)
	defer tapWrites.Put(w)
	gro, udp := !t.noGRO.Load(), !t.noUDPGRO.Load()
	// A refused run's frames go one by one: plain of them are left, and
	// refused is the run's GSO type.
	plain, refused := 0, byte(0)
	for i := 0; i < len(bufs); {
		n, hl := 1, 0
		if plain == 0 && gro {
			n, hl = groRun(bufs[i:], offset, &w.hdr, udp)
		}
		if n == 1 {
			if err := w.write(q, bufs[i][offset:]); err != nil {
				return i, err
			}
			i++
			if plain > 0 {
				if plain--; plain == 0 {
					// The kernel took every frame of the run it refused
					// whole: it refuses that kind of super-frame.
					if refused == vnetGSOUDPL4 {
						t.noUDPGRO.Store(true)
						udp = false
					} else {
						t.noGRO.Store(true)
						gro = false
					}
				}
			}
			continue
		}
		w.iov = append(w.iov[:0], unix.Iovec{Base: &w.hdr[0]})
		w.iov[0].SetLen(hl)
		for _, b := range bufs[i : i+n] {
			p := b[offset+hl-vnetHdrLen:]
			w.iov = append(w.iov, unix.Iovec{Base: unsafe.SliceData(p)})
			w.iov[len(w.iov)-1].SetLen(len(p))
		}
		err := w.flush(q)
		if err != nil {
			if t.closed.Load() {
				return i, err
			}
			// Write the run's frames one by one. If the kernel takes
			// them all, it refused the super-frame itself (GSO UDP
			// before 6.2, say), and coalescing of that kind stops for the
			// TAP; if it refuses a frame too (EIO while the TAP is down),
			// the error was not about coalescing, and Write returns it.
			plain, refused = n, w.hdr[1]
			continue
		}
		t.RxCoalesced.Add(uint64(n))
		i += n
	}
	return len(bufs), nil
}

// tapWrite is one writer's writev state; pooled, because Write may be called
// concurrently and must not allocate per frame.
type tapWrite struct {
	iov    []unix.Iovec
	hdr    [groMaxHdr]byte
	err    error
	closed *atomic.Bool // the TAP's, while a write waits for room
	fn     func(fd uintptr) bool
}

var tapWrites = sync.Pool{New: func() any {
	w := &tapWrite{iov: make([]unix.Iovec, 0, BatchSize+1)}
	w.fn = w.do
	return w
}}

func (w *tapWrite) do(fd uintptr) bool {
	for {
		_, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		switch e {
		case 0:
			w.err = nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if fdwait.Wait(fd, unix.POLLOUT, w.closed) {
				continue
			}
			w.err = os.ErrClosed
		default:
			w.err = e
		}
		return true
	}
}

// write writes one frame as it is.
func (w *tapWrite) write(q *Queue, frame []byte) error {
	w.iov = append(w.iov[:0], unix.Iovec{Base: &zeroVnetHdr[0]}, unix.Iovec{})
	w.iov[0].SetLen(vnetHdrLen)
	if len(frame) > 0 {
		w.iov[1].Base = &frame[0]
	}
	w.iov[1].SetLen(len(frame))
	return w.flush(q)
}

// flush writes w.iov as one frame on q and forgets the caller's buffers.
func (w *tapWrite) flush(q *Queue) error {
	t := q.t
	w.err, w.closed = nil, &t.closed
	err := q.rc.Write(w.fn)
	w.closed = nil
	clear(w.iov) // no reference to the caller's buffers
	w.iov = w.iov[:0]
	if err == nil {
		err = w.err
	}
	if err != nil {
		return t.ioErr(err)
	}
	return nil
}

// ioErr turns the poller's error for a closed fd into os.ErrClosed.
func (t *TAP) ioErr(err error) error {
	if t.closed.Load() {
		return os.ErrClosed
	}
	return err
}

// SetCarrier turns the netdev's carrier on or off (TUNSETCARRIER): the
// daemon makes it follow the port's oper_state.
func (t *TAP) SetCarrier(on bool) error {
	v := 0
	if on {
		v = 1
	}
	var ierr error
	if err := t.rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetPointerInt(int(fd), unix.TUNSETCARRIER, v)
	}); err != nil {
		return fmt.Errorf("vnicd: TAP %s: set carrier: %w", t.Name(), t.ioErr(err))
	}
	if ierr != nil {
		return fmt.Errorf("vnicd: TAP %s: set carrier: %w", t.Name(), ierr)
	}
	return nil
}

// SetMTU sets the netdev's MTU.
func (t *TAP) SetMTU(mtu int) error {
	return t.withLink("set MTU", func(h *netlink.Handle, l netlink.Link) error {
		return h.LinkSetMTU(l, mtu)
	})
}

// SetMAC sets the netdev's MAC address.
func (t *TAP) SetMAC(mac [6]byte) error {
	return t.withLink("set MAC", func(h *netlink.Handle, l netlink.Link) error {
		return h.LinkSetHardwareAddr(l, mac[:])
	})
}

// IsUp reports whether the netdev is administratively up (IFF_UP).
func (t *TAP) IsUp() (bool, error) {
	var up bool
	err := t.withLink("get link", func(h *netlink.Handle, l netlink.Link) error {
		cur, err := h.LinkByIndex(l.Attrs().Index)
		if err == nil {
			up = cur.Attrs().RawFlags&unix.IFF_UP != 0
		}
		return err
	})
	return up, err
}

// McastMACs returns the netdev's multicast list: its link-layer multicast
// addresses (`ip maddr show dev`), in the kernel's order, read from
// /proc/net/dev_mcast of its namespace (mcast.go).
func (t *TAP) McastMACs() ([][6]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, fmt.Errorf("vnicd: TAP %s: multicast list: %w", t.Name(), os.ErrClosed)
	}
	ns, _, err := t.netdevNS()
	var text []byte
	if err == nil {
		err = nlutil.Do(ns, func() error {
			var err error
			text, err = os.ReadFile(devMcastPath)
			return err
		})
		ns.Close()
	}
	var macs [][6]byte
	if err == nil {
		macs, err = parseDevMcast(text, t.index)
	}
	if err != nil {
		return nil, fmt.Errorf("vnicd: TAP %s: multicast list: %w", t.Name(), err)
	}
	return macs, nil
}

// withLink runs f with a netlink handle where the netdev is now and a link
// naming the netdev by index, unless the TAP is closed.
func (t *TAP) withLink(what string, f func(*netlink.Handle, netlink.Link) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return fmt.Errorf("vnicd: TAP %s: %s: %w", t.Name(), what, os.ErrClosed)
	}
	h, release, err := t.nl()
	if err != nil {
		return fmt.Errorf("vnicd: TAP %s: %s: %w", t.Name(), what, err)
	}
	defer release()
	l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: t.index}}
	if err := f(h, l); err != nil {
		return fmt.Errorf("vnicd: TAP %s: %s: %w", t.Name(), what, err)
	}
	return nil
}

// Close stops the TAP's watchers, closes its fd, which unblocks Read and
// Write (they return os.ErrClosed) and makes the kernel delete the netdev,
// and checks, in the namespace the netdev was in, that it is gone (deleting
// it if it is not). Later calls return nil. A persistent TAP (SetPersist)
// keeps its netdev, with carrier off, until Attach takes it over or
// RemovePersistent or its namespace's end deletes it.
func (t *TAP) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return nil
	}
	close(t.done)
	// Where the netdev is, asked before the fd that knows it closes; a
	// netdev already gone (or going with its namespace) needs no check.
	ns, name, nserr := t.netdevNS()
	err := t.f.Close()
	for _, q := range t.queues[1:] {
		err = errors.Join(err, q.f.Close())
	}
	t.watchers.Wait()
	if nserr != nil {
		return err
	}
	defer ns.Close()
	if t.persist.Load() {
		return err
	}
	h, herr := nlutil.Handle(ns, netlinkTimeout)
	if herr == nil {
		herr = ensureGone(h, t.index, name)
		h.Close()
	}
	if herr != nil {
		err = errors.Join(err, fmt.Errorf("vnicd: TAP %s: delete: %w", name, herr))
	}
	return err
}

// Remove deletes the netdev: it is Close, under the name a caller tearing a
// port down uses. The netdev is gone, in whichever namespace it was, when
// Remove returns nil.
func (t *TAP) Remove() error { return t.Close() }

// ensureGone deletes the TAP's netdev if it outlived the fd. index 0 means
// unknown (a failed move): then the name, unique in that case, is used.
func ensureGone(h *netlink.Handle, index int, name string) error {
	var (
		l   netlink.Link
		err error
	)
	if index > 0 {
		l, err = h.LinkByIndex(index)
	} else {
		l, err = h.LinkByName(name)
	}
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		return nil
	case err != nil:
		return err
	case l.Type() != "tuntap":
		return nil // the index went to another netdev
	}
	return h.LinkDel(l)
}

// LinkEvent is the state of a TAP's netdev, as the kernel reports it.
type LinkEvent struct {
	// Up is IFF_UP, the administrative state (ip link set up/down): the
	// port's oper_state is FORWARDING only while it holds (kernel-reference
	// §6).
	Up bool
	// MAC is the netdev's address; a change by the user is a VEMA trap.
	MAC [6]byte
	MTU int
	// Name is the netdev's name: a rename by the user is an event, and the
	// TAP's Name follows it.
	Name string
	// Deleted means the netdev is gone (deleted, or left the namespace in a
	// MoveTo); it is the last event.
	Deleted bool
	// Moved means someone else moved the netdev to another namespace (ip
	// link set DEV netns NS): it lives on there, and Follow finds it. It
	// is the last event.
	Moved bool
	// Err is set on the last event when watching failed; the other fields
	// then hold the last state seen.
	Err error
}

// watchRetries bounds how often in a row a watcher re-subscribes after the
// kernel dropped its subscription (ENOBUFS) without a single event between.
const watchRetries = 3

// Watch reports the netdev's state: first the current one, then each change
// of Up, MAC or MTU, until ctx is done, the TAP is closed or moved (MoveTo)
// or the netdev is gone (after a Deleted event: deleted, or its namespace
// destroyed) or was moved to another namespace by someone else (after a
// Moved event: Follow, then watch again); then the channel is closed. Events
// carry state, not edges: a reader that falls behind gets the latest state,
// not every step in between. Each Watch has a netlink subscription of its
// own in the caller's namespace (vnicd's), released when the channel
// closes; it holds nothing in the netdev's namespace (tapns.go), to which
// it gives a netns id if it has none.
func (t *TAP) Watch(ctx context.Context) (<-chan LinkEvent, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, fmt.Errorf("vnicd: TAP %s: watch: %w", t.Name(), os.ErrClosed)
	}
	w := tapWatch{moved: t.moved, index: t.index}
	sub, first, err := t.watchFrom(&w)
	if err != nil {
		return nil, fmt.Errorf("vnicd: TAP %s: watch: %w", t.Name(), err)
	}
	out := make(chan LinkEvent, 1)
	t.watchers.Add(1)
	go func() {
		defer t.watchers.Done()
		t.watch(ctx, sub, first, out, w)
	}()
	return out, nil
}

// tapWatch is what a watcher follows: the netdev at index in the namespace
// whose inode is ino and whose netns id, where the watcher listens, is nsid
// (ownNSID: the listener's own), until moved is closed (MoveTo changes
// them).
type tapWatch struct {
	moved <-chan struct{}
	index int
	ino   uint64
	nsid  int
	all   bool // the netdev is in another namespace than the listener's
}

// watchFrom subscribes for w and reads the netdev's state now, its first
// event; ino, nsid and all are set on the first call and checked on later
// ones (a resubscription). A netdev gone, or in another namespace than
// before, gives a Deleted or Moved event and a subscription that never
// fires.
func (t *TAP) watchFrom(w *tapWatch) (*subscription, LinkEvent, error) {
	ns, _, err := t.netdevNS()
	if errors.Is(err, errNetdevGone) {
		return &subscription{}, LinkEvent{Deleted: true}, nil
	}
	if err != nil {
		return nil, LinkEvent{}, err
	}
	defer ns.Close()
	ino := nsIno(ns)
	if w.ino != 0 && ino != w.ino {
		return &subscription{}, LinkEvent{Moved: true}, nil
	}
	first := w.ino == 0
	if first {
		here, err := currentNS()
		if err != nil {
			return nil, LinkEvent{}, fmt.Errorf("current netns: %w", err)
		}
		w.all = !here.Equal(ns)
		here.Close()
	}
	// Subscribe before reading the state, so that no change falls between.
	sub, here, err := subscribeIn(w.all)
	if err != nil {
		return nil, LinkEvent{}, err
	}
	fail := func(err error) (*subscription, LinkEvent, error) {
		here.Close()
		sub.stop()
		return nil, LinkEvent{}, err
	}
	if first {
		w.ino, w.nsid = ino, ownNSID
		if w.all {
			if here.Equal(ns) {
				return fail(errors.New("the netdev's netns is the caller's own only on some threads"))
			}
			if w.nsid, err = nsidOf(ns); err != nil {
				return fail(fmt.Errorf("netns id of the netdev's netns: %w", err))
			}
		}
	}
	here.Close()
	h, err := nlutil.Handle(ns, netlinkTimeout)
	if err != nil {
		sub.stop()
		return nil, LinkEvent{}, fmt.Errorf("netlink in the netdev's netns: %w", err)
	}
	l, err := h.LinkByIndex(w.index)
	h.Close()
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		// Gone from there since the fd was asked: deleted or moved.
		sub.stop()
		if t.attached() {
			return &subscription{}, LinkEvent{Moved: true}, nil
		}
		return &subscription{}, LinkEvent{Deleted: true}, nil
	case err != nil:
		sub.stop()
		return nil, LinkEvent{}, err
	}
	ev := LinkEvent{Up: l.Attrs().RawFlags&unix.IFF_UP != 0, MTU: l.Attrs().MTU, Name: l.Attrs().Name}
	copy(ev.MAC[:], l.Attrs().HardwareAddr)
	return sub, ev, nil
}

// watch follows the netdev until ctx, Close or MoveTo ends it; first is
// its state when the subscription was made.
func (t *TAP) watch(ctx context.Context, sub *subscription, first LinkEvent, out chan<- LinkEvent, w tapWatch) {
	defer close(out)
	defer func() { sub.stop() }()
	var (
		pending, last LinkEvent
		havePending   bool
		sentAny       bool
		retries       int
	)
	// offer makes ev the next event unless it is the state already told.
	offer := func(ev LinkEvent) {
		if !ev.Deleted && !ev.Moved {
			if p := t.place.Load(); ev.Name != "" && ev.Name != p.name {
				// Renamed by the user (MoveTo and Follow, which rename
				// it too, end the watchers before they change the
				// place).
				t.place.Store(&tapPlace{name: ev.Name, netns: p.netns})
			}
		}
		cur := last
		if havePending {
			cur = pending
		}
		if (sentAny || havePending) && ev == cur {
			return
		}
		pending, havePending = ev, true
	}
	offer(first)
	for {
		var send chan<- LinkEvent
		if havePending {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case <-t.done:
			return
		case <-w.moved:
			return
		case send <- pending:
			last, sentAny, havePending = pending, true, false
			if last.Deleted || last.Moved || last.Err != nil {
				return
			}
		case m, ok := <-sub.updates:
			if !ok {
				// The kernel dropped the subscription (its buffer overflowed):
				// subscribe again, and read the current state anew.
				cause := sub.err()
				sub.stop()
				var (
					err error
					ev  LinkEvent
				)
				if retries++; retries > watchRetries {
					err = fmt.Errorf("%w (%d times in a row)", cause, retries)
				} else if sub, ev, err = t.watchFrom(&w); err != nil {
					err = errors.Join(cause, err)
				}
				if err != nil {
					// Deliver the last state seen with the error, then end.
					sub = &subscription{}
					if !havePending {
						pending = last
					}
					pending.Err = fmt.Errorf("vnicd: TAP %s: watch: %w", t.Name(), err)
					havePending = true
					continue
				}
				offer(ev)
				continue
			}
			if m.nsGone {
				if w.all && m.nsid == w.nsid {
					// The netdev's namespace is being destroyed: its
					// netdevs go with it, and no RTM_DELLINK of theirs
					// reaches this socket any more.
					ev := last
					if havePending {
						ev = pending
					}
					ev.Deleted, ev.Err = true, nil
					pending, havePending = ev, true
				}
				continue
			}
			u := m.upd
			// AF_BRIDGE messages are about the netdev as a bridge port: an
			// RTM_DELLINK of that family says it left its bridge (nomaster,
			// the bridge deleted), not that the netdev is gone.
			if m.nsid != w.nsid || int(u.Index) != w.index || u.IfInfomsg.Family == unix.AF_BRIDGE {
				continue
			}
			retries = 0
			ev := LinkEvent{
				Up:      u.IfInfomsg.Flags&unix.IFF_UP != 0,
				MTU:     u.Link.Attrs().MTU,
				Name:    u.Link.Attrs().Name,
				Deleted: u.Header.Type == unix.RTM_DELLINK,
			}
			if ev.Deleted && t.attached() {
				// Gone from here, but the fd still has its netdev:
				// moved to another namespace.
				ev.Deleted, ev.Moved = false, true
			}
			copy(ev.MAC[:], u.Link.Attrs().HardwareAddr)
			offer(ev)
		}
	}
}
