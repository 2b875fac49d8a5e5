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
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestAutoQueues: node.queues "auto" takes one queue per CPU up to
// MaxAutoQueues when the underlay device merges nothing, and one queue,
// saying why, when it has GRO on, cannot be asked, or is not known.
func TestAutoQueues(t *testing.T) {
	off := func(string) (bool, error) { return false, nil }
	on := func(string) (bool, error) { return true, nil }
	broken := func(string) (bool, error) { return false, errors.New("no such device") }
	for _, c := range []struct {
		name string
		cpus int
		dev  string
		gro  func(string) (bool, error)
		want int
		why  string
	}{
		{"one CPU", 1, "eth0", off, 1, "one CPU"},
		{"no CPU count", 0, "eth0", off, 1, "one CPU"},
		{"two CPUs", 2, "eth0", off, 2, "GRO off"},
		{"three CPUs", 3, "eth0", off, 3, "GRO off"},
		{"many CPUs", 64, "eth0", off, vnicd.MaxAutoQueues, "at most 4"},
		{"GRO on", 8, "eth0", on, 1, "ethtool -K eth0 gro off"},
		{"GRO not known", 8, "eth0", broken, 1, "no such device"},
		{"device not known", 8, "", off, 1, "node.underlay_interface"},
	} {
		n, why := vnicd.AutoQueues(c.cpus, c.dev, c.gro)
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
	cfg := &vnicd.Config{}
	cfg.Node.Queues = vnicd.QueuesAuto
	cfg.Peers = []vnicd.Peer{{LID: 2, Addr: netip.MustParseAddrPort("10.209.0.2:4793")}}
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
}
