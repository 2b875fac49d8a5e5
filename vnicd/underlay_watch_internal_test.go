package vnicd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vnicd/config"
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
	logs.TakeAll()

	// Floods of errors for datagrams sent (the breaker's trips): the
	// same.
	for i := range 361 {
		c.PeerErrorFloods.Add(1)
		w.check(&c, t0.Add(time.Hour+time.Duration(i)*10*time.Second), log)
	}
	all = logs.TakeAll()
	if len(all) != 2 || all[0].ContextMap()["floods"] != uint64(1) || all[1].ContextMap()["floods_total"] != uint64(361) {
		t.Errorf("flood warnings: %v; want 2, the first of 1 flood, the second an hour later", all)
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
		d := &Daemon{cfg: &config.Config{Peers: []config.Peer{{LID: 0x12, Name: "host-b"}}}, hfi: h}
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

// TestUnderlayWatchPeerErrors: a peer whose datagrams keep coming back
// with errors (no vnicd listening there, the host down) is named in a
// warning once they came at two looks, not again while they go on, and
// again when they begin anew after hfi.PeerErrorQuiet without any; a blip
// (a peer that starts a moment later than this host) is not.
func TestUnderlayWatchPeerErrors(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(core)
	var c hfi.Counters
	var errs []hfi.PeerError
	w := underlayWatch{
		peerErrs: func() []hfi.PeerError { return errs },
		namePeers: func(es []hfi.PeerError, _ time.Time) []string {
			var out []string
			for _, e := range es {
				out = append(out, e.Endpoint.String())
			}
			return out
		},
	}
	b, x, y := netip.MustParseAddrPort("10.9.0.2:4793"), netip.MustParseAddrPort("10.9.0.3:4793"), netip.MustParseAddrPort("10.9.0.4:4793")
	t0 := time.Unix(1e9, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	fail := func(ep netip.AddrPort, s int) {
		c.XmitPeerErrors.Add(1)
		for i := range errs {
			if errs[i].Endpoint == ep {
				errs[i].Last = at(s)
				errs[i].Count++
				return
			}
		}
		errs = append(errs, hfi.PeerError{Endpoint: ep, Error: "connection refused", Reason: "ICMP port unreachable", Count: 1, First: at(s), Last: at(s)})
	}
	look := func(s int) []string {
		t.Helper()
		w.check(&c, at(s), log)
		all := logs.TakeAll()
		if len(all) > 1 {
			t.Fatalf("at %d s: %d warnings, want at most 1", s, len(all))
		}
		if len(all) == 0 {
			return nil
		}
		var got []string
		for _, p := range all[0].ContextMap()["peers"].([]any) {
			got = append(got, p.(string))
		}
		return got
	}

	w.check(&c, t0, nil)
	y1 := []string{y.String()}
	b1 := []string{b.String()}
	fail(x, 1) // a blip: x started a moment after this host
	for s := 10; s <= 200; s += 10 {
		var want []string
		switch {
		case s == 10:
			fail(b, 5) // b down from 5 s on: seen at 10 s
		case s >= 20:
			fail(b, s-5)
			if s == 20 { // errors at two looks
				want = b1
			}
		}
		if s == 110 || s == 120 { // y down from 105 s to 115 s
			fail(y, s-5)
			if s == 120 {
				want = y1
			}
		}
		if got := look(s); !slices.Equal(got, want) {
			t.Fatalf("at %d s: warned of %v, want %v", s, got, want)
		}
	}
	// b answers again (no errors) for longer than hfi.PeerErrorQuiet, then
	// fails anew: news again, at the second look with errors.
	quiet := 200 + int(hfi.PeerErrorQuiet/time.Second)
	if got := look(quiet); got != nil {
		t.Fatalf("warned of %v with no new errors", got)
	}
	fail(b, quiet+5)
	if got := look(quiet + 10); got != nil {
		t.Fatalf("warned of %v at the first look with errors", got)
	}
	fail(b, quiet+15)
	if got := look(quiet + 20); !slices.Equal(got, b1) {
		t.Fatalf("after a quiet spell: warned of %v, want %v", got, b1)
	}
}

// TestNamePeerErrors: an endpoint of the directory is named by its LID
// (and peer name), the FM's as the fabric manager, any other as not in
// the directory.
func TestNamePeerErrors(t *testing.T) {
	tr, err := hfi.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), 1)
	if err != nil {
		t.Skipf("no IPv4 loopback here: %v", err)
	}
	defer tr.Close()
	h := hfi.New(tr, hfi.Config{LID: 0x10})
	b, fm, other := netip.MustParseAddrPort("10.9.0.2:4793"), netip.MustParseAddrPort("10.9.0.9:4800"), netip.MustParseAddrPort("10.9.0.7:4793")
	dir, err := hfi.NewDirectory(map[uint32]netip.AddrPort{0x10: tr.LocalAddr(), 0x12: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.SetDirectory(dir)
	d := &Daemon{cfg: &config.Config{Node: config.NodeConfig{FabricManager: fm}, Peers: []config.Peer{{LID: 0x12, Name: "host-b"}}}, hfi: h}
	now := time.Unix(1e9, 0)
	e := hfi.PeerError{Error: "connection refused", Reason: "ICMP port unreachable", From: b.Addr(), Count: 3,
		First: now.Add(-40 * time.Second), Last: now.Add(-time.Second)}
	var errs []hfi.PeerError
	for _, ep := range []netip.AddrPort{b, fm, other} {
		e.Endpoint = ep
		errs = append(errs, e)
	}
	got := d.namePeerErrors(errs, now)
	tail := ": connection refused (ICMP port unreachable from 10.9.0.2), 3 times since 40s ago, last 1s ago"
	want := []string{"LID 0x12 (host-b) at 10.9.0.2:4793" + tail, "the fabric manager at 10.9.0.9:4800" + tail, "10.9.0.7:4793 (not in the directory)" + tail}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestFullDeviceQueueNotSent: a datagram the underlay device's queue drops
// (its qdisc full) is reported not sent, and so counted in
// PortXmitDiscards: the kernel says so only to a socket with IP_RECVERR,
// and before, such datagrams counted as sent. A token bucket of 8 kbit/s
// that holds 1600 bytes takes the first datagram or so of 20 sent at once.
// (A UDP GSO send is reported sent if the queue took any of its segments:
// the kernel's, not vnicd's, to count.)
func TestFullDeviceQueueNotSent(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "tc", "ping")
	a, b := nstest.NewNS(t, "fqa"), nstest.NewNS(t, "fqb")
	vethA, _ := nstest.Veth(t, a, b, netip.MustParsePrefix("10.98.0.1/24"), netip.MustParsePrefix("10.98.0.2/24"), 1500)
	// b's MAC known first: datagrams that wait for ARP wait in the
	// neighbour's queue, not the device's.
	a.PingWithin(t, "10.98.0.2", 5*time.Second)
	if out, err := a.Exec(context.Background(), "tc", "qdisc", "add", "dev", vethA, "root", "tbf", "rate", "8kbit", "burst", "1600", "limit", "1600"); err != nil {
		t.Skipf("no tbf qdisc here: %v: %s", err, out)
	}
	err := a.Do(func() error {
		tr, err := hfi.ListenUDP(netip.MustParseAddrPort("10.98.0.1:0"), 32)
		if err != nil {
			return err
		}
		defer tr.Close()
		// Each of its own size: one UDP GSO send of them all would be
		// taken whole if the queue took any of its segments.
		msgs := make([]hfi.Message, 20)
		for i := range msgs {
			msgs[i] = hfi.Message{Buf: make([]byte, 1000+i), N: 1000 + i, Addr: netip.MustParseAddrPort("10.98.0.2:9")}
		}
		n, err := tr.WriteBatch(msgs)
		if n >= len(msgs) || !errors.Is(err, unix.ENOBUFS) {
			t.Errorf("WriteBatch of %d datagrams into a full queue: %d sent, %v; want fewer sent, ENOBUFS", len(msgs), n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The second refusal ends the batch: the kernel ends each sendmmsg
	// at a refused datagram, so trying the rest would cost a system call
	// each, at the moment the host is loaded. The qdisc dropped two of
	// them (and perhaps a packet of the kernel's own), not all but the
	// first two.
	out, err := a.Exec(context.Background(), "tc", "-s", "qdisc", "show", "dev", vethA)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`dropped (\d+)`).FindSubmatch(out)
	if d, _ := strconv.Atoi(string(m[1])); m == nil || d < 2 || d > 4 {
		t.Errorf("the qdisc dropped %q datagrams, want 2 (the batch given up at the second):\n%s", m, out)
	}
}
