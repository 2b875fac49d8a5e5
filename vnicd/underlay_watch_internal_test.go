package vnicd

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opavnic/opavnic/hfi"
)

// A peer whose address has no route (the kernel refuses every datagram to
// it) or whose underlay address changed (its packets fail the source check)
// was only counted: the log said nothing while the peer was cut off.
// underlayWatch warns of each, at most once an hour, and not of what was
// counted before it started, nor of discards for want of a directory entry.
func TestUnderlayWatchWarns(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(core)
	var c hfi.Counters
	var w underlayWatch
	c.XmitDiscards.Add(5)
	c.RcvBadSource.Add(5)
	t0 := time.Unix(1e9, 0)
	w.check(&c, t0, nil) // the start: what was before is not news

	c.XmitDiscards.Add(3)
	c.XmitNoRoute.Add(3) // no directory entry: not the underlay's
	w.check(&c, t0.Add(10*time.Second), log)
	if n := logs.Len(); n != 0 {
		t.Fatalf("%d warnings for no-route discards: %v", n, logs.All())
	}

	c.XmitDiscards.Add(7) // refused by the kernel
	c.RcvBadSource.Add(2)
	w.check(&c, t0.Add(20*time.Second), log)
	all := logs.TakeAll()
	if len(all) != 2 {
		t.Fatalf("%d warnings, want 2 (refused, bad source): %v", len(all), all)
	}
	if got := all[0].ContextMap()["refused"]; got != uint64(7) {
		t.Errorf("refused = %v, want 7", got)
	}
	if got := all[1].ContextMap()["bad_source"]; got != uint64(2) {
		t.Errorf("bad_source = %v, want 2", got)
	}

	// A flood: no more than once an hour.
	for i := range 360 {
		c.XmitDiscards.Add(1)
		c.RcvBadSource.Add(1)
		w.check(&c, t0.Add(30*time.Second+time.Duration(i)*10*time.Second), log)
	}
	if n := logs.Len(); n != 2 {
		t.Errorf("%d warnings in the next hour, want 2 (one of each, an hour after the first)", n)
	}
}
