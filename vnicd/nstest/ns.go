//go:build linux

package nstest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/opavnic/opavnic/vnicd/internal/nlutil"
)

// execTimeout bounds Exec when its context has no deadline.
const execTimeout = 60 * time.Second

// stopTimeout bounds how long a cleanup waits for a killed process.
const stopTimeout = 5 * time.Second

var suffixRE = regexp.MustCompile(`^[a-zA-Z0-9_.]{1,32}$`)

// NS is a named network namespace of the lab, removed when its test ends.
type NS struct {
	t    testing.TB
	name string

	mu sync.Mutex
	nl *netlink.Handle
}

// NewNS makes the namespace RunID()+"-"+suffix with loopback up, after
// sweeping dead runs' namespaces. On cleanup the processes in it are killed
// and it is deleted. suffix is 1 to 32 letters, digits, '_' or '.', and
// unique among the run's namespaces alive at the time (parallel tests pick
// different ones).
func NewNS(t testing.TB, suffix string) *NS {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "ip")
	if !suffixRE.MatchString(suffix) {
		t.Fatalf("nstest: bad namespace suffix %q", suffix)
	}
	if removed, err := Sweep(); err != nil {
		t.Logf("nstest: %v", err)
	} else if len(removed) > 0 {
		t.Logf("nstest: swept namespaces of dead runs: %s", strings.Join(removed, " "))
	}
	ns := &NS{t: t, name: RunID() + "-" + suffix}
	if _, err := ip("netns", "add", ns.name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns.mu.Lock()
		if ns.nl != nil {
			ns.nl.Close()
			ns.nl = nil
		}
		ns.mu.Unlock()
		if err := deleteNS(ns.name); err != nil {
			t.Errorf("nstest: cleanup: %v", err)
		}
	})
	if _, err := ip("-n", ns.name, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	return ns
}

// Name returns the namespace's name, as `ip netns` knows it.
func (ns *NS) Name() string { return ns.name }

// Path returns the namespace's file, /var/run/netns/NAME.
func (ns *NS) Path() string { return netnsDir + "/" + ns.name }

// Netlink returns a NETLINK_ROUTE handle in the namespace, made on first use
// and closed on cleanup. Call it from the test's goroutine (it fails the
// test if the handle can't be made).
func (ns *NS) Netlink() *netlink.Handle {
	ns.t.Helper()
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.nl == nil {
		h, err := handleAt(ns.Path())
		if err != nil {
			ns.t.Fatalf("nstest: netlink in %s: %v", ns.name, err)
		}
		ns.nl = h
	}
	return ns.nl
}

func handleAt(path string) (*netlink.Handle, error) {
	fd, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	return nlutil.Handle(fd, ipTimeout)
}

// command builds `ip netns exec NAME name args...`; ip execs the program,
// so the process is the program itself.
func (ns *NS) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.name, name}, args...)...)
	cmd.WaitDelay = time.Second
	return cmd
}

// Exec runs name with args in the namespace and returns its combined output.
// Without a deadline in ctx it is bounded by a minute. The error of a
// failed run carries the output.
func (ns *NS) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, execTimeout)
		defer cancel()
	}
	out, err := ns.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("nstest: in %s: %s %s: %w: %s", ns.name, name,
			strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// Start starts name with args in the namespace. The process is killed when
// ctx is done or, at the latest, on the test's cleanup, which waits for it
// (at most 5 s) and logs its output if the test failed. The caller may Wait
// for it before the test ends, but not from a goroutine that outlives the
// test: the cleanup Waits too.
func (ns *NS) Start(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	cmd := ns.command(ctx, name, args...)
	out := new(syncBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nstest: in %s: start %s: %w", ns.name, name, err)
	}
	ns.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			ns.t.Logf("nstest: %s (pid %d) in %s did not exit after SIGKILL", name, cmd.Process.Pid, ns.name)
		}
		if ns.t.Failed() {
			ns.t.Logf("nstest: output of %s %s in %s:\n%s", name, strings.Join(args, " "), ns.name, out.String())
		}
	})
	return cmd, nil
}

// Do runs f on an OS thread inside the namespace and returns its error; a
// panic in f is re-raised in the caller. The caller's thread never changes
// namespace, and the thread f ran on goes back to the original namespace or
// is ended (see nlutil.Do). Goroutines f starts do not run in the
// namespace; sockets f opens stay in it wherever they are used.
func (ns *NS) Do(f func() error) error {
	target, err := netns.GetFromPath(ns.Path())
	if err != nil {
		return fmt.Errorf("nstest: do in %s: %w", ns.name, err)
	}
	defer target.Close()
	return nlutil.Do(target, f)
}

// PingWithin sends single pings to addr from the namespace until one is
// answered or within has passed (each waits at most 1 s), and returns how
// long it took; it fails t when none is answered.
func (ns *NS) PingWithin(t testing.TB, addr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if _, err := ns.Exec(context.Background(), "ping", "-c", "1", "-W", "1", addr); err == nil {
			return time.Since(start)
		}
	}
	t.Fatalf("ping %s from %s: no answer within %v", addr, ns.name, within)
	return 0
}

// syncBuffer is a bytes.Buffer safe for the writes of a process's stdout
// and stderr copiers and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
