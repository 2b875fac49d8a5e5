//go:build linux

package vnicd_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestAutoQueues: node.queues "auto" takes one queue per CPU up to
// MaxAutoQueues when the underlay device merges nothing, and one queue,
// saying why, when it has GRO on, cannot be asked, or is not known.
func TestAutoQueues(t *testing.T) {
	none := func(string) (string, error) { return "", nil }
	self := func(d string) (string, error) { return d, nil }
	port := func(string) (string, error) { return "eth1", nil }
	broken := func(string) (string, error) { return "", errors.New("no such device") }
	for _, c := range []struct {
		name    string
		cpus    int
		dev     string
		merging func(string) (string, error)
		want    int
		why     string
	}{
		{"one CPU", 1, "eth0", none, 1, "one CPU"},
		{"no CPU count", 0, "eth0", none, 1, "one CPU"},
		{"two CPUs", 2, "eth0", none, 2, "GRO off"},
		{"three CPUs", 3, "eth0", none, 3, "GRO off"},
		{"many CPUs", 64, "eth0", none, vnicd.MaxAutoQueues, "at most 4"},
		{"GRO on", 8, "eth0", self, 1, "eth0 has receive GRO on"},
		{"GRO on below", 8, "br0", port, 1, "br0 sits on eth1, which has receive GRO on: it merges datagrams of different flows; for more queues turn it off (ethtool -K eth1 gro off)"},
		{"GRO not known", 8, "eth0", broken, 1, "no such device"},
		{"device not known", 8, "", none, 1, "node.underlay_interface"},
	} {
		n, why := vnicd.AutoQueues(c.cpus, c.dev, c.merging)
		if n != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %d (%q), want %d (with %q)", c.name, n, why, c.want, c.why)
		}
	}
}

// TestDeviceGRO: the ethtool query reads a veth's receive GRO as `ethtool
// -K` sets it, and a missing device is an error. It then checks what a
// daemon in that namespace picks for node.queues "auto" with that veth as
// its underlay.
func TestDeviceGRO(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ethtool")
	a, b := nstest.NewNS(t, "groa"), nstest.NewNS(t, "grob")
	dev, _ := nstest.Veth(t, a, b, netip.MustParsePrefix("10.209.0.1/24"), netip.MustParsePrefix("10.209.0.2/24"), 1500)
	cfg := &config.Config{}
	cfg.Node.Queues = config.QueuesAuto
	cfg.Peers = []config.Peer{{LID: 2, Addr: netip.MustParseAddrPort("10.209.0.2:4793")}}
	wantAuto := min(vnicd.StartProcs, vnicd.MaxAutoQueues)
	for _, gro := range []string{"off", "on", "off"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := a.Exec(ctx, "ethtool", "-K", dev, "gro", gro)
		cancel()
		if err != nil {
			t.Fatalf("ethtool -K %s gro %s: %v: %s", dev, gro, err, out)
		}
		var got bool
		var n int
		var why string
		if err := a.Do(func() (err error) {
			got, err = vnicd.DeviceGRO(dev)
			n, why = vnicd.ResolveQueues(cfg)
			return err
		}); err != nil {
			t.Fatalf("gro %s: %v", gro, err)
		}
		if got != (gro == "on") {
			t.Errorf("after gro %s the query says %v", gro, got)
		}
		if want := map[string]int{"off": wantAuto, "on": 1}[gro]; n != want || !strings.Contains(why, dev) {
			t.Errorf("gro %s: auto picks %d queues (%q), want %d, naming %s", gro, n, why, want, dev)
		}
	}
	if err := a.Do(func() error {
		_, err := vnicd.DeviceGRO("nosuchdev0")
		return err
	}); err == nil {
		t.Error("a missing device has a GRO state")
	}

	// A bridge over the veth end: GRO off on the bridge is not enough
	// while its port merges.
	br := nstest.LinkName("br")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"ip", "link", "add", br, "type", "bridge"},
		{"ip", "link", "set", dev, "master", br},
		{"ip", "link", "set", br, "up"},
		{"ethtool", "-K", br, "gro", "off"},
		{"ethtool", "-K", dev, "gro", "on"},
	} {
		if out, err := a.Exec(ctx, args[0], args[1:]...); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	check := func(want string) {
		t.Helper()
		var got string
		if err := a.Do(func() (err error) {
			got, err = vnicd.MergingBelow(br)
			return err
		}); err != nil || got != want {
			t.Errorf("device merging below %s: %q (%v), want %q", br, got, err, want)
		}
	}
	check(dev)
	if out, err := a.Exec(ctx, "ethtool", "-K", dev, "gro", "off"); err != nil {
		t.Fatalf("ethtool: %v: %s", err, out)
	}
	check("")
}
