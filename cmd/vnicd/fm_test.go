package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunWithFM: whichever of the daemon and the embedded FM ends first
// ends the other, so vnicd exits instead of waiting for a part that runs on.
func TestRunWithFM(t *testing.T) {
	errRun, errFM := errors.New("data plane failed"), errors.New("fm failed")
	untilDone := func(ctx context.Context) error { <-ctx.Done(); return nil }
	fails := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}
	for _, tc := range []struct {
		name            string
		run, fm         func(context.Context) error
		signal          bool // SIGTERM: the test cancels ctx
		wantRun, wantFM error
	}{
		{"daemon fails by itself", fails(errRun), untilDone, false, errRun, nil},
		{"fm fails", untilDone, fails(errFM), false, nil, errFM},
		{"signal", untilDone, untilDone, true, nil, nil},
		{"no fm, daemon fails", fails(errRun), nil, false, errRun, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			if tc.signal {
				time.AfterFunc(10*time.Millisecond, stop)
			}
			type result struct{ run, fm error }
			done := make(chan result, 1)
			go func() {
				r, f := runWithFM(ctx, stop, tc.run, tc.fm)
				done <- result{r, f}
			}()
			select {
			case r := <-done:
				if !errors.Is(r.run, tc.wantRun) || !errors.Is(r.fm, tc.wantFM) {
					t.Fatalf("runWithFM = %v, %v; want %v, %v", r.run, r.fm, tc.wantRun, tc.wantFM)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("runWithFM did not return: one part waits for the other forever")
			}
		})
	}
}
