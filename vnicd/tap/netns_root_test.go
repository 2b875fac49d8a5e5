//go:build linux

package tap_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// TestOpenByPID places a TAP in the namespace of a process running there,
// named "pid:N".
func TestOpenByPID(t *testing.T) {
	ns := nstest.NewTAPNS(t, "pid")
	nstest.RequireTools(t, "ip", "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := startIn(t, ctx, ns)
	name := nstest.LinkName("t")
	tp, err := tap.Open(tap.Config{Name: name, MAC: tapMAC, NetNS: "pid:" + strconv.Itoa(pid)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Netlink().LinkByName(name); err != nil {
		t.Errorf("TAP not in %s (the namespace of pid %d): %v", ns.Name(), pid, err)
	}
	index := tp.Index()
	if err := tp.Remove(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, ns, name, index)
}

// startIn starts a long sleep in ns and returns its pid once the process is
// in ns (`ip netns exec` enters the namespace after it starts).
func startIn(t *testing.T, ctx context.Context, ns *nstest.NS) int {
	t.Helper()
	cmd, err := ns.Start(ctx, "sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	var want unix.Stat_t
	if err := unix.Stat(ns.Path(), &want); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid), &st); err == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not enter %s", cmd.Process.Pid, ns.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// threadNamespaces maps each OS thread of this process to the inode of its
// network namespace.
func threadNamespaces(t *testing.T) map[string]uint64 {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, p := range tasks {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue // the thread ended meanwhile
		}
		out[p] = st.Ino
	}
	return out
}

// TestNoThreadLeftInOtherNamespace creates and removes many TAPs in other
// namespaces, by name, path and pid, from many goroutines, and checks that
// every OS thread of the process is still in the process's own namespace.
func TestNoThreadLeftInOtherNamespace(t *testing.T) {
	nsA, nsB := nstest.NewTAPNS(t, "leakA"), nstest.NewTAPNS(t, "leakB")
	nstest.RequireTools(t, "ip", "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := startIn(t, ctx, nsB)
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		t.Fatal(err)
	}
	specs := []string{nsA.Name(), nsA.Path(), "pid:" + strconv.Itoa(pid), nsB.Path()}
	const workers, rounds = 4, 10
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range rounds {
				tp, err := tap.Open(tap.Config{Name: fmt.Sprintf("lk%d-%d", w, i), NetNS: specs[(w+i)%len(specs)]})
				if err != nil {
					errs <- err
					return
				}
				if err := tp.Remove(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	for task, ino := range threadNamespaces(t) {
		if ino != self.Ino {
			t.Errorf("%s is in namespace inode %d, not the process's %d", task, ino, self.Ino)
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		t.Fatal(err)
	}
}
