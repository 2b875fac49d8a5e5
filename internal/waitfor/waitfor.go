// Package waitfor makes tests wait on a condition instead of sleeping: it
// polls the condition until it holds, for a bounded time and a bounded
// number of polls, and says what was awaited when it never held.
//
// The first poll is at once; the pauses between polls start at
// FirstInterval and double up to Interval, so that a condition that holds
// soon is seen soon and one that takes long is not polled hard. A condition
// that takes time itself (a ping, a control call) paces the loop with its
// own duration. Every wait ends by its deadline or after MaxPolls polls,
// whichever comes first, so that no test loop runs unbounded.
package waitfor

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

const (
	// FirstInterval is the first pause between two polls of a condition.
	FirstInterval = 100 * time.Microsecond
	// Interval is the longest pause between two polls of a condition.
	Interval = 10 * time.Millisecond
	// MaxPolls bounds the polls of one wait, whatever its timeout: at
	// Interval it is about ten minutes of polling.
	MaxPolls = 60000
)

// ErrNotYet is what a condition of Check may return to say "not yet"
// with nothing more to tell.
var ErrNotYet = errors.New("not yet")

// abort carries the error of a condition that can no longer hold.
type abort struct{ err error }

func (a abort) Error() string { return a.err.Error() }
func (a abort) Unwrap() error { return a.err }

// Abort wraps err for a condition of Check to return when it can no longer
// hold (the process it waits on exited): Check stops polling and returns
// err at once.
func Abort(err error) error { return abort{err} }

// Until polls cond until it returns true and fails t (Fatalf) if it has not
// within timeout, naming what it waited for.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Check(timeout, func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Poll polls cond until it returns true, for at most timeout, and returns
// whether it did: for a test that then checks, and reports, the state cond
// left behind.
func Poll(timeout time.Duration, cond func() bool) bool {
	return Check(timeout, func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	}) == nil
}

// Check polls cond until it returns nil and returns nil then; if it has not
// within timeout it returns an error that says so, wrapping cond's last
// error.
func Check(timeout time.Duration, cond func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	var err error
	pause := FirstInterval
	for polls := 0; polls < MaxPolls; polls++ {
		if err = cond(); err == nil {
			return nil
		}
		if a, ok := err.(abort); ok {
			return a.err
		}
		if !time.Now().Before(deadline) {
			break
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, Interval)
	}
	return fmt.Errorf("not within %v: %w", time.Since(start).Round(time.Millisecond), err)
}

// Steady polls value until it has not changed for quiet, and returns it; it
// fails t if the value still changes after timeout. It waits out a burst of
// events (traps, retries) before a test counts the ones it causes.
func Steady[T comparable](t testing.TB, timeout, quiet time.Duration, what string, value func() T) T {
	t.Helper()
	v, since := value(), time.Now()
	Until(t, timeout, what+" to stand still for "+quiet.String(), func() bool {
		if n := value(); n != v {
			v, since = n, time.Now()
		}
		return time.Since(since) >= quiet
	})
	return v
}
