//go:build linux

package tap_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// frameDev is a TAP or a queue of one.
type frameDev interface {
	Read(bufs [][]byte, sizes []int, offset int) (int, error)
	Write(bufs [][]byte, offset int) (int, error)
	BatchSize() int
}

// responder answers ARP and ICMP echo requests read from tap (as
// TestTAPFramesThroughKernel's), counting echo requests, until Read fails.
func responder(tp frameDev, echoes *atomic.Int32) <-chan error {
	done := make(chan error, 1)
	go func() {
		bufs, sizes := make([][]byte, tp.BatchSize()), make([]int, tp.BatchSize())
		for i := range bufs {
			bufs[i] = make([]byte, 1600)
		}
		for {
			n, err := tp.Read(bufs, sizes, 0)
			if err != nil {
				done <- err
				return
			}
			for i := range n {
				reply, kind := respond(bufs[i][:sizes[i]])
				if reply == nil {
					continue
				}
				if kind == "icmp" {
					echoes.Add(1)
				}
				if _, err := tp.Write([][]byte{reply}, 0); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	return done
}

func pingPeer(t *testing.T, ns *nstest.NS) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := ns.Exec(ctx, "ping", "-c", "1", "-W", "2", peerIP.String()); err != nil {
		t.Fatalf("ping from %s through the TAP: %v\n%s", ns.Name(), err, out)
	}
}

func linkIn(t *testing.T, ns *nstest.NS, name string) netlink.Link {
	t.Helper()
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatalf("%s in %s: %v", name, ns.Name(), err)
	}
	return l
}

// TestTAPMoveTo moves a TAP whose fd is in use from one namespace to another
// and back: the same fd carries frames wherever the netdev is, watches end
// with the move, a name clash leaves the netdev where and as it was.
func TestTAPMoveTo(t *testing.T) {
	nstest.RequireTools(t, "ip", "ping")
	home, pod := nstest.NewTAPNS(t, "mvhome"), nstest.NewTAPNS(t, "mvpod")
	tp := openTAP(t, home, 0, netip.PrefixFrom(tapIP, 24))
	name := tp.Name()
	var echoes atomic.Int32
	done := responder(tp, &echoes)
	pingPeer(t, home)

	// A failure after the netdev changed namespace (the second, duplicate,
	// address): it comes back home under its name, up, the kernel having
	// dropped its addresses on the round trip.
	p := netip.PrefixFrom(tapIP, 24)
	if err := tp.MoveTo(pod.Path(), "eth0", []netip.Prefix{p, p}); err == nil {
		t.Fatal("a move adding an address twice succeeded")
	}
	if l := linkIn(t, home, name); l.Attrs().Index != tp.Index() || l.Attrs().Flags&1 == 0 || tp.NetNS() != home.Name() {
		t.Errorf("after a failed move: link %+v, TAP index %d in %q", l.Attrs(), tp.Index(), tp.NetNS())
	}
	if _, err := pod.Netlink().LinkByName("eth0"); err == nil {
		t.Error("a failed move left eth0 in the pod")
	}

	events, err := tp.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events)
	if err := tp.MoveTo(pod.Path(), "eth0", []netip.Prefix{netip.PrefixFrom(tapIP, 24), tapIP6}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.After(time.Second); events != nil; { // closed by the move, without a Deleted event
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
			} else if ev.Deleted {
				t.Error("the watch saw the move as a deletion")
			}
		case <-deadline:
			t.Fatal("the watch still runs 1 s after the move")
		}
	}
	if tp.Name() != "eth0" || tp.NetNS() != pod.Path() {
		t.Errorf("after the move: %s in %q", tp.Name(), tp.NetNS())
	}
	l := linkIn(t, pod, "eth0")
	if l.Attrs().Index != tp.Index() || l.Attrs().Flags&1 == 0 || l.Attrs().HardwareAddr.String() != "02:00:5e:10:00:01" {
		t.Errorf("moved link %+v, TAP index %d", l.Attrs(), tp.Index())
	}
	if _, err := home.Netlink().LinkByName(name); err == nil {
		t.Errorf("%s is still in the old namespace", name)
	}
	pingPeer(t, pod)
	if echoes.Load() < 2 {
		t.Errorf("%d echo requests reached the fd; want one before and one after the move", echoes.Load())
	}
	events, err = tp.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); !ev.Up {
		t.Errorf("watch in the new namespace: %+v", ev)
	}
	if err := tp.SetMTU(1400); err != nil {
		t.Errorf("SetMTU after the move: %v", err)
	}

	// A name taken in the target: the move fails, the netdev stays as it
	// was, addresses and all.
	if _, err := home.Exec(context.Background(), "ip", "link", "add", "clash0", "type", "veth", "peer", "name", "clash1"); err != nil {
		t.Fatal(err)
	}
	if err := tp.MoveTo(home.Path(), "clash0", nil); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("a move onto a taken name: %v; want EEXIST", err)
	}
	l = linkIn(t, pod, "eth0")
	if l.Attrs().Index != tp.Index() || l.Attrs().Flags&1 == 0 || tp.Name() != "eth0" || tp.NetNS() != pod.Path() {
		t.Errorf("after a failed move: link %+v, TAP %s in %q index %d", l.Attrs(), tp.Name(), tp.NetNS(), tp.Index())
	}
	requireClosed(t, events)
	pingPeer(t, pod)

	// Back home, under its old name: the pod's addresses went with the move.
	if err := tp.MoveTo(home.Path(), name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pod.Netlink().LinkByName("eth0"); err == nil {
		t.Error("eth0 still in the pod")
	}
	addrs, err := home.Netlink().AddrList(linkIn(t, home, name), netlink.FAMILY_V4)
	if err != nil || len(addrs) != 0 {
		t.Errorf("addresses after moving home: %v, %v", addrs, err)
	}
	index := tp.Index()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("responder ended with %v", err)
	}
	requireGone(t, home, name, index)
}

// TestTAPPersistAttach leaves a persistent TAP in a namespace, with its
// addresses, and takes it over with a new fd, as a restarted vnicd does
// with a claimed port.
func TestTAPPersistAttach(t *testing.T) {
	nstest.RequireTools(t, "ip", "ping")
	pod := nstest.NewTAPNS(t, "persist")
	tp := openTAP(t, pod, 0, netip.PrefixFrom(tapIP, 24))
	name := tp.Name()
	if err := tp.SetPersist(true, ""); err == nil {
		t.Error("persistent without a tag")
	}
	if err := tp.SetPersist(true, "opavnic:test:vport0"); err != nil {
		t.Fatal(err)
	}
	if a := linkIn(t, pod, name).Attrs().Alias; a != "opavnic:test:vport0" {
		t.Errorf("alias %q", a)
	}
	index := tp.Index()
	tp.Close()
	l := linkIn(t, pod, name)
	if l.Attrs().Index != index || l.Attrs().OperState == netlink.OperUp {
		t.Errorf("persistent TAP after Close: %+v", l.Attrs())
	}

	cfg := tap.Config{Name: name, NetNS: pod.Name(), MAC: peerMAC, MTU: 1400}
	if _, err := tap.Attach(cfg, "opavnic:other:vport0"); !errors.Is(err, tap.ErrNotOurs) {
		t.Errorf("attach with another tag: %v", err)
	}
	if _, err := tap.Attach(tap.Config{Name: "nosuch0", NetNS: pod.Name()}, "opavnic:test:vport0"); err == nil {
		t.Error("attached to a netdev that does not exist")
	}
	if got := tuntaps(t, pod.Netlink()); len(got) != 1 {
		t.Errorf("TAPs after failed attaches: %v", got)
	}
	again, err := tap.Attach(cfg, "opavnic:test:vport0")
	if err != nil {
		t.Fatal(err)
	}
	if again.Index() != index || !again.Persistent() || again.NetNS() != pod.Name() {
		t.Errorf("attached TAP index %d persistent %v netns %q", again.Index(), again.Persistent(), again.NetNS())
	}
	l = linkIn(t, pod, name)
	if l.Attrs().HardwareAddr.String() != "02:00:5e:10:00:02" || l.Attrs().MTU != 1400 {
		t.Errorf("attached link %+v", l.Attrs())
	}
	if _, err := tap.Attach(cfg, "opavnic:test:vport0"); !errors.Is(err, unix.EBUSY) {
		t.Errorf("second attach while held: %v; want EBUSY", err)
	}
	// The netdev kept its address: the pod pings through the new fd.
	var echoes atomic.Int32
	done := responder(again, &echoes)
	pingPeer(t, pod)

	// Not persistent any more: Close deletes it.
	if err := again.SetPersist(false, ""); err != nil {
		t.Fatal(err)
	}
	if a := linkIn(t, pod, name).Attrs().Alias; a != "" {
		t.Errorf("alias %q after SetPersist(false)", a)
	}
	again.Close()
	<-done
	requireGone(t, pod, name, index)
}

func TestRemovePersistentTAP(t *testing.T) {
	nstest.RequireTools(t, "ip")
	pod := nstest.NewTAPNS(t, "rmpersist")
	tp := openTAP(t, pod, 0)
	name, index := tp.Name(), tp.Index()
	if err := tp.SetPersist(true, "opavnic:n:vport3"); err != nil {
		t.Fatal(err)
	}
	tp.Close()
	is := func(want string) func(string) bool { return func(a string) bool { return a == want } }
	if err := tap.RemovePersistent(pod.Path(), name, is("opavnic:n:vport4")); !errors.Is(err, tap.ErrNotOurs) {
		t.Errorf("another tag: %v", err)
	}
	if _, err := pod.Exec(context.Background(), "ip", "link", "add", "veth9", "type", "veth", "peer", "name", "veth9p"); err != nil {
		t.Fatal(err)
	}
	if err := tap.RemovePersistent(pod.Path(), "veth9", func(string) bool { return true }); !errors.Is(err, tap.ErrNotOurs) {
		t.Errorf("a veth: %v", err)
	}
	if err := tap.RemovePersistent(pod.Path(), name, is("opavnic:n:vport3")); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pod, name, index)
	if err := tap.RemovePersistent(pod.Path(), name, is("opavnic:n:vport3")); err != nil {
		t.Errorf("again: %v", err)
	}
	if err := tap.RemovePersistent(filepath.Join(t.TempDir(), "nons"), name, is("x")); err != nil {
		t.Errorf("no namespace: %v", err)
	}
}
