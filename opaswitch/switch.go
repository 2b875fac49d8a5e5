package opaswitch

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"sync/atomic"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/handoff"
	"github.com/opavnic/opavnic/vema"
)

// PortState is a port's logical state, as PortInfo's PortState field has
// it: the HFI's own type. A port carries data packets only when Active;
// SMPs (SC 15) cross it from Init on, so that the SM can sweep and bring
// it up.
type PortState = hfi.PortState

// Port states.
const (
	StateDown   = hfi.StateDown
	StateInit   = hfi.StateInit
	StateArmed  = hfi.StateArmed
	StateActive = hfi.StateActive
)

// scSMP is the service class of subnet management packets (VL15), which
// cross ports that are not yet Active.
const scSMP = 15

// DefaultPorts is the port count of a switch whose config gives none: an
// OPA edge switch's 48.
const DefaultPorts = 48

// MaxPorts bounds a switch's external ports: an LFT entry is a byte, and
// 0xFF means drop.
const MaxPorts = 254

// Cable is one end of a cable, on one switch port: the port's own
// transport (a UDP socket bound to its endpoint, or an in-memory one in
// tests) and the endpoint of the cable's other end, the only one the port
// takes datagrams from and sends them to.
type Cable struct {
	Port      int
	Transport hfi.PollTransport
	Peer      netip.AddrPort
}

// Config makes a Switch.
type Config struct {
	Name     string
	GUID     uint64
	NumPorts int // external ports; 0 means DefaultPorts
	Cables   []Cable
	// SMA, when set, takes the packets for the switch's own management
	// port (port 0) in place of the switch's subnet management agent: a
	// test's probe. It runs off the data plane, on a copy of the packet;
	// inPort is the port the packet came in on.
	SMA func(pkt []byte, inPort int)
}

// Port is one external port of a switch.
type Port struct {
	num   int
	state atomic.Uint32
	tr    hfi.PollTransport // nil: not cabled
	peer  netip.AddrPort
	// Counters are the port's counters (docs/fabric.md).
	Counters PortCounters

	out []hfi.Message // the loop's batch for this port, sent at the end of each read batch
}

// Num returns the port's number.
func (p *Port) Num() int { return p.num }

// State returns the port's logical state.
func (p *Port) State() PortState { return PortState(p.state.Load()) }

// SetState sets the port's logical state (the SMA does, on the SM's
// PortInfo Set).
func (p *Port) SetState(s PortState) { p.state.Store(uint32(s)) }

// Cabled reports whether the port has a cable.
func (p *Port) Cabled() bool { return p.tr != nil }

// Peer returns the endpoint of the cable's other end (invalid when the
// port has no cable).
func (p *Port) Peer() netip.AddrPort { return p.peer }

// Switch is an emulated OPA switch: external ports 1..NumPorts, each with
// at most one cable, and the management port 0. Packets go from port to
// port unchanged, by DLID, through the LFT and the MFT (Tables).
type Switch struct {
	name  string
	guid  uint64
	ports []*Port // index = port number; ports[0] is nil (the management port has no cable)

	// Tables are the switch's forwarding tables, set by its SMA.
	Tables Tables

	sma *handoff.Queue[int]
	st  smaState

	// SMA counts what the switch's SMA did not answer or pass on.
	SMA SMACounters
	// SMADrops counts packets for port 0 dropped because the SMA was
	// MaxQueuedSMPs behind.
	SMADrops atomic.Uint64
}

// MaxQueuedSMPs bounds the packets the data plane has handed to the SMA
// and it has not handled yet.
const MaxQueuedSMPs = 64

// New makes a switch. Every cable's port must be in 1..NumPorts and
// carry one cable at most. A cabled port starts Init (its link is taken
// as up: the emulator has no link training), an uncabled one Down; the SM
// brings them up.
func New(cfg Config) (*Switch, error) {
	n := cfg.NumPorts
	if n == 0 {
		n = DefaultPorts
	}
	if n < 1 || n > MaxPorts {
		return nil, fmt.Errorf("opaswitch: %d ports: must be 1..%d", n, MaxPorts)
	}
	s := &Switch{name: cfg.Name, guid: cfg.GUID, ports: make([]*Port, n+1)}
	for i := 1; i <= n; i++ {
		s.ports[i] = &Port{num: i}
		s.ports[i].SetState(StateDown)
	}
	s.st.port0, s.st.smStarted = StateInit, make([]bool, n+1)
	s.st.desc = vema.NodeDescriptionFrom(cfg.Name)
	for _, c := range cfg.Cables {
		if c.Port < 1 || c.Port > n {
			return nil, fmt.Errorf("opaswitch: %s: cable on port %d: the switch has ports 1..%d", cfg.Name, c.Port, n)
		}
		p := s.ports[c.Port]
		if p.tr != nil {
			return nil, fmt.Errorf("opaswitch: %s: port %d has two cables", cfg.Name, c.Port)
		}
		if c.Transport == nil || !c.Peer.IsValid() {
			return nil, fmt.Errorf("opaswitch: %s: port %d: a cable needs a transport and the endpoint of its other end", cfg.Name, c.Port)
		}
		p.tr, p.peer = c.Transport, unmap(c.Peer)
		p.SetState(StateInit)
		p.out = make([]hfi.Message, 0, c.Transport.BatchSize())
	}
	handle := s.handleSMP
	if cfg.SMA != nil {
		handle = cfg.SMA
	}
	s.sma = handoff.New(MaxQueuedSMPs, encap.MaxPacketLen, handle)
	return s, nil
}

func unmap(ap netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) }

// Name returns the switch's name.
func (s *Switch) Name() string { return s.name }

// GUID returns the switch's node GUID.
func (s *Switch) GUID() uint64 { return s.guid }

// NumPorts returns the number of external ports.
func (s *Switch) NumPorts() int { return len(s.ports) - 1 }

// Port returns external port n (1..NumPorts), or nil.
func (s *Switch) Port(n int) *Port {
	if n < 1 || n >= len(s.ports) {
		return nil
	}
	return s.ports[n]
}

// Close closes the switch's cables, for a switch that never ran: Run
// closes them when it returns.
func (s *Switch) Close() {
	for _, p := range s.ports[1:] {
		if p.tr != nil {
			p.tr.Close()
		}
	}
}

// WaitSMA returns once every packet handed to the SMA so far has been
// handled.
func (s *Switch) WaitSMA() { s.sma.Wait() }

// ErrNotCabled is Send's error for a port without a cable.
var ErrNotCabled = errors.New("opaswitch: the port has no cable")

// Send sends one packet out port n, as the SMA does with its answers and
// with directed-route SMPs it forwards. It may be called from any
// goroutine.
func (s *Switch) Send(n int, pkt []byte) error {
	p := s.Port(n)
	if p == nil || p.tr == nil {
		return fmt.Errorf("opaswitch: %s: port %d: %w", s.name, n, ErrNotCabled)
	}
	msgs := [1]hfi.Message{{Buf: pkt, N: len(pkt), Addr: p.peer}}
	if k, err := p.tr.WriteBatch(msgs[:]); k != 1 {
		p.Counters.XmitDiscards.Add(1)
		return fmt.Errorf("opaswitch: %s: port %d: %v", s.name, n, err)
	}
	p.Counters.XmitPkts.Add(1)
	p.Counters.XmitData.Add(uint64(len(pkt)) / 8)
	return nil
}

// receive takes one datagram that came in on port in from src: it checks
// it and queues it on the ports it goes out of (their out batches, which
// flush sends), or hands it to the SMA, or drops and counts it.
func (s *Switch) receive(in *Port, pkt []byte, src netip.AddrPort) {
	if unmap(src) != in.peer {
		in.Counters.RcvForeign.Add(1)
		return
	}
	h, err := encap.Parse(pkt, false)
	if err != nil {
		in.Counters.RcvErrors.Add(1)
		return
	}
	st := in.State()
	smp := h.SC() == scSMP
	if st == StateDown || (st != StateActive && !smp) {
		in.Counters.RcvStateDrops.Add(1)
		return
	}
	in.Counters.RcvPkts.Add(1)
	in.Counters.RcvData.Add(uint64(len(pkt)) / 8)
	t := s.Tables.load()
	switch dlid := h.DLID(); {
	case dlid == Permissive:
		s.toSMA(pkt, in.num)
	case dlid >= MulticastBase:
		m := t.multicast(dlid)
		if m == nil || m.IsZero() {
			in.Counters.RcvSwitchRelayErrors.Add(1)
			return
		}
		if m.Has(int(SMAPort)) {
			s.toSMA(pkt, in.num)
		}
		for w, word := range m {
			for word != 0 {
				b := word & -word
				word &^= b
				if p := w*64 + bits.TrailingZeros64(b); p != 0 && p != in.num {
					s.queue(p, pkt, smp)
				}
			}
		}
	default:
		switch e := t.unicast(dlid); {
		case e == SMAPort:
			s.toSMA(pkt, in.num)
		case int(e) >= len(s.ports):
			in.Counters.RcvSwitchRelayErrors.Add(1)
		default:
			s.queue(int(e), pkt, smp)
		}
	}
}

// queue adds pkt to port n's out batch, or counts it discarded when the
// port cannot carry it.
func (s *Switch) queue(n int, pkt []byte, smp bool) {
	if n >= len(s.ports) {
		return
	}
	p := s.ports[n]
	st := p.State()
	if p.tr == nil || st == StateDown || (st != StateActive && !smp) {
		p.Counters.XmitDiscards.Add(1)
		return
	}
	p.out = append(p.out, hfi.Message{Buf: pkt, N: len(pkt), Addr: p.peer})
	if len(p.out) == cap(p.out) {
		s.flushPort(p)
	}
}

// flushPort sends port p's out batch.
func (s *Switch) flushPort(p *Port) {
	if len(p.out) == 0 {
		return
	}
	sent, _ := p.tr.WriteBatch(p.out)
	var flits uint64
	for i := range p.out {
		if !p.out[i].Refused {
			flits += uint64(p.out[i].N) / 8
		}
		p.out[i].Buf = nil
	}
	p.Counters.XmitPkts.Add(uint64(sent))
	p.Counters.XmitData.Add(flits)
	if d := len(p.out) - sent; d > 0 {
		p.Counters.XmitDiscards.Add(uint64(d))
	}
	p.out = p.out[:0]
}

// toSMA hands a packet for port 0 to the SMA.
func (s *Switch) toSMA(pkt []byte, in int) {
	if !s.sma.Put(pkt, in) {
		s.SMADrops.Add(1)
	}
}
