//go:build linux

package nstest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRunID(t *testing.T) {
	id := RunID()
	if len(id) != runIDLen || !strings.HasPrefix(id, runPrefix) {
		t.Fatalf("RunID() = %q, want %q + 6 base-36 digits", id, runPrefix)
	}
	if id != RunID() {
		t.Fatal("RunID changed within one process")
	}
	if pid, ok := pidOfRunID(id); !ok || pid != os.Getpid() {
		t.Fatalf("pidOfRunID(%q) = %d, %v; want %d", id, pid, ok, os.Getpid())
	}
	for _, tc := range []struct {
		name string
		id   string
		pid  int
		ok   bool
	}{
		{"pid 1", runIDFor(1, 35), 1, true},
		{"largest pid", runIDFor(1<<22, 0), 1 << 22, true},
		{"short", "ovt0001", 0, false},
		{"other prefix", "abc00010", 0, false},
		{"not base 36", "ovt00-010", 0, false},
		{"pid 0", "ovt000000", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, ok := pidOfRunID(tc.id)
			if pid != tc.pid || ok != tc.ok {
				t.Fatalf("pidOfRunID(%q) = %d, %v; want %d, %v", tc.id, pid, ok, tc.pid, tc.ok)
			}
		})
	}
}

func TestLinkName(t *testing.T) {
	a, b := LinkName("v"), LinkName("v")
	if a == b || !strings.HasPrefix(a, RunID()) || len(a) >= unix.IFNAMSIZ {
		t.Fatalf("LinkName gave %q, %q: want distinct names with the run id, under 16 bytes", a, b)
	}
}

// recorder is a testing.TB that records Skip and Fatal instead of ending
// the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)         { r.failed = fmt.Sprint(args...) }
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

func TestRequireTools(t *testing.T) {
	const missing = "no-such-tool-opavnic"
	for _, tc := range []struct {
		name     string
		ci, e2e  string
		wantFail bool
	}{
		{"skips by default", "", "", false},
		{"fails in CI", "true", "", true},
		{"fails when e2e is required", "", "1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv("OPAVNIC_REQUIRE_E2E", tc.e2e)
			var r recorder
			RequireTools(&r, "sh", missing)
			got := r.skipped
			if tc.wantFail {
				got = r.failed
			}
			if !strings.Contains(got, missing) || strings.Contains(got, "sh,") {
				t.Fatalf("skipped %q, failed %q; want the %s naming only %s", r.skipped, r.failed,
					map[bool]string{true: "failure", false: "skip"}[tc.wantFail], missing)
			}
			if (r.skipped != "") == (r.failed != "") {
				t.Fatalf("skipped %q and failed %q: want exactly one", r.skipped, r.failed)
			}
			r = recorder{}
			RequireTools(&r, "sh")
			if r.skipped != "" || r.failed != "" {
				t.Fatalf("all tools present, yet skipped %q, failed %q", r.skipped, r.failed)
			}
		})
	}
}

func TestRequireKernel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ci, req  string
		wantFail bool
	}{{"skips by default", "", "", false}, {"skips in CI", "true", "", false}, {"fails when required", "", "1", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv("OPAVNIC_REQUIRE_KERNEL", tc.req)
			t.Setenv("OPAVNIC_REQUIRE_E2E", "")
			var r recorder
			RequireKernel(&r, "sch_netem", errors.New("Unknown qdisc"))
			got := map[bool]string{false: r.skipped, true: r.failed}[tc.wantFail]
			if !strings.Contains(got, "sch_netem (Unknown qdisc)") || (r.skipped != "") == (r.failed != "") {
				t.Fatalf("skipped %q, failed %q", r.skipped, r.failed)
			}
			r = recorder{}
			RequireKernel(&r, "sch_netem", nil)
			if r.skipped != "" || r.failed != "" {
				t.Fatalf("no error, yet skipped %q, failed %q", r.skipped, r.failed)
			}
		})
	}
}

func TestRequireRoot(t *testing.T) {
	var r recorder
	t.Setenv("OPAVNIC_REQUIRE_E2E", "")
	RequireRoot(&r)
	if (os.Geteuid() == 0) != (r.skipped == "") || r.failed != "" {
		t.Fatalf("euid %d: skipped %q, failed %q", os.Geteuid(), r.skipped, r.failed)
	}
	if os.Geteuid() != 0 {
		r = recorder{}
		t.Setenv("OPAVNIC_REQUIRE_E2E", "1")
		RequireRoot(&r)
		if r.failed == "" {
			t.Fatal("OPAVNIC_REQUIRE_E2E=1 without root: want a failure, not a skip")
		}
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestNewNSLifecycle(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip", "sleep")
	var (
		path string
		pid  int
	)
	t.Run("make", func(t *testing.T) {
		ns := NewNS(t, "life")
		path = ns.Path()
		if ns.Name() != RunID()+"-life" || filepath.Base(path) != ns.Name() {
			t.Fatalf("Name %q, Path %q", ns.Name(), path)
		}
		lo, err := ns.Netlink().LinkByName("lo")
		if err != nil || lo.Attrs().RawFlags&unix.IFF_UP == 0 {
			t.Fatalf("lo in %s: %v, %v: want it up", ns.Name(), lo, err)
		}
		out, err := ns.Exec(context.Background(), "ip", "-o", "link", "show")
		if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Fatalf("links in a fresh namespace: %v\n%s\nwant only lo", err, out)
		}
		cmd, err := ns.Start(context.Background(), "sleep", "30")
		if err != nil {
			t.Fatal(err)
		}
		pid = cmd.Process.Pid
		// ip netns exec enters the namespace, then execs sleep.
		want := inode(t, path)
		deadline := time.Now().Add(2 * time.Second)
		for {
			var st unix.Stat_t
			err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st)
			if err == nil && st.Ino == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("started process %d never entered %s (%v)", pid, ns.Name(), err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace file %s after cleanup: %v, want it gone", path, err)
	}
	if pid != 0 && unix.Kill(pid, 0) != unix.ESRCH {
		t.Errorf("process %d started in the namespace outlived the cleanup", pid)
	}
}

// ping pings addr from ns once, trying up to three times: the machine is
// shared and the first packet waits for ARP or ND.
func ping(t *testing.T, ns *NS, addr netip.Addr) {
	t.Helper()
	var err error
	for range 3 {
		if _, err = ns.Exec(context.Background(), "ping", "-c", "1", "-W", "1", addr.String()); err == nil {
			return
		}
	}
	t.Fatal(err)
}

func TestVethPing(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip", "ping")
	a, b := NewNS(t, "pa"), NewNS(t, "pb")
	a4, b4 := netip.MustParsePrefix("10.201.0.1/24"), netip.MustParsePrefix("10.201.0.2/24")
	a6, b6 := netip.MustParsePrefix("fd00:201::1/64"), netip.MustParsePrefix("fd00:201::2/64")
	na, nb := Veth(t, a, b, a4, b4, 1400)
	Veth(t, a, b, a6, b6, 0)
	for _, c := range []struct {
		ns   *NS
		name string
	}{{a, na}, {b, nb}} {
		l, err := c.ns.Netlink().LinkByName(c.name)
		if err != nil || l.Attrs().MTU != 1400 {
			t.Fatalf("%s in %s: %v, %v; want MTU 1400", c.name, c.ns.Name(), l, err)
		}
	}
	ping(t, a, b4.Addr())
	ping(t, b, a4.Addr())
	ping(t, a, b6.Addr())
}

func TestBridgeThreeHosts(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip", "ping")
	var ms []Member
	for i := range 3 {
		ms = append(ms, Member{
			NS:   NewNS(t, fmt.Sprintf("h%d", i)),
			Addr: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 202, 0, byte(i + 1)}), 24),
		})
	}
	seg := Bridge(t, 0, ms...)
	if len(seg.Ifaces) != 3 {
		t.Fatalf("Ifaces %v, want 3", seg.Ifaces)
	}
	for i, from := range ms {
		for j, to := range ms {
			if i != j {
				ping(t, from.NS, to.Addr.Addr())
			}
		}
	}
}

func TestDoRestoresNamespace(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip")
	ns := NewNS(t, "do")
	want, orig := inode(t, ns.Path()), inode(t, "/proc/self/ns/net")
	for range 20 {
		var (
			tid    int
			inside unix.Stat_t
		)
		if err := ns.Do(func() error {
			tid = unix.Gettid()
			return unix.Stat("/proc/thread-self/ns/net", &inside)
		}); err != nil {
			t.Fatal(err)
		}
		if inside.Ino != want {
			t.Fatalf("inside Do the thread is in netns %d, want %d", inside.Ino, want)
		}
		// The thread lives on (an abandoned one would have exited) and is
		// back in the original namespace.
		if got := inode(t, fmt.Sprintf("/proc/self/task/%d/ns/net", tid)); got != orig {
			t.Fatalf("after Do thread %d is in netns %d, want %d", tid, got, orig)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		var st unix.Stat_t
		if unix.Stat("/proc/self/task/"+task.Name()+"/ns/net", &st) == nil && st.Ino == want {
			t.Errorf("thread %s left in %s", task.Name(), ns.Name())
		}
	}

	sentinel := errors.New("from f")
	if err := ns.Do(func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("Do returned %v, want f's error", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want f's panic", r)
			}
		}()
		_ = ns.Do(func() error { panic("boom") })
	}()
}

func TestSweep(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip", "sleep", "true")
	own := NewNS(t, "own")

	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = live.Process.Kill()
		_ = live.Wait()
	})
	deadPID := 0
	for range 3 {
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if !alive(c.Process.Pid) {
			deadPID = c.Process.Pid
			break
		}
	}
	if deadPID == 0 {
		t.Skip("could not find a dead pid: pids are being reused at once")
	}
	// Until our own sweep, no other test binary's sweep may take the dead
	// run's namespace (go test runs packages in parallel).
	unlock := lockSweeps()
	defer unlock()
	dead := runIDFor(deadPID, 7) + "-sweep"
	liveRun := runIDFor(live.Process.Pid, 7) + "-sweep"
	notARun := runPrefix + "notarun" + strconv.Itoa(os.Getpid()) + "-sweep" // unique to this run, never a run id
	for _, name := range []string{dead, liveRun, notARun} {
		if _, err := ip("netns", "add", name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := deleteNS(name); err != nil {
				t.Error(err)
			}
		})
	}
	// A crashed run leaves processes in its namespaces.
	orphan := exec.Command("ip", "netns", "exec", dead, "sleep", "30")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	orphanDone := make(chan struct{})
	go func() {
		_ = orphan.Wait()
		close(orphanDone)
	}()
	t.Cleanup(func() { _ = orphan.Process.Kill(); <-orphanDone })
	// Let ip enter the namespace and exec sleep before sweeping.
	deadIno := inode(t, netnsDir+"/"+dead)
	for deadline := time.Now().Add(2 * time.Second); ; {
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", orphan.Process.Pid), &st) == nil && st.Ino == deadIno {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan never entered the dead run's namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}

	removed, err := sweep()
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept %v", removed)
	if _, err := os.Stat(netnsDir + "/" + dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead run's namespace %s survived the sweep (%v)", dead, err)
	}
	for _, name := range []string{liveRun, notARun, own.Name()} {
		if _, err := os.Stat(netnsDir + "/" + name); err != nil {
			t.Errorf("sweep removed %s, which it must keep: %v", name, err)
		}
	}
	select {
	case <-orphanDone:
	case <-time.After(5 * time.Second):
		t.Error("the process in the dead run's namespace survived the sweep")
	}
}
