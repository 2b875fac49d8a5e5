//go:build linux

package nstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/var/run/netns"

// runPrefix starts every run id; runIDLen is the length of one: the prefix,
// the owner's pid in 5 base-36 digits (pid_max is at most 2^22) and one
// base-36 digit of nonce, so that a reused pid rarely gets the same id.
const (
	runPrefix = "ovt"
	runIDLen  = len(runPrefix) + 5 + 1
)

// ipTimeout bounds each ip(8) command the lab runs for itself.
const ipTimeout = 10 * time.Second

var (
	runIDOnce sync.Once
	runID     string
	linkSeq   atomic.Uint32
)

// RunID returns this process's run id, e.g. "ovt0009fk": "ovt", the pid in
// 5 base-36 digits, one digit of nonce. The names of the lab's namespaces
// start with it, so Sweep can tell whose they are.
func RunID() string {
	runIDOnce.Do(func() {
		runID = runIDFor(os.Getpid(), int(time.Now().UnixNano()%36))
	})
	return runID
}

// runIDFor returns the run id of pid with nonce (0-35).
func runIDFor(pid, nonce int) string {
	p := strconv.FormatInt(int64(pid), 36)
	return runPrefix + strings.Repeat("0", max(0, 5-len(p))) + p + strconv.FormatInt(int64(nonce), 36)
}

// pidOfRunID returns the pid a run id encodes.
func pidOfRunID(id string) (int, bool) {
	if len(id) != runIDLen || !strings.HasPrefix(id, runPrefix) {
		return 0, false
	}
	if _, err := strconv.ParseUint(id[runIDLen-1:], 36, 8); err != nil {
		return 0, false
	}
	pid, err := strconv.ParseUint(id[len(runPrefix):runIDLen-1], 36, 32)
	if err != nil || pid == 0 {
		return 0, false
	}
	return int(pid), true
}

// LinkName returns a link name unique to this run: the run id, kind (one or
// two characters saying what the link is) and a sequence number, at most 15
// bytes.
func LinkName(kind string) string {
	name := RunID() + kind + strconv.FormatUint(uint64(linkSeq.Add(1)), 36)
	if len(name) >= unix.IFNAMSIZ {
		panic(fmt.Sprintf("nstest: link name %q too long (kind %q)", name, kind))
	}
	return name
}

// strict reports whether a test must fail rather than skip when the machine
// lacks what it needs.
func strict() bool {
	return os.Getenv("CI") == "true" || os.Getenv("OPAVNIC_REQUIRE_E2E") == "1"
}

// RequireRoot skips t unless the process runs as root, which the lab needs
// (CAP_SYS_ADMIN for namespaces, CAP_NET_ADMIN for links). With
// OPAVNIC_REQUIRE_E2E=1 it fails t instead. CI=true alone still skips, so
// that `go test ./...` passes for an unprivileged user in CI.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	msg := fmt.Sprintf("nstest: needs root to build network namespaces (running as uid %d)", os.Geteuid())
	if os.Getenv("OPAVNIC_REQUIRE_E2E") == "1" {
		t.Fatal(msg + "; OPAVNIC_REQUIRE_E2E=1 forbids skipping")
		return
	}
	t.Skip(msg)
}

// RequirePaths skips t, naming the missing ones, unless every path exists
// (a device such as /dev/net/tun, say). With CI=true or
// OPAVNIC_REQUIRE_E2E=1 it fails t instead.
func RequirePaths(t testing.TB, paths ...string) {
	t.Helper()
	var missing []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	require(t, "missing paths", missing)
}

// RequireTools skips t, naming the missing ones, unless every tool is on
// PATH. With CI=true or OPAVNIC_REQUIRE_E2E=1 it fails t instead.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	require(t, "missing tools", missing)
}

// RequireKernel skips t, naming feature and err, when err (what trying
// feature gave) is not nil: the kernel lacks a qdisc or a link type, say.
// Unlike a missing tool, no script can install a kernel module on a machine
// whose kernel was built without it (CI's included), so CI=true still skips;
// OPAVNIC_REQUIRE_KERNEL=1 fails t instead, for machines known to have it.
// The caller decides which errors mean "missing": others are failures of
// their own.
func RequireKernel(t testing.TB, feature string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("nstest: missing kernel support: %s (%v)", feature, err)
	if os.Getenv("OPAVNIC_REQUIRE_KERNEL") == "1" {
		t.Fatal(msg + "; OPAVNIC_REQUIRE_KERNEL=1 forbids skipping")
		return
	}
	t.Skip(msg)
}

// require skips or, when strict, fails t if anything is missing.
func require(t testing.TB, what string, missing []string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	msg := "nstest: " + what + ": " + strings.Join(missing, ", ")
	if strict() {
		t.Fatal(msg + "; CI=true or OPAVNIC_REQUIRE_E2E=1 forbids skipping")
		return
	}
	t.Skip(msg)
}

// Sweep removes the namespaces of earlier runs whose owning process is
// dead, killing whatever still runs in them, and returns their names. It
// never touches a namespace whose owner is alive (this run's included) or
// whose name is not a run id's.
func Sweep() ([]string, error) {
	defer lockSweeps()()
	return sweep()
}

// sweepLockPath is a lock that makes the sweeps of concurrent test binaries
// (go test runs packages in parallel) take turns, so that TestSweep can make
// a dead run's namespace that no other binary sweeps before it has looked.
const sweepLockPath = "/run/opavnic-nstest-sweep.lock"

// sweepLockWait bounds the wait for the lock. A sweep that cannot get it in
// time, or cannot open it, goes on without it: sweeping is idempotent, the
// lock only orders the sweeps.
const sweepLockWait = 5 * time.Second

// lockSweeps takes the sweep lock and returns what releases it (once).
func lockSweeps() (unlock func()) {
	f, err := os.OpenFile(sweepLockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	for deadline := time.Now().Add(sweepLockWait); ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return sync.OnceFunc(func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			})
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			f.Close()
			return func() {}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweep is Sweep without the lock.
func sweep() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nstest: sweep: %w", err)
	}
	var (
		removed []string
		errs    []error
	)
	for _, e := range entries {
		id, _, ok := strings.Cut(e.Name(), "-")
		if !ok || id == RunID() {
			continue
		}
		pid, ok := pidOfRunID(id)
		if !ok || alive(pid) {
			continue
		}
		if err := deleteNS(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// alive reports whether pid names a process (a zombie counts as alive).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

// deleteNS kills the processes in the named namespace and deletes it.
func deleteNS(name string) error {
	out, err := ip("netns", "pids", name)
	if err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
	if _, err := ip("netns", "delete", name); err != nil {
		if _, serr := os.Stat(netnsDir + "/" + name); errors.Is(serr, os.ErrNotExist) {
			return nil // someone else swept it first
		}
		return err
	}
	return nil
}

// ip runs ip(8) with args, bounded by ipTimeout.
func ip(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("nstest: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}
