//go:build linux

// Package fdwait waits for a file descriptor that is kept out of the Go
// runtime's poller. The data plane's UDP socket and TAPs are: vnicd's poll
// loop waits for them in its own epoll set, and were they also in the
// runtime's, every packet would wake a runtime thread for nothing. Their
// blocking calls (a read with nothing queued, a write to a full buffer)
// wait here instead.
package fdwait

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Round bounds one poll(2), so that a waiter sees closed soon after it is
// set: closing an fd does not wake a poll(2) on it.
const Round = 100 // ms

// Wait waits with poll(2) until fd has one of events (unix.POLLIN,
// unix.POLLOUT, or an error or hang-up) or closed is set. It must be called
// with fd held open, inside a syscall.RawConn's Read or Write. It reports
// whether to try the I/O again; false means closed.
func Wait(fd uintptr, events int16, closed *atomic.Bool) bool {
	_, ok := WaitEvents(fd, events, closed)
	return ok
}

// WaitEvents is Wait that also returns the events poll(2) reported (0 when
// it failed): a caller tells an error queued (unix.POLLERR) from the event
// it waited for.
func WaitEvents(fd uintptr, events int16, closed *atomic.Bool) (int16, bool) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for !closed.Load() {
		n, err := unix.Poll(pfd, Round)
		if n > 0 || (err != nil && err != unix.EINTR) {
			return pfd[0].Revents, true
		}
	}
	return 0, false
}
