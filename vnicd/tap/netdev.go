package tap

import (
	"context"
	"net/netip"
)

// Netdev is the Ethernet side of a VNIC port: whole Ethernet frames (no
// preamble, no FCS) in and out, in batches, in the shape of wireguard-go's
// tun.Device, and the netdev settings a port drives. The TAP netdev (TAP)
// is the real one; vnicd/taptest has an in-memory pair for tests without a
// kernel, with every ability below, so that a test exercises the same
// code the TAP does.
//
// Frames: the netdev's queues are Pollers, driven by the caller's poll loop
// (the Netdev itself is queue 0). Buffers: the caller owns bufs and sizes
// before, during and after every call; a Netdev keeps no reference to them
// once TryRead or Write returns. The offset leaves headroom in front of each
// frame, where the transmit path writes the 16B header so that no frame is
// copied (docs/design.md, data path).
//
// Concurrency: each queue is read by one goroutine at a time. Write may be
// called concurrently with TryRead and with other Writes; the settings
// methods from any goroutine. Close may be called at any time, from any
// goroutine, more than once.
//
// Close: every later TryRead, Write or Control returns an error for which
// errors.Is(err, os.ErrClosed) holds; callers treat that error as
// shutdown, not as a fault.
type Netdev interface {
	Poller

	// Queues is how many queues the netdev has, at least 1; Queue(i)
	// returns queue i, 0 <= i < Queues() (queue 0 is the Netdev itself).
	// The kernel keeps a flow on one queue.
	Queues() int
	Queue(i int) Poller

	// BatchSize is the largest number of frames one TryRead returns;
	// callers size their buffer arrays with it.
	BatchSize() int

	// Name is the netdev's name, NetNS the namespace it is in as the
	// config or MoveTo named it ("" is the caller's own).
	Name() string
	NetNS() string

	// SetMAC, SetMTU and SetCarrier change the netdev's address, MTU and
	// carrier (the port's oper state); IsUp reads its administrative state
	// (IFF_UP) and McastMACs the multicast addresses it has joined.
	SetMAC(mac [6]byte) error
	SetMTU(mtu int) error
	SetCarrier(on bool) error
	IsUp() (bool, error)
	McastMACs() ([][6]byte, error)

	// Watch reports the netdev's state, first as it is and then at each
	// change (LinkEvent), until ctx is done, the netdev is closed or moved
	// (MoveTo), or it is gone (a Deleted event) or moved by someone else (a
	// Moved event: Follow, then Watch again); then the channel is closed.
	// Events carry state, not edges: a reader that falls behind gets the
	// latest.
	Watch(ctx context.Context) (<-chan LinkEvent, error)

	// MoveTo moves the netdev to namespace netns under name, up, with
	// addrs; the frames keep flowing through the same queues. On error the
	// netdev is where it was. Follow points the Netdev at its netdev in the
	// namespace someone else moved it to (after a Moved event).
	MoveTo(netns, name string, addrs []netip.Prefix) error
	Follow() error

	// SetPersist makes the netdev outlive the Netdev (on) or not, marked
	// with tag so that a later vnicd can attach to it (Attach).
	SetPersist(on bool, tag string) error

	// OffloadCounters are the netdev's offload counters, as ethtool -S
	// shows them (none for a netdev without offloads).
	OffloadCounters() []Counter

	// Close releases the netdev (see above).
	Close() error
}

// Poller is one queue of a netdev, driven by a poll loop of the caller's:
// the loop waits for the queue's file descriptor itself (epoll) and then
// reads without waiting.
type Poller interface {
	// TryRead reads up to len(bufs) frames (no more than BatchSize, nor
	// than len(sizes)) without waiting: frame i into bufs[i][offset:], its
	// length into sizes[i]. It returns 0 and no error when no frame is
	// queued. A frame longer than bufs[i][offset:] is cut to fit, as the
	// kernel's TAP does, so sizes[i] == len(bufs[i])-offset means the frame
	// may have been cut: give each buffer a spare byte beyond the largest
	// frame (MTU + 14, + 4 for a VLAN tag) and treat a full buffer as an
	// oversized frame.
	TryRead(bufs [][]byte, sizes []int, offset int) (n int, err error)

	// Write writes each bufs[i][offset:] as one frame, in order, and returns
	// how many it wrote. It stops at the first frame the device refuses (a
	// runt shorter than an Ethernet header, say): that frame is bufs[n] and
	// the error is about it; the caller may count it and go on with
	// bufs[n+1:]. A frame the device accepted may still be dropped later,
	// as a full kernel queue drops it; that is not an error.
	Write(bufs [][]byte, offset int) (int, error)

	// Control runs f with the queue's file descriptor, which is readable
	// (level-triggered) while frames may be queued and stays open while f
	// runs.
	Control(f func(fd uintptr)) error
}

// Counter is one named counter, as ethtool -S shows it
// (TAP.OffloadCounters, and a VNIC port's counters).
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}
