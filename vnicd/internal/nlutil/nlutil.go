//go:build linux

// Package nlutil is the netlink and network-namespace plumbing that vnicd
// and its test lab (vnicd/nstest) share: running code inside a namespace
// without ever leaving an OS thread in the wrong one (the pattern of
// containernetworking/plugins pkg/ns), and netlink addresses from
// net/netip prefixes.
package nlutil

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle opens a NETLINK_ROUTE handle in ns whose every request is bounded
// by timeout. The socket is made on a thread in ns (see Do): the library's
// own namespace switch unlocks its thread even when it failed to switch
// back.
func Handle(ns netns.NsHandle, timeout time.Duration) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := Do(ns, func() (err error) {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := h.SetSocketTimeout(timeout); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Addr is p as an interface address; an IPv6 one skips duplicate address
// detection (IFA_F_NODAD), so it is usable at once.
func Addr(p netip.Prefix) *netlink.Addr {
	a := &netlink.Addr{IPNet: &net.IPNet{
		IP:   p.Addr().AsSlice(),
		Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
	}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	return a
}

// result is what Do's f gave: its error, or its panic.
type result struct {
	err      error
	panicked bool
	panic    any
}

// Do runs f on an OS thread inside ns and returns its error; a panic in f is
// re-raised in the caller. The thread is locked to a goroutine of its own,
// so the caller's thread never changes namespace. After f the thread goes
// back to the namespace it came from; if that fails it is never unlocked,
// so the runtime ends it instead of reusing it in the wrong namespace.
//
// Goroutines f starts do not run in ns; sockets f opens belong to ns
// wherever they are used later, which is what f is for.
func Do(ns netns.NsHandle, f func() error) error {
	res := make(chan result, 1)
	go func() {
		// The result goes back once the thread is home and the handle of
		// its namespace closed: a caller that counts its fds when Do
		// returns finds none of Do's open.
		res <- doIn(ns, f)
	}()
	r := <-res
	if r.panicked {
		panic(r.panic)
	}
	return r.err
}

// doIn is Do's goroutine: f on this goroutine's thread, locked, inside ns.
// The thread stays locked (and so ends with the goroutine) if it cannot go
// back to its namespace.
func doIn(ns netns.NsHandle, f func() error) (r result) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return result{err: fmt.Errorf("current netns: %w", err)}
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread() // setns failed: the thread did not move
		return result{err: fmt.Errorf("setns: %w", err)}
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.panicked, r.panic = true, p
			}
		}()
		r.err = f()
	}()
	if err := netns.Set(orig); err != nil {
		r.err = errors.Join(r.err, fmt.Errorf("back to the original netns: %w (thread abandoned)", err))
		return r // still locked: the thread ends with this goroutine
	}
	runtime.UnlockOSThread()
	return r
}
