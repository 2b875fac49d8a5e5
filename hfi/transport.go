package hfi

import "net/netip"

// Message is one datagram of a batch. On read, Buf is the caller's buffer
// (its full length is available), N is set to the datagram's length and Addr
// to its source; a datagram longer than Buf is cut to len(Buf), so a reader
// that must tell an oversize datagram from a packet gives Buf a byte more
// than the longest it accepts (the HFI does). A transport may instead point
// Buf at memory of its own, valid until its next ReadBatch (the UDP
// transport does with UDP GRO, and then hands every datagram over whole).
// On write, Buf[:N] is sent to Addr, and WriteBatch sets Refused on each
// datagram it could not hand to the kernel (and clears it on the others).
type Message struct {
	Buf     []byte
	N       int
	Addr    netip.AddrPort
	Refused bool
}

// Transport carries datagrams in batches: the HFI's wire.
//
// ReadBatch blocks until at least one datagram is there, fills up to
// len(msgs) of them and returns how many. After Close it returns an error
// (net.ErrClosed for the UDP transport) and any blocked ReadBatch returns.
// WriteBatch sends msgs in order and returns how many were handed to the
// kernel, marking each of the others Refused; datagrams may be lost later,
// as on any UDP path. ReadBatch is called by one
// goroutine at a time; WriteBatch may be called concurrently.
type Transport interface {
	ReadBatch(msgs []Message) (int, error)
	WriteBatch(msgs []Message) (int, error)
	BatchSize() int
	LocalAddr() netip.AddrPort
	Close() error
}

// PollTransport is a Transport whose reads a poll loop of the caller's can
// drive: the loop waits for the fd itself (epoll) and then reads without
// waiting. The UDP transport is one.
type PollTransport interface {
	Transport
	// TryReadBatch is ReadBatch that never waits: it returns 0 and no
	// error when nothing is queued.
	TryReadBatch(msgs []Message) (int, error)
	// Control runs f with the transport's file descriptor, which stays open
	// while f runs.
	Control(f func(fd uintptr)) error
}
