package vnicd_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// macEventDevice is an in-memory device whose netdev reports a MAC change
// as the kernel does: SetMAC's netlink event reaches the link watcher while
// the caller is still in SetPort (here it waits until the watcher has had
// ample time to handle it).
type macEventDevice struct {
	*taptest.Device
	events    chan tap.LinkEvent
	closeOnce sync.Once
	mu        sync.Mutex
	mac       [6]byte
	// late: SetMAC returns first and its event comes 50 ms later, as a
	// netlink event may reach the watcher after SetPort has returned.
	late     atomic.Bool
	sent     sync.WaitGroup
	zeroSets atomic.Int32 // SetMACs of the all-zero MAC (refused)
}

func (d *macEventDevice) Watch(context.Context) (<-chan tap.LinkEvent, error) { return d.events, nil }

func (d *macEventDevice) SetMAC(mac [6]byte) error {
	if mac == ([6]byte{}) { // as a TAP (eth_mac_addr) refuses it
		d.zeroSets.Add(1)
		return syscall.EADDRNOTAVAIL
	}
	d.mu.Lock()
	d.mac = mac
	d.mu.Unlock()
	if d.late.Load() {
		d.sent.Go(func() {
			time.Sleep(50 * time.Millisecond)
			d.events <- tap.LinkEvent{Up: true, MAC: mac, MTU: 1500}
		})
		return nil
	}
	d.events <- tap.LinkEvent{Up: true, MAC: mac, MTU: 1500}
	time.Sleep(100 * time.Millisecond)
	return nil
}

// userSetMAC is `ip link set address` by the user: the netdev's MAC changes
// and the watcher hears of it.
func (d *macEventDevice) userSetMAC(mac [6]byte) {
	d.mu.Lock()
	d.mac = mac
	d.mu.Unlock()
	d.events <- tap.LinkEvent{Up: true, MAC: mac, MTU: 1500}
}

func (d *macEventDevice) Close() error {
	d.sent.Wait()
	d.closeOnce.Do(func() { close(d.events) })
	return d.Device.Close()
}

// TestEMBaseMACChangeSendsNoTrap: a base_mac_addr the EM pushes becomes the
// netdev's MAC with no trap and no uc_macs_gen_count change (kernel
// opa_vnic_process_vema_config: eth_commit_mac_addr_change, no
// opa_vnic_vema_report_event; docs/linux-compat.md §4.9), even when the
// netdev's change event reaches the link watcher before the Set has
// returned. A change by the user afterwards is still trapped.
func TestEMBaseMACChangeSendsNoTrap(t *testing.T) {
	const nodeLID, vesw = trapNodeLID, 3
	devs := make(chan *macEventDevice, 1)
	m, fm := newTrapNode(t, func(s engine.DeviceSpec) tap.Netdev {
		port, _ := taptest.Pair(taptest.Options{})
		d := &macEventDevice{Device: port, events: make(chan tap.LinkEvent, 4), mac: s.MAC}
		d.events <- tap.LinkEvent{Up: true, MAC: s.MAC, MTU: 1500}
		devs <- d
		return d
	})
	info := vema.PowerOnVESWPortInfo()
	info.VESW.VESWID, info.VESW.PKey = vesw, 0x8001
	info.VPort.EncapSLID, info.VPort.ConfigState = nodeLID, vema.StateForwarding
	info.VPort.BaseMACAddr = encap.MACForLID(nodeLID, vesw)
	set := func() {
		t.Helper()
		b, _ := info.MarshalBinary()
		if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 0, b)); st != vema.StatusSuccess {
			t.Fatalf("Set VESWPortInfo: %v", st)
		}
	}
	set()
	dev := <-devs
	time.Sleep(50 * time.Millisecond) // the watcher has read the first state

	ucGen := func() uint16 {
		t.Helper()
		resp, ok := m.Agent.Handle(vemaMAD(vema.MethodGet, vema.AttrVESWPortInfo, 0, nil))
		if !ok || binary.BigEndian.Uint16(resp[4:]) != 0 {
			t.Fatal("Get VESWPortInfo failed")
		}
		var got vema.VESWPortInfo
		if err := got.UnmarshalBinary(resp[vema.VendorHeaderLen:]); err != nil {
			t.Fatal(err)
		}
		return got.VPort.UCMACsGenCount
	}
	// expect: after step, one trap with opcode 1 (a user's change) or none
	// (the EM's), and uc_macs_gen_count at gen.
	expect := func(step string, trap bool, gen uint16) {
		t.Helper()
		ops := fm.trapOps(300*time.Millisecond, vesw, 0)
		switch {
		case trap && (len(ops) != 1 || ops[0] != vema.TrapIfaceUcastMACChange):
			t.Errorf("%s sent traps %v, want [%d]", step, ops, vema.TrapIfaceUcastMACChange)
		case !trap && len(ops) != 0:
			t.Errorf("%s sent traps %v; the kernel sends none", step, ops)
		}
		if g := ucGen(); g != gen {
			t.Errorf("uc_macs_gen_count %d after %s, want %d", g, step, gen)
		}
	}

	// The EM pushes a new base MAC (a reload changed the member's mac).
	info.VPort.BaseMACAddr = [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	set()
	expect("the EM's base_mac_addr change", false, 0)

	// The user changes the MAC: trap opcode 1, gen count 1.
	dev.userSetMAC([6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xAA})
	expect("the user's MAC change", true, 1)

	// The user sets it back to the base_mac_addr: a change by the user
	// like any other (the kernel traps every ndo_set_mac_address), which
	// the FM must hear of if it has learned the other MAC and is about to
	// push it as the base.
	dev.userSetMAC(info.VPort.BaseMACAddr)
	expect("the user's change back to base_mac_addr", true, 2)

	// The EM pushes another base MAC whose event reaches the watcher only
	// after the Set has returned: still the EM's change, no trap.
	dev.late.Store(true)
	info.VPort.BaseMACAddr = [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x56}
	set()
	expect("the EM's change reported after the Set", false, 2)
	// And the user's next change is trapped.
	dev.userSetMAC([6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xAB})
	expect("the user's MAC change after a late report", true, 3)

	// DeleteVESW puts the power-on values, base_mac_addr zero, in the
	// port: the netdev keeps its MAC (a TAP refuses a zero one, and
	// trying only logged a warning), and nothing is trapped.
	if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrDeleteVESW, 0, nil)); st != vema.StatusSuccess {
		t.Fatalf("DeleteVESW: %v", st)
	}
	expect("DeleteVESW", false, 3) // gen counts are read-only: DeleteVESW keeps them
	if n := dev.zeroSets.Load(); n != 0 {
		t.Errorf("DeleteVESW: %d SetMACs of 00:00:00:00:00:00", n)
	}
}
