package tap

// Netdev is the Ethernet side of a VNIC port: whole Ethernet frames (no
// preamble, no FCS) in and out, in batches, in the shape of wireguard-go's
// tun.Device. The TAP netdev (TAP) is the real one; vnicd/taptest has an
// in-memory pair for tests without a kernel.
//
// Buffers: the caller owns bufs and sizes before, during and after every
// call; a Device keeps no reference to them once Read or Write returns. The
// offset leaves headroom in front of each frame, where the transmit path
// writes the 16B header so that no frame is copied (docs/design.md, data path).
//
// Concurrency: Read is called by one goroutine at a time. Write may be called
// concurrently with Read and with other Writes. Close may be called at any
// time, from any goroutine, more than once.
//
// Close: a Read or Write blocked in the device, and every later one, returns
// an error for which errors.Is(err, os.ErrClosed) holds; callers treat that
// error as shutdown, not as a fault.
type Netdev interface {
	// Read blocks until at least one frame is there, then reads up to
	// len(bufs) frames (no more than BatchSize, nor than len(sizes)) without
	// blocking again: frame i into bufs[i][offset:], its length into sizes[i].
	// It returns n > 0 and a nil error, or 0 and an error. A frame longer
	// than bufs[i][offset:] is cut to fit, as the kernel's TAP does, so
	// sizes[i] == len(bufs[i])-offset means the frame may have been cut:
	// give each buffer a spare byte beyond the largest frame (MTU + 14,
	// + 4 for a VLAN tag) and treat a full buffer as an oversized frame.
	Read(bufs [][]byte, sizes []int, offset int) (n int, err error)

	// Write writes each bufs[i][offset:] as one frame, in order, and returns
	// how many it wrote. It stops at the first frame the device refuses (a
	// runt shorter than an Ethernet header, say): that frame is bufs[n] and
	// the error is about it; the caller may count it and go on with
	// bufs[n+1:]. A frame the device accepted may still be dropped later,
	// as a full kernel queue drops it; that is not an error.
	Write(bufs [][]byte, offset int) (int, error)

	// BatchSize is the largest number of frames one Read returns; callers
	// size their buffer arrays with it.
	BatchSize() int

	// Name is the netdev's name.
	Name() string

	// Close releases the device and unblocks Read and Write (see above).
	Close() error
}

// Counter is one named counter, as ethtool -S shows it
// (TAP.OffloadCounters, and a VNIC port's counters).
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}
