package engine_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// downDevice is a netdev its user left administratively down (a TAP taken
// over after a restart): IsUp says so, and its watcher has not reported
// anything yet.
type downDevice struct {
	*taptest.Device
	events    chan tap.LinkEvent
	closeOnce sync.Once
}

func (d *downDevice) Close() error {
	d.closeOnce.Do(func() { close(d.events) }) // the watcher ends, as with a TAP
	return d.Device.Close()
}

func (d *downDevice) IsUp() (bool, error)                                 { return false, nil }
func (d *downDevice) Watch(context.Context) (<-chan tap.LinkEvent, error) { return d.events, nil }

// A port made on a netdev that is down starts DROP_ALL (oper_state is
// FORWARDING only with the netdev up, opa_vnic_update_state), not
// FORWARDING until the watcher's first event says otherwise.
func TestPortOnADownNetdevStartsDropAll(t *testing.T) {
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.5:4793")), hfi.Config{LID: enginetest.LIDA})
	e := enginetest.StartEngine(t, h, func(engine.DeviceSpec) (tap.Netdev, error) {
		port, _ := taptest.Pair(taptest.Options{})
		return &downDevice{Device: port, events: make(chan tap.LinkEvent)}, nil
	})
	if err := e.SetPort(0, enginetest.PortConfig(enginetest.LIDA, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	p := e.Port(0)
	if p.LinkUp() || p.OperState() != engine.StateDropAll {
		t.Errorf("port on a down netdev: link up %v, oper_state %d; want down, DROP_ALL", p.LinkUp(), p.OperState())
	}
}
