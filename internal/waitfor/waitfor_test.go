package waitfor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestUntilReturnsOnceTrue(t *testing.T) {
	n := 0
	Until(t, 5*time.Second, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

func TestUntilFailsWithWhat(t *testing.T) {
	f := &fakeT{TB: t}
	start := time.Now()
	Until(f, 50*time.Millisecond, "godot", func() bool { return false })
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want about 50ms", took)
	}
	if !strings.Contains(f.failed, "waiting for godot: not within") {
		t.Errorf("failure %q does not say what it waited for", f.failed)
	}
}

func TestCheckWrapsLastError(t *testing.T) {
	errLast := errors.New("socket not there")
	err := Check(30*time.Millisecond, func() error { return errLast })
	if !errors.Is(err, errLast) {
		t.Fatalf("Check = %v, want it to wrap %v", err, errLast)
	}
	if err := Check(time.Second, func() error { return nil }); err != nil {
		t.Fatalf("Check of a condition that holds = %v", err)
	}
}

// A zero timeout still polls once.
func TestCheckZeroTimeoutPollsOnce(t *testing.T) {
	n := 0
	if err := Check(0, func() error { n++; return ErrNotYet }); err == nil || n != 1 {
		t.Fatalf("Check(0) = %v after %d polls, want an error after 1", err, n)
	}
}

func TestSteady(t *testing.T) {
	start := time.Now()
	v := Steady(t, 5*time.Second, 50*time.Millisecond, "the count", func() int {
		return min(int(time.Since(start)/(20*time.Millisecond)), 3)
	})
	if v != 3 {
		t.Fatalf("Steady = %d, want 3", v)
	}
	f := &fakeT{TB: t}
	Steady(f, 60*time.Millisecond, time.Second, "a clock", func() time.Time { return time.Now() })
	if !strings.Contains(f.failed, "a clock to stand still") {
		t.Errorf("failure %q", f.failed)
	}
}

func TestCheckAbort(t *testing.T) {
	errGone := errors.New("process exited")
	n := 0
	err := Check(5*time.Second, func() error { n++; return Abort(errGone) })
	if err != errGone || n != 1 {
		t.Fatalf("Check = %v after %d polls, want %v after 1", err, n, errGone)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(5*time.Second, func() bool { n++; return n == 2 }) || n != 2 {
		t.Fatalf("Poll of a condition that holds on the second poll: %d polls", n)
	}
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll of a condition that never holds returned true")
	}
}
