//go:build linux

package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/internal/nlutil"
)

// A TAP holds no reference to its netdev's namespace between operations:
// an open namespace fd, a netlink socket made there or a subscription there
// would each keep the namespace alive after its last process left it and
// its name was deleted, and with it the TAP's netdev, its other devices (a
// veth's peer) and the port's vesw. (The TAP's fd was opened in the
// namespace the TAP was made in, which it does pin: vnicd's own, except for
// Attach, whose fd has to be opened where the netdev is.)
//
// So every operation asks the fd where its netdev is now (TUNGETDEVNETNS,
// a new namespace fd), opens a netlink handle there, and closes both when
// done; and a Watch of a netdev in another namespace listens from the
// namespace the watch was made in, on a socket with NETLINK_LISTEN_ALL_NSID,
// to the link messages of every namespace that has a netns id there (the
// watch gives the netdev's namespace one if it has none). When that
// namespace is destroyed, the kernel first removes its ids (cleanup_net,
// unhash_nsid: an RTM_DELNSID to RTNLGRP_NSID) and only then deletes its
// netdevs, whose RTM_DELLINK then reaches no listener outside: the
// RTM_DELNSID is the watch's Deleted event.

// errNetdevGone is what the fd says when its netdev is gone: deleted
// (TUNGETIFF fails with EBADFD) or in a namespace being destroyed
// (TUNGETDEVNETNS cannot take a reference on it).
var errNetdevGone = errors.New("vnicd: the TAP's netdev is gone")

// netdevNS returns a new handle of the namespace the TAP's netdev is in now,
// and the netdev's name, as the fd tells them. errNetdevGone (wrapped) means
// the netdev is gone.
func (t *TAP) netdevNS() (netns.NsHandle, string, error) {
	var (
		name string
		nsfd = -1
		ierr error
	)
	if err := t.rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err == nil {
			err = unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr)
		}
		if errors.Is(err, unix.EBADFD) {
			ierr = fmt.Errorf("%w: TUNGETIFF: %w", errNetdevGone, err)
			return
		}
		if err != nil {
			ierr = fmt.Errorf("TUNGETIFF: %w", err)
			return
		}
		name = ifr.Name()
		nsfd, err = unix.IoctlRetInt(int(fd), unix.TUNGETDEVNETNS)
		switch {
		case errors.Is(err, unix.EBADFD), errors.Is(err, unix.EINVAL):
			// EINVAL: the namespace has no reference left (maybe_get_net
			// failed): it is being destroyed, and its netdevs with it.
			ierr = fmt.Errorf("%w: TUNGETDEVNETNS: %w", errNetdevGone, err)
		case err != nil:
			ierr = fmt.Errorf("TUNGETDEVNETNS: %w", err)
		}
	}); err != nil {
		return -1, "", t.ioErr(err)
	}
	if ierr != nil {
		return -1, "", ierr
	}
	return netns.NsHandle(nsfd), name, nil
}

// nl returns a netlink handle in the namespace the TAP's netdev is in now,
// and release, which closes it and the namespace handle.
func (t *TAP) nl() (h *netlink.Handle, release func(), err error) {
	ns, _, err := t.netdevNS()
	if err != nil {
		return nil, nil, err
	}
	h, err = nlutil.Handle(ns, netlinkTimeout)
	if err != nil {
		ns.Close()
		return nil, nil, fmt.Errorf("netlink in the netdev's netns: %w", err)
	}
	return h, func() { h.Close(); ns.Close() }, nil
}

// nsIno identifies a namespace by its inode.
func nsIno(ns netns.NsHandle) uint64 {
	var st unix.Stat_t
	if unix.Fstat(int(ns), &st) != nil {
		return 0
	}
	return st.Ino
}

// ownNSID is the nsid of link messages from the listening socket's own
// namespace: they carry none.
const ownNSID = -1

// linkMsg is one message a subscription passes on: a link message (upd)
// from the namespace nsid, or (nsGone) the removal of the netns id nsid,
// which means its namespace is being destroyed.
type linkMsg struct {
	upd    netlink.LinkUpdate
	nsid   int
	nsGone bool
}

// subscription is one netlink socket subscribed to link (and, listening
// to every namespace with an id, netns id) messages, made in the namespace
// of the thread that subscribed. Its goroutine passes the messages on
// updates, and closes it when the socket fails or is stopped.
type subscription struct {
	f       *os.File
	updates chan linkMsg
	done    chan struct{}
	errs    chan error
}

// subscribeRcvBuf is a subscription socket's receive buffer.
const subscribeRcvBuf = 1 << 20

// subscribe opens a subscription on a socket in the calling thread's
// namespace; with all, it hears the namespaces that have a netns id there
// too (NETLINK_LISTEN_ALL_NSID) and the removal of their ids. The caller
// must be on a thread of the namespace it means (vnicd's own, on any
// thread outside nlutil.Do).
func subscribe(all bool) (*subscription, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	fail := func(step string, err error) (*subscription, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink subscription: %s: %w", step, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, subscribeRcvBuf); err != nil {
		return fail("SO_RCVBUF", err)
	}
	if all {
		if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_LISTEN_ALL_NSID, 1); err != nil {
			return fail("NETLINK_LISTEN_ALL_NSID", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		return fail("bind", err)
	}
	if all {
		if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, unix.RTNLGRP_NSID); err != nil {
			return fail("join RTNLGRP_NSID", err)
		}
	}
	s := &subscription{
		f:       os.NewFile(uintptr(fd), "netlink-link"),
		updates: make(chan linkMsg, 16),
		done:    make(chan struct{}),
		errs:    make(chan error, 1),
	}
	rc, err := s.f.SyscallConn()
	if err != nil {
		s.f.Close()
		return nil, fmt.Errorf("netlink subscription: %w", err)
	}
	go s.run(rc)
	return s, nil
}

// subscribeIn is subscribe on a thread locked for the call, and a handle
// of that thread's namespace (the caller closes it).
func subscribeIn(all bool) (*subscription, netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	here, err := netns.Get()
	if err != nil {
		return nil, -1, fmt.Errorf("current netns: %w", err)
	}
	s, err := subscribe(all)
	if err != nil {
		here.Close()
		return nil, -1, err
	}
	return s, here, nil
}

// run reads the socket until it fails or stop closes it, then closes
// updates. Each read is one datagram: its messages, and the netns id its
// control message gives (none: the socket's own namespace).
func (s *subscription) run(rc syscall.RawConn) {
	defer close(s.updates)
	buf := make([]byte, 1<<16)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			select {
			case s.errs <- err:
			default:
			}
			return
		}
		nsid := ownNSID
		if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, cm := range cms {
				if cm.Header.Level == unix.SOL_NETLINK && cm.Header.Type == unix.NETLINK_LISTEN_ALL_NSID && len(cm.Data) >= 4 {
					nsid = int(int32(binary.NativeEndian.Uint32(cm.Data)))
				}
			}
		}
		// The messages' parsed fields (a MAC, a name) point into the
		// bytes they came in, which must outlive them: a copy per read.
		msgs, err := syscall.ParseNetlinkMessage(append([]byte(nil), buf[:n]...))
		if err != nil {
			continue // a malformed datagram: nothing of ours in it
		}
		for _, m := range msgs {
			lm, ok := parseLinkMsg(m, nsid)
			if !ok {
				continue
			}
			select {
			case s.updates <- lm:
			case <-s.done:
				return
			}
		}
	}
}

// parseLinkMsg turns a link or netns id message into a linkMsg; ok is false
// for any other message, or a malformed one. The library's parsers trust
// their input (a bad attribute length panics in them): a message they panic
// on is dropped as malformed.
func parseLinkMsg(m syscall.NetlinkMessage, nsid int) (lm linkMsg, ok bool) {
	defer func() {
		if recover() != nil {
			lm, ok = linkMsg{}, false
		}
	}()
	hdr := unix.NlMsghdr{Len: m.Header.Len, Type: m.Header.Type, Flags: m.Header.Flags, Seq: m.Header.Seq, Pid: m.Header.Pid}
	switch m.Header.Type {
	case unix.RTM_NEWLINK, unix.RTM_DELLINK:
		if len(m.Data) < unix.SizeofIfInfomsg {
			return linkMsg{}, false
		}
		link, err := netlink.LinkDeserialize(&hdr, m.Data)
		if err != nil {
			return linkMsg{}, false
		}
		return linkMsg{upd: netlink.LinkUpdate{IfInfomsg: *nl.DeserializeIfInfomsg(m.Data), Header: hdr, Link: link}, nsid: nsid}, true
	case unix.RTM_DELNSID:
		// struct rtgenmsg, padded to 4 bytes, then NETNSA_* attributes.
		if len(m.Data) < 4 {
			return linkMsg{}, false
		}
		attrs, err := nl.ParseRouteAttr(m.Data[4:])
		if err != nil {
			return linkMsg{}, false
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.NETNSA_NSID && len(a.Value) >= 4 {
				return linkMsg{nsid: int(int32(binary.NativeEndian.Uint32(a.Value))), nsGone: true}, true
			}
		}
	}
	return linkMsg{}, false
}

// err returns the socket's error, if it failed.
func (s *subscription) err() error {
	select {
	case err := <-s.errs:
		return err
	default:
		return errors.New("subscription closed")
	}
}

// stop closes the socket and waits, bounded, until the goroutine has left.
func (s *subscription) stop() {
	if s.done == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
		close(s.done)
	}
	s.f.Close() // wakes the goroutine's read
	timeout := time.NewTimer(2 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case _, ok := <-s.updates:
			if !ok {
				return
			}
		case <-timeout.C:
			return
		}
	}
}

// nsidOf returns the netns id ns has in the namespace of the calling
// thread, giving it one if it has none, through a handle made there.
func nsidOf(ns netns.NsHandle) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	if err := h.SetSocketTimeout(netlinkTimeout); err != nil {
		return 0, err
	}
	id, err := h.GetNetNsIdByFd(int(ns))
	if err != nil || id >= 0 {
		return id, err
	}
	// -1 asks the kernel to choose; EEXIST if someone else gave it one
	// meanwhile, which the second reading finds.
	serr := h.SetNetNsIdByFd(int(ns), -1)
	if id, err = h.GetNetNsIdByFd(int(ns)); err != nil || id >= 0 {
		return id, err
	}
	return 0, fmt.Errorf("no netns id: %w", errors.Join(serr, errNetdevGone))
}
