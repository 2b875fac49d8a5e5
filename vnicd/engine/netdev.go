package engine

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/opavnic/opavnic/vnicd/tap"
	"go.uber.org/zap"
)

// watchLink follows a port's netdev: its administrative state drives the
// port's oper state, and its MTU is remembered so that a smaller eth_mtu can
// lower it (and lowered at once when the user raises it above eth_mtu). Its
// goroutine ends when the device is closed or moved, and then closes
// p.watchDone.
func (e *Engine) watchLink(p *Port) {
	p.watchDone = nil
	ch, err := p.dev.Watch(context.Background())
	if err != nil {
		e.log.Warn("cannot watch the netdev; its link state is taken as up", zap.Uint8("vnic", p.vport), zap.Error(err))
		return
	}
	done := make(chan struct{})
	p.watchDone = done
	go func() {
		defer close(done)
		t := time.NewTicker(McastPollInterval)
		defer t.Stop()
		var (
			lastMAC  [6]byte
			lastName string
			first    = true
			mcDigest uint32
			mcRead   bool
		)
		// pollMcast reads the multicast list; a change since the last
		// reading (not the first reading) is an event. A failed reading (the
		// device closing or moving, which also ends the watch) is tried
		// again at the next tick.
		pollMcast := func() {
			macs, err := p.dev.McastMACs()
			if err != nil {
				return
			}
			d := tap.MACListDigest(macs)
			if mcRead && d != mcDigest {
				e.log.Info("netdev multicast list changed", zap.Uint8("vnic", p.vport), zap.Int("addresses", len(macs)))
				e.event(PortEvent{VPort: p.vport, Kind: EventMcast})
			}
			mcDigest, mcRead = d, true
		}
		for {
			var ev tap.LinkEvent
			select {
			case <-t.C:
				pollMcast()
				continue
			case got, ok := <-ch:
				if !ok {
					return
				}
				ev = got
			}
			if ev.Err != nil {
				e.log.Warn("netdev watch ended", zap.Uint8("vnic", p.vport), zap.Error(ev.Err))
			}
			if ev.Moved {
				if !p.closing.Load() {
					e.log.Info("netdev moved to another namespace from outside vnicd; following it",
						zap.Uint8("vnic", p.vport), zap.String("ifname", p.dev.Name()))
					go e.followPort(p, done)
				}
				continue
			}
			if ev.Deleted {
				if !p.closing.Load() {
					e.log.Warn("netdev deleted from outside vnicd (by hand, or with its namespace); the port drops its frames until it is removed (vnic del, CNI DEL) or vnicd restarts", zap.Uint8("vnic", p.vport),
						zap.String("ifname", p.dev.Name()))
					e.lostNetdev(p)
				}
				continue
			}
			p.mtu.Store(int32(ev.MTU))
			e.capMTU(p, ev.MTU)
			changed := p.linkUp.Load() != ev.Up
			if changed {
				e.log.Info("netdev link changed", zap.Uint8("vnic", p.vport), zap.Bool("up", ev.Up))
			}
			e.setLinkUp(p, ev.Up)
			if changed {
				e.event(PortEvent{VPort: p.vport, Kind: EventLink, Up: ev.Up})
			}
			if first || ev.MAC != lastMAC {
				if !first {
					e.log.Info("netdev MAC changed", zap.Uint8("vnic", p.vport), zap.Stringer("mac", net.HardwareAddr(ev.MAC[:])))
				}
				e.event(PortEvent{VPort: p.vport, Kind: EventMAC, MAC: ev.MAC, Initial: first})
			}
			if first || changed {
				pollMcast() // going up joins groups: seen at once, not a tick later
			}
			if !first && ev.Name != lastName && ev.Name != "" {
				e.log.Info("netdev renamed", zap.Uint8("vnic", p.vport), zap.String("from", lastName), zap.String("ifname", ev.Name))
				e.event(PortEvent{VPort: p.vport, Kind: EventPlace, IfName: ev.Name, NetNS: p.NetNS()})
			}
			first, lastMAC, lastName = false, ev.MAC, ev.Name
		}
	}()
}

// lostNetdev takes p out of service when vnicd has lost its netdev: it
// was deleted, or moved where vnicd could not follow it (most often deleted
// there before vnicd looked). The port stays (DROP_ALL, link down) until
// vnic del or a restart, and leaves the poll loop: its fd has no more
// frames to give, every read would fail and count as a transmit error, and
// nothing watches the netdev any more. Frames received for it count
// rx_drop_state, as for any port that is not oper-up.
func (e *Engine) lostNetdev(p *Port) {
	e.setLinkUp(p, false)
	e.dp.remove(p)
}

// followPort points p's device at its netdev in the namespace it was
// moved to by hand, and watches it there, once the watcher that saw the
// move (its goroutine closes prev) has ended. A MovePort in between has
// already watched it anew.
func (e *Engine) followPort(p *Port, prev <-chan struct{}) {
	p.moveMu.Lock()
	defer p.moveMu.Unlock()
	<-prev
	if p.closing.Load() || p.watchDone != prev {
		return
	}
	if err := p.dev.Follow(); err != nil {
		e.log.Warn("cannot follow the netdev; the port drops its frames", zap.Uint8("vnic", p.vport), zap.Error(err))
		e.lostNetdev(p)
		return
	}
	e.log.Info("netdev followed", zap.Uint8("vnic", p.vport), zap.String("ifname", p.dev.Name()),
		zap.String("netns", p.NetNS()))
	if !p.closing.Load() {
		e.watchLink(p)
		e.event(PortEvent{VPort: p.vport, Kind: EventPlace, IfName: p.dev.Name(), NetNS: p.NetNS()})
	}
}

// capMTU brings the netdev's MTU down to the port's maxMTU when it is
// above: the kernel's opa_vnic refused such an MTU (max_mtu,
// docs/linux-compat.md §6), a TAP takes up to 65535, and the port would drop
// every frame longer than eth_mtu + 18.
func (e *Engine) capMTU(p *Port, mtu int) {
	limit := p.maxMTU()
	if mtu <= limit || p.closing.Load() {
		return
	}
	if err := p.dev.SetMTU(limit); err != nil {
		e.log.Warn("cannot lower the netdev's MTU to eth_mtu", zap.Uint8("vnic", p.vport), zap.Int("mtu", mtu), zap.Error(err))
		return
	}
	p.mtu.Store(int32(limit))
	e.log.Warn("netdev MTU set above eth_mtu; lowered", zap.Uint8("vnic", p.vport), zap.Int("mtu", mtu), zap.Int("eth_mtu", limit))
}

// McastPollInterval is how often a port's netdev multicast list is read
// again (mcast.go): a change is trapped (opcode 2) up to this late.
const McastPollInterval = time.Second

// EventKind is what changed on a port's netdev.
type EventKind uint8

// Port events.
const (
	EventLink  EventKind = iota + 1 // administrative up/down
	EventMAC                        // the netdev's MAC
	EventMcast                      // the netdev's multicast list changed
	EventPlace                      // the netdev renamed, or moved to another namespace, from outside vnicd
)

// PortEvent is a change on a port's netdev that the management plane hears
// about (VEMA traps, docs/linux-compat.md §4.9), or that the daemon records
// (EventPlace).
type PortEvent struct {
	VPort   uint8
	Kind    EventKind
	Up      bool    // EventLink
	MAC     [6]byte // EventMAC: the netdev's MAC now
	Initial bool    // EventMAC: the first reading, not a change
	// IfName and NetNS are where the netdev is now (EventPlace), NetNS as
	// Port.NetNS gives it.
	IfName, NetNS string
}

// SetEventHook sets the function told about port events (nil: none). It is
// called from the link watchers' goroutines.
func (e *Engine) SetEventHook(f func(PortEvent)) { e.hook.Store(&f) }

func (e *Engine) event(ev PortEvent) {
	if f := e.hook.Load(); f != nil && *f != nil {
		(*f)(ev)
	}
}

// TAPFactory returns the DeviceFactory that makes real TAP netdevs: named as
// the port's NetdevConfig says (vnic<vport> by default), with the port's MAC
// and MTU, placed in its namespace, up, with its addresses.
func TAPFactory(log *zap.Logger) DeviceFactory {
	return func(s DeviceSpec) (tap.Netdev, error) {
		name := s.Netdev.IfName
		if name == "" {
			name = fmt.Sprintf("vnic%d", s.VPort)
		}
		if s.Attach != "" {
			return tap.Attach(tap.Config{Name: name, MAC: s.MAC, MTU: s.MTU, NetNS: s.Netdev.NetNS, Queues: s.Queues}, s.Attach)
		}
		t, err := tap.Open(tap.Config{
			Name: name, MAC: s.MAC, MTU: s.MTU, NetNS: s.Netdev.NetNS, Addresses: s.Netdev.Addresses,
			Queues: s.Queues,
		})
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}
