//go:build linux

package tap_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// kernelQueues returns the TAP's queues as its namespace's sysfs lists them
// (tx-0, tx-1, ...): the fds attached.
func kernelQueues(t *testing.T, ns *nstest.NS, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ns.Exec(ctx, "ls", "/sys/class/net/"+name+"/queues")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(out), "tx-")
}

// respondAll runs a responder on every queue of tap; the channel gets each
// one's end.
func respondAll(tp *tap.TAP, echoes *atomic.Int32) []<-chan error {
	var done []<-chan error
	for i := range tp.Queues() {
		done = append(done, responder(tp.Queue(i).(*tap.Queue), echoes))
	}
	return done
}

// TestTAPQueues: a TAP made with three queues has three in the kernel, and
// frames the kernel sends through any of them are answered through it; a
// persistent multiqueue TAP is taken over with the queues asked for, a
// persistent single-queue one with its one queue; Close deletes the netdev.
func TestTAPQueues(t *testing.T) {
	nstest.RequireTools(t, "ip", "ping")
	pod := nstest.NewTAPNS(t, "queues")
	if _, err := tap.Open(tap.Config{Name: "bad0", NetNS: pod.Name(), Queues: tap.MaxQueues + 1}); !errors.Is(err, tap.ErrBadConfig) {
		t.Errorf("%d queues: %v, want ErrBadConfig", tap.MaxQueues+1, err)
	}
	tp, err := tap.Open(tap.Config{Name: nstest.LinkName("q"), MAC: tapMAC, NetNS: pod.Name(),
		Addresses: []netip.Prefix{netip.PrefixFrom(tapIP, 24)}, Queues: 3})
	if err != nil {
		t.Fatal(err)
	}
	name, index := tp.Name(), tp.Index()
	if tp.Queues() != 3 || kernelQueues(t, pod, name) != 3 {
		t.Fatalf("TAP with %d queues, the kernel's %d; want 3", tp.Queues(), kernelQueues(t, pod, name))
	}
	var echoes atomic.Int32
	done := respondAll(tp, &echoes)
	pingPeer(t, pod)

	// Persistent: taken over with two queues, then, held by none, with one.
	const tag = "opavnic:test:vport3"
	if err := tp.SetPersist(true, tag); err != nil {
		t.Fatal(err)
	}
	tp.Close()
	for _, d := range done {
		<-d
	}
	for _, want := range []int{2, 1} {
		again, err := tap.Attach(tap.Config{Name: name, NetNS: pod.Name(), Queues: want}, tag)
		if err != nil {
			t.Fatalf("attach with %d queues: %v", want, err)
		}
		if again.Index() != index || again.Queues() != want || kernelQueues(t, pod, name) != want {
			t.Errorf("attached with %d queues: index %d (want %d), %d queues, the kernel's %d",
				want, again.Index(), index, again.Queues(), kernelQueues(t, pod, name))
		}
		done := respondAll(again, &echoes)
		pingPeer(t, pod)
		if want == 1 {
			if err := again.SetPersist(false, ""); err != nil {
				t.Fatal(err)
			}
		}
		again.Close()
		for _, d := range done {
			<-d
		}
	}
	requireGone(t, pod, name, index)

	// A persistent single-queue TAP asked for with two queues: one.
	single := openTAP(t, pod, 0, netip.PrefixFrom(tapIP, 24))
	sname, sindex := single.Name(), single.Index()
	if err := single.SetPersist(true, tag); err != nil {
		t.Fatal(err)
	}
	single.Close()
	again, err := tap.Attach(tap.Config{Name: sname, NetNS: pod.Name(), Queues: 2}, tag)
	if err != nil {
		t.Fatal(err)
	}
	if again.Queues() != 1 || kernelQueues(t, pod, sname) != 1 {
		t.Errorf("single-queue TAP attached with %d queues, the kernel's %d; want 1", again.Queues(), kernelQueues(t, pod, sname))
	}
	d := responder(again, &echoes)
	pingPeer(t, pod)
	if err := again.SetPersist(false, ""); err != nil {
		t.Fatal(err)
	}
	again.Close()
	<-d
	requireGone(t, pod, sname, sindex)
}

// TestTAPQueuesMove moves a multiqueue TAP whose queues are in use to
// another namespace: every queue's fd goes on carrying frames there, and
// the netdev keeps its queues.
func TestTAPQueuesMove(t *testing.T) {
	nstest.RequireTools(t, "ip", "ping")
	home, pod := nstest.NewTAPNS(t, "mqhome"), nstest.NewTAPNS(t, "mqpod")
	tp, err := tap.Open(tap.Config{Name: nstest.LinkName("q"), MAC: tapMAC, NetNS: home.Name(),
		Addresses: []netip.Prefix{netip.PrefixFrom(tapIP, 24)}, Queues: 2})
	if err != nil {
		t.Fatal(err)
	}
	var echoes atomic.Int32
	done := respondAll(tp, &echoes)
	pingPeer(t, home)
	if err := tp.MoveTo(pod.Path(), "eth0", []netip.Prefix{netip.PrefixFrom(tapIP, 24)}); err != nil {
		t.Fatal(err)
	}
	if n := kernelQueues(t, pod, "eth0"); n != 2 || tp.Queues() != 2 {
		t.Errorf("after the move: %d queues, the kernel's %d; want 2", tp.Queues(), n)
	}
	before := echoes.Load()
	pingPeer(t, pod)
	if echoes.Load() == before {
		t.Error("no echo request reached the TAP's queues after the move")
	}
	index := tp.Index()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range done {
		<-d
	}
	requireGone(t, pod, "eth0", index)
}
