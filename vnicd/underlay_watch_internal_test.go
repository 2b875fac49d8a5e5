package vnicd

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vnicd/nstest"
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

// TestUnderlayWatchDetails: the warnings name what unrouted and lastBad
// give: the peers with no route, and the last packet from a wrong endpoint.
func TestUnderlayWatchDetails(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(core)
	var c hfi.Counters
	w := underlayWatch{
		unrouted: func() []string { return []string{"LID 0x12 (b) at 10.9.0.2:4793: connect: network is unreachable"} },
		lastBad:  func() []zap.Field { return []zap.Field{zap.String("last_from", "10.9.0.7:4793")} },
	}
	t0 := time.Unix(1e9, 0)
	w.check(&c, t0, nil)
	c.XmitDiscards.Add(1)
	c.RcvBadSource.Add(1)
	w.check(&c, t0.Add(10*time.Second), log)
	all := logs.TakeAll()
	if len(all) != 2 {
		t.Fatalf("%d warnings, want 2", len(all))
	}
	if got := fmt.Sprint(all[0].ContextMap()["no_route_to"]); !strings.Contains(got, "LID 0x12 (b)") {
		t.Errorf("refused warning: no_route_to = %q", got)
	}
	if got := all[1].ContextMap()["last_from"]; got != "10.9.0.7:4793" {
		t.Errorf("bad source warning: last_from = %v", got)
	}
}

// TestUnroutedPeers: of the directory's endpoints, the ones the kernel has
// no route to are named, with the peer's name and the kernel's reason; a
// routable one and the node's own LID are not. It runs in a namespace of
// its own, whose only interface is lo: 10.99.0.2 has no route there.
func TestUnroutedPeers(t *testing.T) {
	nstest.RequireRoot(t)
	ns := nstest.NewNS(t, "ur")
	err := ns.Do(func() error {
		tr, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 1)
		if err != nil {
			return err
		}
		defer tr.Close()
		h := hfi.New(tr, hfi.Config{LID: 0x10})
		dir, err := hfi.NewDirectory(map[uint32]netip.AddrPort{
			0x10: tr.LocalAddr(),
			0x11: netip.MustParseAddrPort("127.0.0.2:4793"),
			0x12: netip.MustParseAddrPort("10.99.0.2:4793"),
			0x13: netip.MustParseAddrPort("10.99.0.3:4793"),
		}, nil)
		if err != nil {
			return err
		}
		h.SetDirectory(dir)
		d := &Daemon{cfg: &Config{Peers: []Peer{{LID: 0x12, Name: "host-b"}}}, hfi: h}
		got := d.unroutedPeers()
		want := []string{
			"LID 0x12 (host-b) at 10.99.0.2:4793: connect: network is unreachable",
			"LID 0x13 at 10.99.0.3:4793: connect: network is unreachable",
		}
		if !slices.Equal(got, want) {
			t.Errorf("unroutedPeers = %q, want %q", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
