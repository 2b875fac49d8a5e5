//go:build linux

package tap_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/race"
	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

var (
	tapMAC  = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x00, 0x02}
	tapIP   = netip.MustParseAddr("10.203.0.1")
	peerIP  = netip.MustParseAddr("10.203.0.2")
	tapIP6  = netip.MustParsePrefix("fd00:203::1/64")
)

// openTAP opens a TAP in ns (by name) and removes it on cleanup.
func openTAP(t testing.TB, ns *nstest.NS, mtu int, addrs ...netip.Prefix) *tap.TAP {
	t.Helper()
	tp, err := tap.Open(tap.Config{
		Name:      nstest.LinkName("t"),
		MAC:       tapMAC,
		MTU:       mtu,
		NetNS:     ns.Name(),
		Addresses: addrs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.Remove(); err != nil {
			t.Error(err)
		}
	})
	return tp
}

// tuntaps lists the TUN/TAP netdevs h sees, by name.
func tuntaps(t testing.TB, h *netlink.Handle) []string {
	t.Helper()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		if l.Type() == "tuntap" {
			names = append(names, l.Attrs().Name)
		}
	}
	return names
}

// tempTAPsHere lists the TAPs Open is moving (vnictmp*) in the test's
// own namespace; Open leaves none once it returns.
func tempTAPsHere(t testing.TB) []string {
	t.Helper()
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return slices.DeleteFunc(tuntaps(t, h), func(n string) bool { return !strings.HasPrefix(n, "vnictmp") })
}

func requireGone(t testing.TB, ns *nstest.NS, name string, index int) {
	t.Helper()
	var nf netlink.LinkNotFoundError
	if l, err := ns.Netlink().LinkByName(name); !errors.As(err, &nf) {
		t.Errorf("link %s in %s: %v, %v; want it gone", name, ns.Name(), l, err)
	}
	if l, err := ns.Netlink().LinkByIndex(index); !errors.As(err, &nf) {
		t.Errorf("link %d in %s: %v, %v; want it gone", index, ns.Name(), l, err)
	}
}

func TestOpenBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tap.Config
	}{
		{"name too long", tap.Config{Name: "abcdefghijklmnop"}},
		{"name with slash", tap.Config{Name: "a/b"}},
		{"name with space", tap.Config{Name: "a b"}},
		{"dot", tap.Config{Name: "."}},
		{"negative MTU", tap.Config{MTU: -1}},
		{"relative netns path", tap.Config{NetNS: "run/netns/x"}},
		{"invalid address", tap.Config{Addresses: []netip.Prefix{{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := tap.Open(tc.cfg)
			if !errors.Is(err, tap.ErrBadConfig) {
				if tp != nil {
					tp.Close()
				}
				t.Fatalf("Open = %v; want ErrBadConfig", err)
			}
		})
	}
}

func TestOpenPlacement(t *testing.T) {
	ns := nstest.NewTAPNS(t, "place")
	for _, tc := range []struct {
		name  string
		netns string
	}{
		{"by name", ns.Name()},
		{"by path", ns.Path()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tap.Config{
				Name:      nstest.LinkName("t"),
				MAC:       tapMAC,
				MTU:       9000,
				NetNS:     tc.netns,
				Addresses: []netip.Prefix{netip.PrefixFrom(tapIP, 24), tapIP6},
			}
			tp, err := tap.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Remove()
			if tp.Name() != cfg.Name || tp.BatchSize() != tap.BatchSize {
				t.Errorf("Name %q, BatchSize %d", tp.Name(), tp.BatchSize())
			}
			h := ns.Netlink()
			l, err := h.LinkByName(cfg.Name)
			if err != nil {
				t.Fatalf("TAP not in %s: %v", ns.Name(), err)
			}
			a := l.Attrs()
			if a.Index != tp.Index() || !bytes.Equal(a.HardwareAddr, tapMAC[:]) || a.MTU != 9000 ||
				a.RawFlags&unix.IFF_UP == 0 || l.Type() != "tuntap" {
				t.Errorf("link: index %d (TAP says %d), MAC %v, MTU %d, flags %#x, type %s; want %v, 9000, up, tuntap",
					a.Index, tp.Index(), a.HardwareAddr, a.MTU, a.RawFlags, l.Type(), net.HardwareAddr(tapMAC[:]))
			}
			if tt, ok := l.(*netlink.Tuntap); ok && tt.Mode != netlink.TUNTAP_MODE_TAP {
				t.Errorf("tuntap mode %v, want TAP", tt.Mode)
			}
			addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range cfg.Addresses {
				i := slices.IndexFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == want.String() })
				switch {
				case i < 0:
					t.Errorf("address %v missing; have %v", want, addrs)
				case addrs[i].Flags&unix.IFA_F_TENTATIVE != 0:
					t.Errorf("address %v is tentative (DAD not skipped)", want)
				}
			}
			if here := tempTAPsHere(t); len(here) != 0 {
				t.Errorf("temporary TAPs left in the test's namespace: %v", here)
			}

			index := tp.Index()
			if err := tp.Remove(); err != nil {
				t.Fatal(err)
			}
			requireGone(t, ns, cfg.Name, index)
			if err := tp.Remove(); err != nil {
				t.Errorf("second Remove: %v", err)
			}
		})
	}
}

func TestOpenCallerNamespace(t *testing.T) {
	ns := nstest.NewTAPNS(t, "here")
	var taps []*tap.TAP
	err := ns.Do(func() error {
		for range 2 {
			tp, err := tap.Open(tap.Config{})
			if err != nil {
				return err
			}
			taps = append(taps, tp)
		}
		return nil
	})
	for _, tp := range taps {
		t.Cleanup(func() { tp.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	// The netdevs are in the namespace the calling thread was in, named
	// from DefaultName; the TAPs work from any thread afterwards.
	if got := tuntaps(t, ns.Netlink()); !slices.Equal(got, []string{"vnic0", "vnic1"}) ||
		taps[0].Name() != "vnic0" || taps[1].Name() != "vnic1" {
		t.Fatalf("TAPs %q and %q, %s has %v; want vnic0 and vnic1", taps[0].Name(), taps[1].Name(), ns.Name(), got)
	}
	if err := taps[1].SetMTU(1400); err != nil {
		t.Fatal(err)
	}
	if l, err := ns.Netlink().LinkByName("vnic1"); err != nil || l.Attrs().MTU != 1400 {
		t.Fatalf("vnic1 after SetMTU(1400): %v, %v", l, err)
	}
	for _, tp := range taps {
		if err := tp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := tuntaps(t, ns.Netlink()); len(got) != 0 {
		t.Fatalf("TAPs left after Close: %v", got)
	}
}

func TestOpenRollback(t *testing.T) {
	ns := nstest.NewTAPNS(t, "rollback")
	nstest.RequireTools(t, "ip")
	// Names taken in the namespace: by a bridge, and by a persistent TAP,
	// which TUNSETIFF would attach to (and Close then delete) without
	// IFF_TUN_EXCL.
	taken := nstest.LinkName("b")
	attrs := netlink.NewLinkAttrs()
	attrs.Name = taken
	if err := ns.Netlink().LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
		t.Fatal(err)
	}
	persistent := nstest.LinkName("p")
	if _, err := ns.Exec(context.Background(), "ip", "tuntap", "add", "dev", persistent, "mode", "tap"); err != nil {
		t.Fatal(err)
	}
	addr := netip.PrefixFrom(tapIP, 24)
	for _, tc := range []struct {
		name string
		cfg  tap.Config
		step string // in the error
		// inNS opens the TAP from a thread in ns with NetNS "".
		inNS bool
	}{
		{"duplicate address", tap.Config{Addresses: []netip.Prefix{addr, addr}}, "add address", false},
		{"MTU above the TAP's maximum", tap.Config{MTU: 70000}, "set MTU", false},
		{"multicast MAC", tap.Config{MAC: [6]byte{0x01, 0x00, 0x5e, 0, 0, 1}}, "set MAC", false},
		{"name taken in the target", tap.Config{Name: taken}, "rename", false},
		{"no such netns", tap.Config{NetNS: nstest.RunID() + "-nosuchns"}, "open netns", false},
		{"name of a persistent TAP in the target", tap.Config{Name: persistent}, "rename", false},
		{"name of a persistent TAP in the caller's netns", tap.Config{Name: persistent}, "create", true},
		{"name of another netdev in the caller's netns", tap.Config{Name: "lo"}, "create", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.Name == "" {
				cfg.Name = nstest.LinkName("t")
			}
			if cfg.NetNS == "" && !tc.inNS {
				cfg.NetNS = ns.Name()
			}
			open := func() error {
				tp, err := tap.Open(cfg)
				if err == nil {
					tp.Close()
					return errors.New("Open succeeded")
				}
				return err
			}
			var err error
			if tc.inNS {
				err = ns.Do(open)
			} else {
				err = open()
			}
			if err == nil || !strings.Contains(err.Error(), tc.step) {
				t.Fatalf("Open: %v; want a failure at %q", err, tc.step)
			}
			t.Log(err)
			if got := tuntaps(t, ns.Netlink()); !slices.Equal(got, []string{persistent}) {
				t.Errorf("TAPs in %s: %v; want only the persistent %s", ns.Name(), got, persistent)
			}
			if here := tempTAPsHere(t); len(here) != 0 {
				t.Errorf("TAPs left in the test's namespace: %v", here)
			}
		})
	}
	for _, name := range []string{taken, persistent, "lo"} {
		if _, err := ns.Netlink().LinkByName(name); err != nil {
			t.Errorf("%s, whose name was taken, is gone: %v", name, err)
		}
	}
}

func TestTAPCloseUnblocks(t *testing.T) {
	ns := nstest.NewTAPNS(t, "close")
	tp := openTAP(t, ns, 0)
	name, index := tp.Name(), tp.Index()
	errc := readUntilError(tp)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := errWithin(t, errc, "Close"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("blocked Read returned %v, want os.ErrClosed", err)
	}
	t.Logf("Read returned %v after Close", time.Since(start))
	requireGone(t, ns, name, index)

	frame := make([]byte, 60)
	if _, err := tp.Write([][]byte{frame}, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if n, err := tp.Read([][]byte{frame}, []int{0}, 0); n != 0 || !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %d, %v", n, err)
	}
	for what, err := range map[string]error{
		"SetCarrier": tp.SetCarrier(true),
		"SetMTU":     tp.SetMTU(1400),
		"SetMAC":     tp.SetMAC(peerMAC),
	} {
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after Close: %v", what, err)
		}
	}
	if _, err := tp.IsUp(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("IsUp after Close: %v", err)
	}
	if _, err := tp.Watch(context.Background()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Watch after Close: %v", err)
	}
	if err := tp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTAPExternalDelete(t *testing.T) {
	ns := nstest.NewTAPNS(t, "extdel")
	tp := openTAP(t, ns, 0)
	events, err := tp.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); !ev.Up {
		t.Fatalf("first event %+v, want up", ev)
	}
	errc := readUntilError(tp)
	if _, err := ns.Exec(context.Background(), "ip", "link", "del", "dev", tp.Name()); err != nil {
		t.Fatal(err)
	}
	if err := errWithin(t, errc, "the netdev was deleted"); !errors.Is(err, unix.EBADFD) {
		t.Errorf("Read after the netdev was deleted: %v, want EBADFD", err)
	}
	// Deletion closes the netdev first: an event with Up false may come
	// before the one with Deleted.
	for i := 0; ; i++ {
		ev := nextEvent(t, events)
		if ev.Deleted {
			break
		}
		if i == 2 || ev.Up {
			t.Fatalf("event %+v, want Deleted", ev)
		}
	}
	requireClosed(t, events)
}

// readUntilError reads from tap, skipping what the kernel sends (IPv6
// router solicitations), until Read fails, and sends that error.
func readUntilError(tp *tap.TAP) <-chan error {
	errc := make(chan error, 1)
	go func() {
		bufs, sizes := [][]byte{make([]byte, 2048)}, make([]int, 1)
		for {
			if _, err := tp.Read(bufs, sizes, 0); err != nil {
				errc <- err
				return
			}
		}
	}()
	return errc
}

// errWithin waits at most 1 s after what happened for the reader's error.
func errWithin(t *testing.T, errc <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(time.Second):
		t.Fatalf("Read still blocked 1 s after %s", what)
		return nil
	}
}

// nextEvent waits at most 2 s for an event.
func nextEvent(t *testing.T, events <-chan tap.LinkEvent) tap.LinkEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("event channel closed")
		}
		if ev.Err != nil {
			t.Fatalf("watch failed: %v", ev.Err)
		}
		return ev
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2 s")
	}
	panic("unreachable")
}

// requireClosed waits at most 1 s for the channel to close.
func requireClosed(t *testing.T, events <-chan tap.LinkEvent) {
	t.Helper()
	deadline := time.After(time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("event channel still open 1 s on")
		}
	}
}

func TestTAPWatch(t *testing.T) {
	nstest.RequireTools(t, "ip")
	ns := nstest.NewTAPNS(t, "watch")
	ns.Netlink()
	fdsBefore := openFDs(t)
	tp := openTAP(t, ns, 1500)
	name := tp.Name()
	fdsTAP := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := tp.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev != (tap.LinkEvent{Up: true, MAC: tapMAC, MTU: 1500, Name: name}) {
		t.Fatalf("first event %+v, want the current state", ev)
	}
	ip := func(args ...string) {
		t.Helper()
		if _, err := ns.Exec(ctx, "ip", append([]string{"link", "set", "dev", tp.Name()}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	isUp := func(want bool) {
		t.Helper()
		if up, err := tp.IsUp(); up != want || err != nil {
			t.Fatalf("IsUp = %v, %v; want %v", up, err, want)
		}
	}
	userMAC := [6]byte{0x02, 0x00, 0x5e, 0x10, 0x00, 0x99}
	steps := []struct {
		name   string
		change func()
		want   tap.LinkEvent
	}{
		{"ip link set down", func() { ip("down"); isUp(false) }, tap.LinkEvent{Up: false, MAC: tapMAC, MTU: 1500, Name: name}},
		{"ip link set up", func() { ip("up"); isUp(true) }, tap.LinkEvent{Up: true, MAC: tapMAC, MTU: 1500, Name: name}},
		{"user sets the MAC", func() { ip("address", net.HardwareAddr(userMAC[:]).String()) }, tap.LinkEvent{Up: true, MAC: userMAC, MTU: 1500, Name: name}},
		{"SetMAC", func() {
			if err := tp.SetMAC(tapMAC); err != nil {
				t.Fatal(err)
			}
		}, tap.LinkEvent{Up: true, MAC: tapMAC, MTU: 1500, Name: name}},
		{"SetMTU", func() {
			if err := tp.SetMTU(1400); err != nil {
				t.Fatal(err)
			}
		}, tap.LinkEvent{Up: true, MAC: tapMAC, MTU: 1400, Name: name}},
		// A carrier change is no event: Up is IFF_UP, not the carrier.
		{"carrier off, then down", func() {
			if err := tp.SetCarrier(false); err != nil {
				t.Fatal(err)
			}
			ip("down")
		}, tap.LinkEvent{Up: false, MAC: tapMAC, MTU: 1400, Name: name}},
	}
	for _, s := range steps {
		s.change()
		if ev := nextEvent(t, events); ev != s.want {
			t.Fatalf("after %s: event %+v, want %+v", s.name, ev, s.want)
		}
	}
	cancel()
	requireClosed(t, events)
	if leaked := newFDs(t, fdsTAP); len(leaked) > 0 {
		t.Errorf("fds left open by the ended watch: %v", leaked)
	}

	// Close ends a watch too, and releases all the TAP had.
	events, err = tp.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Up {
		t.Fatalf("first event of a second watch %+v, want down", ev)
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	requireClosed(t, events)
	if leaked := newFDs(t, fdsBefore); len(leaked) > 0 {
		t.Errorf("fds left open after Close: %v", leaked)
	}
}

// openFDs returns the process's open fds, each as "number -> target".
func openFDs(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[string]bool{}
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			fds[e.Name()+" -> "+target] = true
		}
	}
	return fds
}

// newFDs returns the fds open now that were not in before. (Others may
// have closed meanwhile: the runtime and earlier tests' finalizers.)
func newFDs(t *testing.T, before map[string]bool) []string {
	t.Helper()
	var added []string
	for fd := range openFDs(t) {
		if !before[fd] {
			added = append(added, fd)
		}
	}
	return added
}

func TestTAPCarrier(t *testing.T) {
	ns := nstest.NewTAPNS(t, "carrier")
	tp := openTAP(t, ns, 0)
	for _, on := range []bool{false, true, false} {
		if err := tp.SetCarrier(on); err != nil {
			t.Fatal(err)
		}
		l, err := ns.Netlink().LinkByIndex(tp.Index())
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0; got != on {
			t.Fatalf("after SetCarrier(%v): LOWER_UP %v", on, got)
		}
		if up, err := tp.IsUp(); !up || err != nil {
			t.Fatalf("IsUp = %v, %v: the carrier must not change IFF_UP", up, err)
		}
	}
}

// Frames, built by hand (Ethernet II, IPv4, ARP, ICMP).

const (
	etherARP  = 0x0806
	etherIPv4 = 0x0800
)

func ethernet(dst, src [6]byte, etherType uint16, payload []byte) []byte {
	f := append(append(dst[:], src[:]...), byte(etherType>>8), byte(etherType))
	return append(f, payload...)
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// icmpEcho builds an IPv4 ICMP echo (typ 8 request, 0 reply) frame of
// frameLen bytes.
func icmpEcho(dstMAC, srcMAC [6]byte, src, dst netip.Addr, typ byte, id, seq uint16, frameLen int) []byte {
	ipLen := frameLen - 14
	p := make([]byte, ipLen)
	p[0], p[8], p[9] = 0x45, 64, 1 // version/IHL, TTL, protocol ICMP
	binary.BigEndian.PutUint16(p[2:], uint16(ipLen))
	s4, d4 := src.As4(), dst.As4()
	copy(p[12:], s4[:])
	copy(p[16:], d4[:])
	binary.BigEndian.PutUint16(p[10:], checksum(p[:20]))
	icmp := p[20:]
	icmp[0] = typ
	binary.BigEndian.PutUint16(icmp[4:], id)
	binary.BigEndian.PutUint16(icmp[6:], seq)
	for i := 8; i < len(icmp); i++ {
		icmp[i] = byte(i)
	}
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return ethernet(dstMAC, srcMAC, etherIPv4, p)
}

// respond answers, as the neighbour peerIP at peerMAC, an ARP request or an
// ICMP echo request in frame f; it returns nil for any other frame.
func respond(f []byte) (reply []byte, kind string) {
	if len(f) < 14 {
		return nil, ""
	}
	var src [6]byte
	copy(src[:], f[6:12])
	p := f[14:]
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherARP:
		// htype 1, ptype IPv4, op 1 (request), target protocol address peerIP.
		if len(p) < 28 || binary.BigEndian.Uint16(p[6:]) != 1 || netip.AddrFrom4([4]byte(p[24:28])) != peerIP {
			return nil, ""
		}
		a := make([]byte, 28)
		copy(a, p[:6])
		binary.BigEndian.PutUint16(a[6:], 2) // reply
		pip := peerIP.As4()
		copy(a[8:], peerMAC[:])
		copy(a[14:], pip[:])
		copy(a[18:], p[8:18]) // the asker's MAC and IP
		return ethernet(src, peerMAC, etherARP, a), "arp"
	case etherIPv4:
		if len(p) < 28 || p[9] != 1 || p[20] != 8 || netip.AddrFrom4([4]byte(p[16:20])) != peerIP {
			return nil, ""
		}
		id, seq := binary.BigEndian.Uint16(p[24:]), binary.BigEndian.Uint16(p[26:])
		reply := icmpEcho(src, peerMAC, peerIP, netip.AddrFrom4([4]byte(p[12:16])), 0, id, seq, len(f))
		copy(reply[14+28:], p[28:]) // the request's payload
		icmp := reply[14+20:]
		icmp[2], icmp[3] = 0, 0
		binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
		return reply, "icmp"
	}
	return nil, ""
}

// TestTAPFramesThroughKernel runs ping in the namespace against a neighbour
// that only the test plays: the kernel's ARP request and echo request must
// come out of Read, and the replies the test writes must reach ping.
func TestTAPFramesThroughKernel(t *testing.T) {
	nstest.RequireTools(t, "ping")
	ns := nstest.NewTAPNS(t, "frames")
	tp := openTAP(t, ns, 0, netip.PrefixFrom(tapIP, 24))
	var sawARP, sawICMP atomic.Bool
	done := make(chan error, 1)
	go func() {
		bufs, sizes := make([][]byte, tp.BatchSize()), make([]int, tp.BatchSize())
		for i := range bufs {
			bufs[i] = make([]byte, 24+1600)
		}
		for {
			n, err := tp.Read(bufs, sizes, 24)
			if err != nil {
				done <- err
				return
			}
			for i := range n {
				reply, kind := respond(bufs[i][24 : 24+sizes[i]])
				if reply == nil {
					continue
				}
				(map[string]*atomic.Bool{"arp": &sawARP, "icmp": &sawICMP})[kind].Store(true)
				if _, err := tp.Write([][]byte{reply}, 0); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ns.Exec(ctx, "ping", "-c", "1", "-W", "2", peerIP.String())
	if err != nil {
		t.Errorf("ping through the TAP: %v", err)
	}
	if !sawARP.Load() || !sawICMP.Load() {
		t.Errorf("read ARP request %v, echo request %v; want both", sawARP.Load(), sawICMP.Load())
	}
	tp.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("responder ended with %v", err)
	}
	t.Logf("%s", out)
}

// TestTAPWriteReachesPacketSocket checks that a written frame arrives in the
// namespace byte for byte, at an AF_PACKET socket on the netdev.
func TestTAPWriteReachesPacketSocket(t *testing.T) {
	ns := nstest.NewTAPNS(t, "raw")
	tp := openTAP(t, ns, 0)
	const proto = 0x88b5 // IEEE local experimental
	htons := func(v uint16) uint16 { return v<<8 | v>>8 }
	var fd int
	if err := ns.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(proto)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: tp.Index()}); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2}); err != nil {
		t.Fatal(err)
	}
	payload := []byte("opavnic: a frame written to the TAP")
	frame := ethernet([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, peerMAC, proto, payload)
	headroom := 24
	buf := append(make([]byte, headroom), frame...)
	if n, err := tp.Write([][]byte{buf}, headroom); n != 1 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got := make([]byte, 2048)
	n, _, err := unix.Recvfrom(fd, got, 0)
	if err != nil {
		t.Fatalf("packet socket: %v", err)
	}
	if !bytes.Equal(got[:n], frame) {
		t.Fatalf("packet socket got\n% x\nwant\n% x", got[:n], frame)
	}

	// A runt is refused with the kernel's EINVAL, and Write says which.
	n, err = tp.Write([][]byte{buf, buf[:headroom+10], buf}, headroom)
	if n != 1 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Write with a runt second = %d, %v; want 1, EINVAL", n, err)
	}
}

// echoLab opens a TAP with IPv6 off from the start (no router
// solicitation or MLD report to read) and a permanent neighbour, so that
// each echo request written gets exactly one frame to read: its reply.
func echoLab(t testing.TB, mtu int) *tap.TAP {
	t.Helper()
	ns := nstest.NewTAPNS(t, "echo"+strconv.Itoa(mtu))
	// Netdevs that arrive in the namespace take its defaults.
	if err := ns.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
	}); err != nil {
		t.Fatal(err)
	}
	tp := openTAP(t, ns, mtu, netip.PrefixFrom(tapIP, 24))
	if err := ns.Do(func() error {
		v, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + tp.Name() + "/disable_ipv6")
		if err == nil && string(v) != "1\n" {
			err = errors.New("IPv6 is on: disable_ipv6 = " + string(v))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink().NeighAdd(&netlink.Neigh{
		LinkIndex:    tp.Index(),
		State:        netlink.NUD_PERMANENT,
		IP:           peerIP.AsSlice(),
		HardwareAddr: peerMAC[:],
	}); err != nil {
		t.Fatal(err)
	}
	// If a reply never comes, closing the TAP ends the blocked Read.
	watchdog := time.AfterFunc(30*time.Second, func() { tp.Close() })
	t.Cleanup(func() { watchdog.Stop() })
	return tp
}

// echo writes req and reads until it has one frame back; it returns false
// once the TAP is closed.
func echo(tp *tap.TAP, req, rbufs [][]byte, sizes []int, headroom int) bool {
	if _, err := tp.Write(req, headroom); err != nil {
		return false
	}
	n, err := tp.Read(rbufs, sizes, headroom)
	return n == 1 && err == nil
}

func TestTAPNoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	tp := echoLab(t, 0)
	const headroom = 24
	req := [][]byte{append(make([]byte, headroom), icmpEcho(tapMAC, peerMAC, peerIP, tapIP, 8, 1, 1, 98)...)}
	rbufs, sizes := [][]byte{make([]byte, headroom+1600)}, []int{0}
	if !echo(tp, req, rbufs, sizes, headroom) {
		t.Fatal("no echo reply")
	}
	reply := rbufs[0][headroom : headroom+sizes[0]]
	if len(reply) != 98 || reply[14+20] != 0 || !bytes.Equal(reply[:6], peerMAC[:]) {
		t.Fatalf("reply % x: want a 98-byte echo reply to the neighbour", reply)
	}
	ok := true
	allocs := testing.AllocsPerRun(200, func() { ok = ok && echo(tp, req, rbufs, sizes, headroom) })
	if !ok {
		t.Fatal("an echo went unanswered")
	}
	if allocs != 0 {
		t.Fatalf("Write+Read allocate %v times per frame pair, want 0", allocs)
	}
}

// TestTAPReadBatches checks that one Read returns every frame the kernel
// has queued.
func TestTAPReadBatches(t *testing.T) {
	tp := echoLab(t, 0)
	const frames, headroom = 10, 24
	var reqs [][]byte
	for i := range frames {
		reqs = append(reqs, append(make([]byte, headroom), icmpEcho(tapMAC, peerMAC, peerIP, tapIP, 8, 1, uint16(i), 98)...))
	}
	if n, err := tp.Write(reqs, headroom); n != frames || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	rbufs, sizes := make([][]byte, tp.BatchSize()), make([]int, tp.BatchSize())
	for i := range rbufs {
		rbufs[i] = make([]byte, headroom+1600)
	}
	// The replies are queued by the time Write returns (the kernel answers
	// in the writer's softirq); allow a few Reads on a busy machine.
	var got []uint16
	for range frames {
		n, err := tp.Read(rbufs, sizes, headroom)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Read returned %d frames", n)
		for i := range n {
			f := rbufs[i][headroom : headroom+sizes[i]]
			if len(f) != 98 || binary.BigEndian.Uint16(f[12:]) != etherIPv4 || f[14+20] != 0 {
				t.Fatalf("frame %d of the batch is no echo reply: % x", i, f)
			}
			got = append(got, binary.BigEndian.Uint16(f[14+20+6:]))
		}
		if len(got) >= frames {
			break
		}
	}
	if want := []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("echo replies for seqs %v, want %v in order", got, want)
	}
}

// TestTAPReadCutsLongFrames pins the kernel behaviour the Device contract
// states: a frame longer than the buffer comes out cut to it.
func TestTAPReadCutsLongFrames(t *testing.T) {
	tp := echoLab(t, 0)
	if _, err := tp.Write([][]byte{icmpEcho(tapMAC, peerMAC, peerIP, tapIP, 8, 1, 1, 1000)}, 0); err != nil {
		t.Fatal(err)
	}
	bufs, sizes := [][]byte{make([]byte, 8+100)}, []int{0}
	if n, err := tp.Read(bufs, sizes, 8); n != 1 || err != nil || sizes[0] != 100 {
		t.Fatalf("Read of a 1000-byte reply into 100 bytes = %d, %v, size %d; want 1 frame of 100", n, err, sizes[0])
	}
}

// BenchmarkTAPEcho measures a frame's round trip through the kernel: a
// write of an echo request and a read of the reply.
func BenchmarkTAPEcho(b *testing.B) {
	for _, size := range []int{64, 512, 1500, 9000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			tp := echoLab(b, 9000)
			const headroom = 24
			req := [][]byte{append(make([]byte, headroom), icmpEcho(tapMAC, peerMAC, peerIP, tapIP, 8, 1, 1, size)...)}
			rbufs, sizes := [][]byte{make([]byte, headroom+9100)}, []int{0}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if !echo(tp, req, rbufs, sizes, headroom) {
					b.Fatal("no echo reply")
				}
			}
		})
	}
}

// TestTAPMcastMACs reads the netdev's multicast list as `ip maddr` shows
// it, follows `ip maddr add/del`, and refuses after Close.
func TestTAPMcastMACs(t *testing.T) {
	nstest.RequireTools(t, "ip")
	ns := nstest.NewTAPNS(t, "mcast")
	tp := openTAP(t, ns, 1500, tapIP6)
	ctx := context.Background()
	// ipMaddr is the list `ip maddr show dev` prints (its "link" lines,
	// from the same /proc/net/dev_mcast, in the same order).
	ipMaddr := func() [][6]byte {
		t.Helper()
		out, err := ns.Exec(ctx, "ip", "maddr", "show", "dev", tp.Name())
		if err != nil {
			t.Fatal(err)
		}
		var l [][6]byte
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "link" {
				hw, err := net.ParseMAC(f[1])
				if err != nil {
					t.Fatal(err)
				}
				l = append(l, [6]byte(hw))
			}
		}
		return l
	}
	group := [6]byte{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}
	// check compares the two readings; the kernel joins IPv6 groups in the
	// background (solicited-node after DAD), so a difference is read again,
	// for at most 3 s, until the list holds still.
	check := func(step string, wantGroup bool) {
		t.Helper()
		var got, want [][6]byte
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if got, err = tp.McastMACs(); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if want = ipMaddr(); slices.Equal(got, want) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: McastMACs %x, ip maddr %x", step, got, want)
		}
		if slices.Contains(got, group) != wantGroup {
			t.Fatalf("%s: %x: group %x present %v, want %v", step, got, group, !wantGroup, wantGroup)
		}
	}
	check("up with an IPv6 address", false)
	if l, _ := tp.McastMACs(); !slices.Contains(l, [6]byte{0x33, 0x33, 0, 0, 0, 1}) {
		t.Fatalf("%x: no all-nodes group 33:33:00:00:00:01 on an up IPv6 netdev", l)
	}
	maddr := func(op string) {
		t.Helper()
		if _, err := ns.Exec(ctx, "ip", "maddr", op, net.HardwareAddr(group[:]).String(), "dev", tp.Name()); err != nil {
			t.Fatal(err)
		}
	}
	maddr("add")
	check("ip maddr add", true)
	maddr("del")
	check("ip maddr del", false)
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.McastMACs(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
