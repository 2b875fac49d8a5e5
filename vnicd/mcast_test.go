package vnicd_test

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// mcastDevice is an in-memory device that reports link state and a
// multicast list the test sets, as the TAP does from the kernel.
type mcastDevice struct {
	*taptest.Device
	events    chan tap.LinkEvent
	closeOnce sync.Once
	mu        sync.Mutex
	macs      [][6]byte
}

func (d *mcastDevice) Watch(context.Context) (<-chan tap.LinkEvent, error) { return d.events, nil }

func (d *mcastDevice) McastMACs() ([][6]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.macs), nil
}

func (d *mcastDevice) setMcast(macs ...[6]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.macs = macs
}

func (d *mcastDevice) Close() error {
	d.closeOnce.Do(func() { close(d.events) })
	return d.Device.Close()
}

// TestMcastListTrap: the netdev's multicast list is the IfaceMcastMACs
// reply; a change to it, and not its first reading, sends the trap with
// opcode 2 to trap_lid and counts in mc_macs_gen_count.
func TestMcastListTrap(t *testing.T) {
	const vesw = 3
	devs := make(chan *mcastDevice, 1)
	m, fm := newTrapNode(t, func(s engine.DeviceSpec) tap.Netdev {
		port, _ := taptest.Pair(taptest.Options{})
		d := &mcastDevice{Device: port, events: make(chan tap.LinkEvent, 4),
			macs: [][6]byte{{0x33, 0x33, 0, 0, 0, 1}}}
		// The first state is there at once: the watcher reads the list
		// before SetVESWPortInfo has stored the vport's state.
		d.events <- tap.LinkEvent{Up: true, MAC: s.MAC, MTU: 1500}
		devs <- d
		return d
	})
	if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 0, portInfo(vesw))); st != vema.StatusSuccess {
		t.Fatalf("Set VESWPortInfo: %v", st)
	}
	dev := <-devs

	traps := func(d time.Duration, stopAt uint8) []uint8 { t.Helper(); return fm.trapOps(d, vesw, stopAt) }
	// The first reading and the next ticks with the list unchanged: no trap 2.
	if ops := traps(engine.McastPollInterval+500*time.Millisecond, vema.TrapIfaceMcastMACChange); slices.Contains(ops, vema.TrapIfaceMcastMACChange) {
		t.Fatalf("traps %v before the list changed", ops)
	}
	mcastGet := func() (vema.IfaceMACs, uint16) {
		t.Helper()
		resp, ok := m.Agent.Handle(vemaMAD(vema.MethodGet, vema.AttrIfaceMcastMACs, 0, nil))
		if !ok || binary.BigEndian.Uint16(resp[4:]) != 0 {
			t.Fatal("Get IfaceMcastMACs failed")
		}
		var l vema.IfaceMACs
		if err := l.UnmarshalBinary(resp[vema.VendorHeaderLen:]); err != nil {
			t.Fatal(err)
		}
		resp, _ = m.Agent.Handle(vemaMAD(vema.MethodGet, vema.AttrVESWPortInfo, 0, nil))
		var info vema.VESWPortInfo
		if err := info.UnmarshalBinary(resp[vema.VendorHeaderLen:]); err != nil {
			t.Fatal(err)
		}
		return l, info.VPort.MCMACsGenCount
	}
	if l, gen := mcastGet(); !slices.Equal(l.MACs, [][6]byte{{0x33, 0x33, 0, 0, 0, 1}}) || l.TotMACsInLst != 1 || l.GenCount != 0 || gen != 0 {
		t.Fatalf("before the change: %x (total %d, gen %d), VESWPortInfo mc gen %d", l.MACs, l.TotMACsInLst, l.GenCount, gen)
	}

	group := [6]byte{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}
	dev.setMcast([6]byte{0x33, 0x33, 0, 0, 0, 1}, group)
	start := time.Now()
	if ops := traps(3*engine.McastPollInterval, vema.TrapIfaceMcastMACChange); !slices.Contains(ops, vema.TrapIfaceMcastMACChange) {
		t.Fatalf("no trap with opcode 2 within %v of the change (traps %v)", 3*engine.McastPollInterval, ops)
	}
	t.Logf("trap 2 came %v after the change", time.Since(start).Round(time.Millisecond))
	want := [][6]byte{{0x33, 0x33, 0, 0, 0, 1}, group}
	if l, gen := mcastGet(); !slices.Equal(l.MACs, want) || l.TotMACsInLst != 2 || l.GenCount != 1 || gen != 1 {
		t.Fatalf("after the change: %x (total %d, gen %d), VESWPortInfo mc gen %d; want %x, gen 1", l.MACs, l.TotMACsInLst, l.GenCount, gen, want)
	}
}
