package tap_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// TestTAPNetnsDeleted: a TAP whose netdev is in a container's namespace
// does not keep that namespace alive. When the namespace's last reference
// goes (no process in it, `ip netns del`), the kernel destroys it: its veth
// peer in another namespace goes, the TAP's netdev goes with it, and a
// Watch of the TAP reports Deleted (the engine then takes the port down).
// Before, the TAP's namespace handle, netlink handle and watch socket held
// it forever.
func TestTAPNetnsDeleted(t *testing.T) {
	nstest.RequireTools(t, "ip")
	pod := nstest.NewTAPNS(t, "gone")
	keep := nstest.NewNS(t, "keep")
	// A veth from keep into pod, made by ip(8), so that the test holds
	// nothing in pod either (nstest's handles would).
	end, peer := nstest.LinkName("v"), nstest.LinkName("v")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", "-n", keep.Name(), "link", "add", end, "type", "veth",
		"peer", "name", peer, "netns", pod.Name()).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	tp, err := tap.Open(tap.Config{Name: nstest.LinkName("t"), MAC: tapMAC, NetNS: pod.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	events, err := tp.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); !ev.Up || ev.Deleted {
		t.Fatalf("first event %+v, want up", ev)
	}
	if _, err := tp.McastMACs(); err != nil { // a read in the namespace, released after
		t.Fatal(err)
	}
	if err := tp.SetMTU(1400); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.MTU != 1400 {
		t.Fatalf("after SetMTU: %+v", ev)
	}

	if out, err := exec.CommandContext(ctx, "ip", "netns", "del", pod.Name()).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	// The namespace's destruction runs in a kernel worker: wait for it,
	// bounded, on the two things it does.
	const within = 10 * time.Second
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	var last tap.LinkEvent
	for deleted := false; !deleted; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("watch ended without a Deleted event (last %+v)", last)
			}
			if ev.Err != nil || ev.Moved {
				t.Fatalf("event %+v, want Deleted", ev)
			}
			last, deleted = ev, ev.Deleted
		case <-deadline.C:
			t.Fatalf("no Deleted event within %v of deleting the netdev's namespace (last %+v): the namespace is kept alive", within, last)
		}
	}
	nstest.WaitLinkGone(t, keep, end, within, "its peer's namespace was deleted, and is kept alive")
	// The netdev is gone with its namespace: a new watch says so at once,
	// and the settings fail, clearly.
	again, err := tp.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, again); !ev.Deleted {
		t.Fatalf("a watch after the namespace's end: %+v, want Deleted", ev)
	}
	if err := tp.SetMTU(1300); err == nil {
		t.Error("SetMTU of a netdev gone with its namespace succeeded")
	}
	if err := tp.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
