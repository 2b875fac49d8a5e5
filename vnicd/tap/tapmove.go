//go:build linux

package tap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/internal/nlutil"
)

// Moving a TAP between namespaces, and keeping it across a vnicd restart:
// what a container's claim of an EM-created port needs (claims.go). A TAP's
// fd stays valid when its netdev changes namespace, so the port's data path
// goes on through a move; only the netlink side (index, watchers)
// follows the netdev.

// ErrNotOurs is returned by Attach and RemovePersistent for a
// netdev that is not a TAP with the expected alias: vnicd leaves it alone.
var ErrNotOurs = errors.New("vnicd: not a persistent TAP of this vnicd")

// tmpIfName is a name no netdev has, for a netdev between two names.
func tmpIfName() string { return fmt.Sprintf("vnictmp%08x", rand.Uint32()) }

// currentNS returns a handle of the calling thread's namespace: vnicd's own
// (no thread outside nlutil.Do ever changes namespace).
func currentNS() (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return netns.Get()
}

// nsFor opens the namespace spec names ("" is the caller's own).
func nsFor(spec string) (netns.NsHandle, error) {
	if spec == "" {
		return currentNS()
	}
	return openNS(spec)
}

// MoveTo moves the netdev into the namespace netnsSpec (a Config.NetNS
// form; "" is the caller's own) under name (a "%d" in it becomes the lowest
// free number), sets it up there and adds addrs. The kernel drops the
// addresses a netdev had when it changes namespace. On the way the netdev is
// taken down and carries a temporary name, so its name never clashes on
// either side; if a step fails it goes back where it was, up, under its
// old name, and the error names the step. A name already taken in the
// target is found before anything changes; a later failure (rare) costs the
// netdev its addresses, which the kernel drops on the way out and back.
//
// MoveTo ends every Watch of the TAP (their channels close without a
// Deleted event), whether it succeeds or not: watch again afterwards, to
// follow the netdev where it now is.
func (t *TAP) MoveTo(netnsSpec, name string, addrs []netip.Prefix) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.moved)
	t.watchers.Wait()
	t.moved = make(chan struct{})
	from := *t.place.Load()
	fail := func(step string, err error) error {
		return fmt.Errorf("vnicd: TAP %s: move to %q as %s: %s: %w", from.name, netnsSpec, name, step, err)
	}
	if t.closed.Load() {
		return fail("closed", os.ErrClosed)
	}
	if err := (&Config{Name: name, NetNS: netnsSpec, Addresses: addrs}).validate(); err != nil || name == "" {
		return fail("check", errors.Join(err, ErrBadConfig))
	}
	// The namespace the netdev is in and a handle there, for this move
	// only: the TAP keeps neither (tapns.go).
	cur, _, err := t.netdevNS()
	if err != nil {
		return fail("find the netdev", err)
	}
	defer cur.Close()
	h, err := nlutil.Handle(cur, netlinkTimeout)
	if err != nil {
		return fail("netlink", err)
	}
	defer h.Close()
	target, err := nsFor(netnsSpec)
	if err != nil {
		return fail("open netns", err)
	}
	defer target.Close()
	if target.Equal(cur) {
		l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: t.index}}
		if err := h.LinkSetDown(l); err != nil {
			return fail("set down", err)
		}
		got, err := settle(h, t.index, name, addrs)
		if err != nil {
			return fail("rename", errors.Join(err, restore(h, t.index, from.name)))
		}
		t.place.Store(&tapPlace{name: got, netns: netnsSpec})
		return nil
	}
	ht, err := nlutil.Handle(target, netlinkTimeout)
	if err != nil {
		return fail("netlink in netns", err)
	}
	defer ht.Close()
	if !strings.Contains(name, "%") {
		var nf netlink.LinkNotFoundError
		if _, err := ht.LinkByName(name); !errors.As(err, &nf) {
			if err == nil {
				err = fmt.Errorf("%w: the name is taken there", unix.EEXIST)
			}
			return fail("check the name", err)
		}
	}
	tmp := tmpIfName()
	idx, err := relocate(h, t.index, target, ht, tmp)
	if err != nil {
		return fail("move", errors.Join(err, restore(h, t.index, from.name)))
	}
	got, err := settle(ht, idx, name, addrs)
	if err != nil {
		// Back where it came from, under its old name.
		back, berr := relocate(ht, idx, cur, h, tmp)
		if berr != nil {
			// Stranded there: that is where Close must find it now.
			t.index = idx
			t.place.Store(&tapPlace{name: tmp, netns: netnsSpec})
			return fail("set up there", errors.Join(err, fmt.Errorf("moving back: %w", berr)))
		}
		t.index = back
		return fail("set up there", errors.Join(err, restore(h, back, from.name)))
	}
	t.index = idx
	t.place.Store(&tapPlace{name: got, netns: netnsSpec})
	return nil
}

// attached reports whether the TAP's fd still has its netdev: a netdev
// deleted under it leaves the fd detached (TUNGETIFF fails with EBADFD).
func (t *TAP) attached() bool {
	ok := false
	_ = t.rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		ok = err == nil && unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr) == nil
	})
	return ok
}

// Follow points the TAP's netlink side (index, name, namespace) at
// its netdev where it now is, after someone else moved it to another
// namespace (ip link set DEV netns NS: a Watch's Moved event). Its fd, and
// so the data path, never changed. As MoveTo, it ends every Watch: watch
// again afterwards. The namespace is named as nsSpecOf names it.
func (t *TAP) Follow() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.moved)
	t.watchers.Wait()
	t.moved = make(chan struct{})
	fail := func(step string, err error) error {
		return fmt.Errorf("vnicd: TAP %s: follow it to its new namespace: %s: %w", t.Name(), step, err)
	}
	if t.closed.Load() {
		return fail("closed", os.ErrClosed)
	}
	ns, name, err := t.netdevNS()
	if err != nil {
		return fail("ask the fd", err)
	}
	defer ns.Close()
	h, err := nlutil.Handle(ns, netlinkTimeout)
	if err != nil {
		return fail("netlink in netns", err)
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return fail("find "+name, err)
	}
	t.index = l.Attrs().Index
	t.place.Store(&tapPlace{name: name, netns: nsSpecOf(ns)})
	return nil
}

// maxNetnsNames bounds the names nsSpecOf looks through.
const maxNetnsNames = 4096

// nsSpecOf names ns as Config.NetNS does: "" for the caller's own, its
// name under netnsDir when it has one. A namespace with neither has no
// name that lasts (the TAP keeps no handle of it): it is named as
// /proc/PID/ns/net shows it, net:[INODE], which names no namespace to
// open (it fails as a name not under netnsDir would).
func nsSpecOf(ns netns.NsHandle) string {
	if own, err := currentNS(); err == nil {
		same := own.Equal(ns)
		own.Close()
		if same {
			return ""
		}
	}
	var st unix.Stat_t
	if unix.Fstat(int(ns), &st) == nil {
		if d, err := os.Open(netnsDir); err == nil {
			names, _ := d.Readdirnames(maxNetnsNames)
			d.Close()
			for _, n := range names {
				var s unix.Stat_t
				if unix.Stat(netnsDir+"/"+n, &s) == nil && s.Dev == st.Dev && s.Ino == st.Ino {
					return n
				}
			}
		}
	}
	return fmt.Sprintf("%s%d]", unnamedNetNSPrefix, st.Ino)
}

// unnamedNetNSPrefix starts nsSpecOf's name of a namespace without a name.
const unnamedNetNSPrefix = "net:["

// IsUnnamedNetNS reports whether spec is nsSpecOf's name of a namespace
// without a name: nothing to open, nothing that outlives the namespace.
func IsUnnamedNetNS(spec string) bool { return strings.HasPrefix(spec, unnamedNetNSPrefix) }

// relocate moves the netdev at idx (as from sees it) into the namespace
// toNS, which to is a handle of, under the name tmp, and returns its index
// there. The netdev is down afterwards; on error it has not moved.
func relocate(from *netlink.Handle, idx int, toNS netns.NsHandle, to *netlink.Handle, tmp string) (int, error) {
	l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}}
	if err := from.LinkSetDown(l); err != nil {
		return 0, fmt.Errorf("set down: %w", err)
	}
	if err := from.LinkSetName(l, tmp); err != nil {
		return 0, fmt.Errorf("rename to %s: %w", tmp, err)
	}
	if err := from.LinkSetNsFd(l, int(toNS)); err != nil {
		return 0, fmt.Errorf("change namespace: %w", err)
	}
	nl, err := to.LinkByName(tmp)
	if err != nil {
		return 0, fmt.Errorf("find the moved netdev: %w", err)
	}
	return nl.Attrs().Index, nil
}

// settle names the (down) netdev at idx, sets it up and adds addrs; it
// returns the name the kernel gave (a %d filled in). On error the netdev is
// down, under its new name or its old one.
func settle(h *netlink.Handle, idx int, name string, addrs []netip.Prefix) (string, error) {
	l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}}
	if err := h.LinkSetName(l, name); err != nil {
		return "", fmt.Errorf("rename to %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return "", fmt.Errorf("set up: %w", err)
	}
	for _, p := range addrs {
		if err := h.AddrAdd(l, nlutil.Addr(p)); err != nil {
			_ = h.LinkSetDown(l)
			return "", fmt.Errorf("add address %v: %w", p, err)
		}
	}
	nl, err := h.LinkByIndex(idx)
	if err != nil {
		return "", fmt.Errorf("find the renamed netdev: %w", err)
	}
	return nl.Attrs().Name, nil
}

// restore gives the netdev at idx its old name back and sets it up (the
// rollback of a failed move); it returns what failed, for the error.
func restore(h *netlink.Handle, idx int, name string) error {
	l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}}
	var errs []error
	if cur, err := h.LinkByIndex(idx); err == nil && cur.Attrs().Name != name {
		if err := h.LinkSetName(l, name); err != nil {
			errs = append(errs, fmt.Errorf("rollback: rename to %s: %w", name, err))
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		errs = append(errs, fmt.Errorf("rollback: set up: %w", err))
	}
	return errors.Join(errs...)
}

// SetPersist makes the TAP persistent (TUNSETPERSIST) with the alias tag on
// its netdev, or, with on false, not persistent and without an alias. A
// persistent TAP's netdev outlives the fd, and vnicd: Close leaves it where
// it is, carrier off, for Attach to take over (tag tells it that the
// netdev is the one it left).
func (t *TAP) SetPersist(on bool, tag string) error {
	if on && tag == "" {
		return fmt.Errorf("%w: a persistent TAP needs a tag", ErrBadConfig)
	}
	v := 0
	if on {
		v = 1
	}
	var ierr error
	if err := t.rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, v)
	}); err != nil {
		return fmt.Errorf("vnicd: TAP %s: set persist: %w", t.Name(), t.ioErr(err))
	}
	if ierr != nil {
		return fmt.Errorf("vnicd: TAP %s: set persist: %w", t.Name(), ierr)
	}
	t.persist.Store(on)
	if !on {
		tag = ""
	}
	return t.withLink("set alias", func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetAlias(l, tag) })
}

// Persistent reports whether the TAP is persistent (SetPersist).
func (t *TAP) Persistent() bool { return t.persist.Load() }

// Attach takes over the persistent TAP named cfg.Name in cfg.NetNS that
// an earlier TAP left there (SetPersist with tag): it opens a new fd on it,
// sets cfg.MAC and lowers its MTU to cfg.MTU if it is above (never raises
// it, as the kernel never raised a VNIC's MTU). Its administrative state,
// addresses and a lower MTU stay as they are: they belong to whoever uses
// the netdev there. It fails,
// changing nothing, when there is no such netdev, when it is not a TAP with
// alias tag (ErrNotOurs), or when another fd holds it (EBUSY; only a
// single-queue TAP: the kernel lets more fds attach to a multiqueue one).
// It takes cfg.Queues queues of a multiqueue TAP, and the one queue of a
// single-queue TAP, whatever cfg.Queues says. The TAP it returns is
// persistent.
//
// Its fds are opened in cfg.NetNS (TUNSETIFF finds a netdev by name only in
// the namespace /dev/net/tun was opened in), and the kernel's socket behind
// each holds that namespace: unlike a TAP Open made, an attached TAP in
// another namespace keeps it alive until Close, so its Watch never sees the
// namespace go (tapns.go).
func Attach(cfg Config, tag string) (*TAP, error) {
	fail := func(step string, err error) (*TAP, error) {
		return nil, fmt.Errorf("vnicd: attach TAP %s in %q: %s: %w", cfg.Name, cfg.NetNS, step, err)
	}
	if err := cfg.validate(); err != nil || cfg.Name == "" || strings.Contains(cfg.Name, "%") || tag == "" {
		return fail("check", errors.Join(err, ErrBadConfig))
	}
	ns, err := nsFor(cfg.NetNS)
	if err != nil {
		return fail("open netns", err)
	}
	h, err := nlutil.Handle(ns, netlinkTimeout)
	if err != nil {
		ns.Close()
		return fail("netlink", err)
	}
	release := func() {
		h.Close()
		ns.Close()
	}
	l, err := h.LinkByName(cfg.Name)
	if err != nil {
		release()
		return fail("find", err)
	}
	if l.Type() != "tuntap" || l.Attrs().Alias != tag {
		release()
		return fail("check", fmt.Errorf("%w (type %s, alias %q, want %q)", ErrNotOurs, l.Type(), l.Attrs().Alias, tag))
	}
	index := l.Attrs().Index
	// The fd is opened in the namespace: TUNSETIFF finds a netdev by name
	// in the namespace /dev/net/tun was opened in.
	var files []*os.File
	err = nlutil.Do(ns, func() (err error) {
		files, _, err = createTAP(cfg.Name, false, cfg.Queues)
		return err
	})
	if err != nil {
		release()
		return fail("open", err)
	}
	if cur, err := h.LinkByName(cfg.Name); err != nil || cur.Attrs().Index != index {
		for _, f := range files {
			f.Close() // a TAP the open made anew: not persistent, so this deletes it
		}
		release()
		return fail("open", fmt.Errorf("the netdev went away meanwhile: %w", errors.Join(err, os.ErrNotExist)))
	}
	t, err := tapFromFiles(files, cfg.Name)
	if err != nil {
		release()
		return fail("open", err)
	}
	defer release() // the TAP keeps neither (tapns.go)
	t.index = index
	t.place.Store(&tapPlace{name: cfg.Name, netns: cfg.NetNS})
	t.persist.Store(true)
	link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index}}
	var steps []error
	if cfg.MAC != ([6]byte{}) {
		if err := h.LinkSetHardwareAddr(link, cfg.MAC[:]); err != nil {
			steps = append(steps, fmt.Errorf("set MAC: %w", err))
		}
	}
	if cfg.MTU != 0 && l.Attrs().MTU > cfg.MTU {
		if err := h.LinkSetMTU(link, cfg.MTU); err != nil {
			steps = append(steps, fmt.Errorf("set MTU %d: %w", cfg.MTU, err))
		}
	}
	if err := h.LinkSetTxQLen(link, TxQueueLen); err != nil {
		steps = append(steps, fmt.Errorf("set txqueuelen: %w", err))
	}
	if err := errors.Join(steps...); err != nil {
		t.Close() // persistent: the netdev stays for another try
		return fail("configure", err)
	}
	return t, nil
}

// RemovePersistent deletes the netdev name in the namespace netnsSpec if
// it is a TAP whose alias match accepts: a persistent TAP that no vnicd
// will take over. No such namespace or netdev is not an error; another kind
// of netdev, or another alias, is ErrNotOurs and is left alone.
func RemovePersistent(netnsSpec, name string, match func(alias string) bool) error {
	ns, err := nsFor(netnsSpec)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("vnicd: remove TAP %s in %q: %w", name, netnsSpec, err)
	}
	defer ns.Close()
	h, err := nlutil.Handle(ns, netlinkTimeout)
	if err != nil {
		return fmt.Errorf("vnicd: remove TAP %s in %q: netlink: %w", name, netnsSpec, err)
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		return nil
	case err != nil:
		return fmt.Errorf("vnicd: remove TAP %s in %q: %w", name, netnsSpec, err)
	case l.Type() != "tuntap" || !match(l.Attrs().Alias):
		return fmt.Errorf("vnicd: remove TAP %s in %q: %w (type %s, alias %q)", name, netnsSpec, ErrNotOurs, l.Type(), l.Attrs().Alias)
	}
	if err := h.LinkDel(l); err != nil {
		return fmt.Errorf("vnicd: remove TAP %s in %q: %w", name, netnsSpec, err)
	}
	return nil
}
