// Package readiness gives an in-memory queue the file descriptor a poll
// loop waits on: an eventfd that is readable while the queue may hold
// something. The test doubles of a TAP (vnicd/taptest) and of a UDP
// transport (hfi/hfitest) use it, so that the engine's epoll loop drives
// them exactly as it drives the real devices.
//
// The protocol that loses no wake-up: a producer queues first and then
// calls Notify; the consumer calls Clear first and then takes what is
// queued. A Notify that races with a Clear at worst makes one spurious
// wake-up, never a missed one. The fd is level-triggered readable from a
// Notify to the next Clear, as a socket is while data is queued.
package readiness

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Signal is one queue's readiness. Its methods are safe for concurrent use.
type Signal struct {
	fd     int
	closed atomic.Bool
	// mu orders Close against Control: Control's f never sees a Signal
	// that Close has already returned for.
	mu sync.RWMutex
}

// New returns a Signal that is not readable. Its eventfd is released when
// the Signal is no longer referenced (Close does not release it: a poll
// loop may still hold it in its epoll set, and must see it readable).
func New() (*Signal, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("readiness: eventfd: %w", err)
	}
	s := &Signal{fd: fd}
	runtime.AddCleanup(s, func(fd int) { unix.Close(fd) }, fd)
	return s, nil
}

// Must is New for test doubles, which have no way to report the error: it
// panics when the process is out of file descriptors.
func Must() *Signal {
	s, err := New()
	if err != nil {
		panic(err)
	}
	return s
}

var one = [8]byte{1}

// Notify makes the fd readable.
func (s *Signal) Notify() {
	_, _ = unix.Write(s.fd, one[:])
	runtime.KeepAlive(s)
}

// Clear makes the fd unreadable until the next Notify. After Close it
// does nothing: a closed queue stays readable, so that a loop waiting on it
// wakes up and finds it closed.
func (s *Signal) Clear() {
	if s.closed.Load() {
		return
	}
	var b [8]byte
	_, _ = unix.Read(s.fd, b[:])
	runtime.KeepAlive(s)
}

// Close marks the queue closed and leaves its fd readable for good.
// Control fails with os.ErrClosed from then on.
func (s *Signal) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return
	}
	s.Notify()
}

// Control runs f with the eventfd, for the caller's epoll set; it fails
// with os.ErrClosed once Close was called.
func (s *Signal) Control(f func(fd uintptr)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return os.ErrClosed
	}
	f(uintptr(s.fd))
	runtime.KeepAlive(s)
	return nil
}
