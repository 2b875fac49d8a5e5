package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// DeviceSpec is what a DeviceFactory makes a netdev from.
type DeviceSpec struct {
	VPort  uint8
	VESW   encap.VESWID // the vesw the port is created on (VESWPortInfo's vesw_id)
	MAC    [6]byte
	MTU    int
	Netdev NetdevConfig
	// Attach, when set, asks for the persistent netdev named Netdev.IfName
	// in Netdev.NetNS whose alias is Attach to be taken over (tap.Attach)
	// instead of a new one: a claimed port kept across a vnicd restart
	// (claims.go). Netdev.Addresses are then not set.
	Attach string
	// Queues is how many queues the engine's data plane has (one poll loop
	// each, Engine.EnableQueues): a device with as many (a multiqueue TAP)
	// has each carried by its own loop. 1 for a single-queue data plane.
	Queues int
}

// DeviceFactory makes the netdev of a new port. The real one opens a TAP;
// tests pass fakes.
type DeviceFactory func(DeviceSpec) (tap.Netdev, error)

// Engine is the VNIC side of one HFI: its ports, the data plane's poll
// loops that carry their frames both ways, and the receiver for L4 0x78
// that steers packets to ports by vesw_id.
type Engine struct {
	log       *zap.Logger
	hfi       *hfi.HFI
	newDevice DeviceFactory

	mu      sync.Mutex // control path: ports, closing and the rx table
	ports   map[uint8]*Port
	closing bool // Close has begun: SetPort creates no port any more
	rx      atomic.Pointer[rxTable]

	// rx0 is the receive state of queue 0 (the HFI's registered receiver,
	// Engine.Receive); each further queue's loop has its own
	// (EnableQueues).
	rx0 *queueRx

	dp *dataPlane // the poll loops; replaced only before the first port (EnableQueues)

	hook atomic.Pointer[func(PortEvent)]

	// RxBadTail counts VNIC packets whose tail pad count left no frame.
	RxBadTail atomic.Uint64
	// RxNoPort counts VNIC packets for a vesw no port is on (also counted as
	// rx_bad_veswid on the lowest-numbered port, as the kernel did).
	RxNoPort atomic.Uint64
}

// rxTable is the receive steering: vesw_id -> port, immutable once built.
type rxTable struct {
	byVESW map[encap.VESWID]*Port
	first  *Port // lowest vport index, charged with rx_bad_veswid
}

// ErrPortConfig is wrapped by SetPort's validation errors.
var ErrPortConfig = errors.New("vnicd: bad port config")

// ErrEngineClosed is returned by SetPort for a new port once Close has
// begun: a port made then would miss Close's removal of every port.
var ErrEngineClosed = errors.New("vnicd: the engine is closed")

// ErrNotPollable is NewEngine's error for an HFI whose transport a poll
// loop cannot drive (it is not an hfi.PollTransport).
var ErrNotPollable = errors.New("vnicd: the HFI's transport cannot be polled")

// NewEngine makes an engine on h, with a data plane of one poll loop on h's
// transport (EnableQueues adds more), and registers it for L4 0x78. h's
// transport must be an hfi.PollTransport. The engine's frames flow once
// RunDataPlane runs.
func NewEngine(h *hfi.HFI, newDevice DeviceFactory, log *zap.Logger) (*Engine, error) {
	if log == nil {
		log = zap.NewNop()
	}
	e := &Engine{
		log:       log.Named("engine"),
		hfi:       h,
		newDevice: newDevice,
		ports:     make(map[uint8]*Port),
	}
	e.rx.Store(&rxTable{byVESW: map[encap.VESWID]*Port{}})
	e.rx0 = &queueRx{e: e}
	dp, err := e.newDataPlane(nil)
	if err != nil {
		return nil, err
	}
	e.dp = dp
	h.Register(encap.L4Ethernet, e)
	return e, nil
}

// HFI returns the engine's fabric port.
func (e *Engine) HFI() *hfi.HFI { return e.hfi }

// Port returns the port at vport, or nil.
func (e *Engine) Port(vport uint8) *Port {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ports[vport]
}

// Ports returns the ports ordered by vport index.
func (e *Engine) Ports() []*Port {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Port, 0, len(e.ports))
	for _, p := range e.ports {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *Port) int { return int(a.vport) - int(b.vport) })
	return out
}

// SetPort applies a port configuration, creating the port and its netdev if
// vport has none (as a VESWPortInfo Set does). On an existing port the netdev
// follows as the kernel's did: a new base MAC becomes its address, an MTU above
// eth_mtu is lowered to it (never raised), and config_state decides carrier
// and oper state. nd is used only when the port is created. macs replaces the
// MAC table when non-nil.
func (e *Engine) SetPort(vport uint8, cfg PortConfig, nd NetdevConfig, macs []MACEntry) error {
	if vport == 0xFF {
		return fmt.Errorf("%w: vport index 255 is reserved", ErrPortConfig)
	}
	if cfg.VESW.EthMTU != 0 && int(cfg.VESW.EthMTU)+MaxFrameOverMTU > encap.MaxFrameLen {
		return fmt.Errorf("%w: eth_mtu %d: a full frame (MTU+18) does not fit a 16B packet (max eth_mtu %d)",
			ErrPortConfig, cfg.VESW.EthMTU, encap.MaxFrameLen-MaxFrameOverMTU)
	}
	if cfg.VESW.EthMTU == 0 {
		cfg.VESW.EthMTU = 1500
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	vesw := cfg.VESW.VESWID & encap.VESWIDMask
	for _, q := range e.ports {
		if q.vport != vport && vesw != 0 && q.st.Load().cfg.VESW.VESWID&encap.VESWIDMask == vesw {
			return fmt.Errorf("%w: vesw %d is already used by vport %d", ErrPortConfig, vesw, q.vport)
		}
	}
	p := e.ports[vport]
	if macs == nil && p != nil {
		macs = p.MACTable()
	}
	st := newPortState(cfg, macs)
	if p == nil {
		if e.closing {
			return fmt.Errorf("vnicd: vport %d: %w", vport, ErrEngineClosed)
		}
		if e.dp.isClosed() {
			return fmt.Errorf("vnicd: vport %d: %w", vport, ErrDataPlaneStopped)
		}
		queues := len(e.dp.loops)
		dev, err := e.newDevice(DeviceSpec{VPort: vport, VESW: vesw, MAC: cfg.Port.BaseMAC, MTU: max(int(cfg.VESW.EthMTU), MinEthMTU), Netdev: nd, Queues: queues})
		if err != nil {
			return fmt.Errorf("vnicd: vport %d: %w", vport, err)
		}
		p = &Port{vport: vport, dev: dev, netdev: nd}
		p.st.Store(st)
		// A TAP made now is up; one taken over (tap.Attach) is as its user
		// left it, and the port starts from that, not from a guess the
		// watcher's first event then corrects with a link trap.
		up, err := dev.IsUp()
		p.linkUp.Store(up || err != nil)
		p.mtu.Store(int32(p.maxMTU())) // as the netdev was made; its watcher corrects it
		p.pq = []*portQueue{{dev: dev}}
		for i := 1; i < min(dev.Queues(), queues); i++ {
			p.pq = append(p.pq, &portQueue{dev: dev.Queue(i)})
		}
		if err := e.dp.add(p); err != nil {
			dev.Close()
			return err
		}
		e.ports[vport] = p
		e.watchLink(p)
		e.log.Info("vnic port created", zap.Uint8("vnic", vport), zap.String("ifname", dev.Name()),
			zap.Uint16("vesw", uint16(vesw)), zap.Stringer("pkey", cfg.VESW.PKey), zap.Int("queues", len(p.pq)))
		if len(p.pq) < queues {
			e.log.Warn("the netdev has fewer queues than the data plane: the other loops write its received frames through its first queue",
				zap.Uint8("vnic", vport), zap.Int("queues", len(p.pq)), zap.Int("loops", queues))
		}
	} else {
		old := p.st.Load().cfg
		p.st.Store(st)
		// A zero base_mac_addr (a DeleteVESW's power-on values) is left
		// off the netdev: the kernel's eth_commit_mac_addr_change would
		// put it there, but a TAP refuses an all-zero MAC, and the next
		// Set gives a real one.
		if old.Port.BaseMAC != cfg.Port.BaseMAC && cfg.Port.BaseMAC != ([6]byte{}) {
			if err := p.dev.SetMAC(cfg.Port.BaseMAC); err != nil {
				e.log.Warn("cannot set MAC", zap.Uint8("vnic", vport), zap.Error(err))
			}
		}
		if int(p.mtu.Load()) > p.maxMTU() {
			if err := p.dev.SetMTU(p.maxMTU()); err != nil {
				e.log.Warn("cannot lower MTU", zap.Uint8("vnic", vport), zap.Error(err))
			} else {
				p.mtu.Store(int32(p.maxMTU()))
			}
		}
	}
	e.applyState(p)
	e.rebuildRx()
	return nil
}

// applyState sets carrier and oper state from config_state and the link.
func (e *Engine) applyState(p *Port) {
	p.updateOper()
	on := p.st.Load().cfg.Port.ConfigState == StateForwarding
	if err := p.dev.SetCarrier(on); err != nil {
		e.log.Warn("cannot set carrier", zap.Uint8("vnic", p.vport), zap.Error(err))
	}
}

// setLinkUp records the netdev's administrative state (from its link
// watcher) and recomputes the port's oper state.
func (e *Engine) setLinkUp(p *Port, up bool) {
	p.linkUp.Store(up)
	p.updateOper()
}

// MovePort moves vport's netdev into the namespace netns ("" is vnicd's
// own) under ifname, up, with addrs (TAP.MoveTo: the port's data path goes
// on, its fd is untouched). On error the netdev is where it was. The link
// watcher follows the netdev to its new place.
func (e *Engine) MovePort(vport uint8, netns, ifname string, addrs []netip.Prefix) error {
	p := e.Port(vport)
	if p == nil {
		return fmt.Errorf("vnicd: no vport %d", vport)
	}
	p.moveMu.Lock()
	defer p.moveMu.Unlock()
	err := p.dev.MoveTo(netns, ifname, addrs) // ends the device's watches
	if !p.closing.Load() {
		if p.watchDone != nil {
			<-p.watchDone // the old watcher has handled its last event
		}
		e.watchLink(p)
	}
	if err == nil {
		e.log.Info("vnic port moved", zap.Uint8("vnic", vport), zap.String("ifname", p.dev.Name()), zap.String("netns", netns))
	}
	return err
}

// DeletePort removes a port and its netdev.
func (e *Engine) DeletePort(vport uint8) error {
	e.mu.Lock()
	p := e.ports[vport]
	delete(e.ports, vport)
	e.rebuildRx()
	e.mu.Unlock()
	if p == nil {
		return fmt.Errorf("vnicd: no vport %d", vport)
	}
	return e.closePort(p)
}

func (e *Engine) closePort(p *Port) error {
	p.closing.Store(true)
	e.dp.remove(p)
	err := p.dev.Close()
	e.log.Info("vnic port removed", zap.Uint8("vnic", p.vport), zap.String("ifname", p.dev.Name()))
	return err
}

// Close removes every port; SetPort creates none once Close has begun (a
// management Set the poll loop handles while the engine shuts down).
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closing = true
	ports := e.ports
	e.ports = make(map[uint8]*Port)
	e.rebuildRx()
	e.mu.Unlock()
	var errs []error
	for _, p := range ports {
		errs = append(errs, e.closePort(p))
	}
	e.dataPlane().stop()
	return errors.Join(errs...)
}

// rebuildRx rebuilds the receive steering table; e.mu is held.
func (e *Engine) rebuildRx() {
	t := &rxTable{byVESW: make(map[encap.VESWID]*Port, len(e.ports))}
	for _, p := range e.ports {
		if v := p.st.Load().cfg.VESW.VESWID & encap.VESWIDMask; v != 0 {
			t.byVESW[v] = p
		}
		if t.first == nil || p.vport < t.first.vport {
			t.first = p
		}
	}
	e.rx.Store(t)
}

// Receive implements hfi.Receiver for L4 0x78 on the HFI's own transport
// (queue 0): the kernel's per-port receive checks, then the frame is queued
// for its TAP until Flush.
func (e *Engine) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	e.rx0.Receive(pkt, h, src)
}

// Flush implements hfi.Receiver: each port with frames writes them to its
// TAP in one batch.
func (e *Engine) Flush() { e.rx0.Flush() }

// queueRx is the receive side of one queue: the VNIC packets its loop
// reads, checked and queued per port until Flush writes them to the port's
// device queue. It is an hfi.Receiver, used by one goroutine.
type queueRx struct {
	e       *Engine
	q       int
	dirty   []*Port
	pending [256][][]byte // by vport: frames of the current batch, aliasing HFI buffers

	// The last steering lookup: the table it was made in (tables are never
	// changed once stored, rebuildRx makes a new one), the vesw_id and its
	// port. Packets come in runs of one vesw, and a VESWID key costs the map
	// a hash per packet.
	lastT    *rxTable
	lastVESW encap.VESWID
	lastP    *Port
}

// Receive implements hfi.Receiver.
func (r *queueRx) Receive(pkt []byte, h encap.Header16B, _ netip.AddrPort) {
	e := r.e
	frame, vesw, err := encap.VNICFrame(pkt)
	if err != nil {
		e.RxBadTail.Add(1)
		return
	}
	t := e.rx.Load()
	if t != r.lastT || vesw != r.lastVESW {
		r.lastT, r.lastVESW, r.lastP = t, vesw, t.byVESW[vesw]
	}
	p := r.lastP
	if p == nil {
		e.RxNoPort.Add(1)
		if t.first != nil {
			t.first.Counters.RxBadVESWID.Add(1)
		}
		return
	}
	c := &p.Counters
	if !p.fwd.Load() {
		c.RxDropState.Add(1)
		return
	}
	st := p.st.Load()
	if h.PKey() != st.cfg.VESW.PKey {
		c.RxBadPKey.Add(1)
		return
	}
	// Longer than the netdev's MTU allows (which is at most eth_mtu, as the
	// kernel's max_mtu kept it) is oversize: the kernel checked against
	// netdev->mtu, so a user who lowers the MTU gets no longer frames. The
	// kernel counts such frames, and runts, in rx_packets, rx_bytes and the
	// histogram; a good frame is counted once the device took it (Flush),
	// as the kernel counts none that it drops for want of room (rx_fifo).
	n := len(frame)
	if n > st.maxFrame || n > int(p.mtu.Load())+MaxFrameOverMTU || n < encap.MinFrameLen {
		c.RxPackets.Add(1)
		c.RxBytes.Add(uint64(n) + 4)
		c.RxLen[lenBucket(n)].Add(1)
		if n < encap.MinFrameLen {
			c.RxRunt.Add(1)
		} else {
			c.RxOversize.Add(1)
		}
		return
	}
	q := &r.pending[p.vport]
	if len(*q) == 0 {
		r.dirty = append(r.dirty, p)
	}
	*q = append(*q, frame)
}

// Flush implements hfi.Receiver: each port with frames writes them to its
// device queue (its first one, or the device, if it has fewer queues than
// the data plane) in one batch.
func (r *queueRx) Flush() {
	for _, p := range r.dirty {
		var w tap.Poller = p.dev
		if r.q < len(p.pq) {
			w = p.pq[r.q].dev
		}
		pending := &r.pending[p.vport]
		// Write stops at a frame the device refuses: count it, go on. The
		// frames it took are counted received.
		var rc rxCount
		for q := *pending; len(q) > 0 && !p.closing.Load(); {
			n, err := w.Write(q, 0)
			rc.add(q[:min(max(n, 0), len(q))])
			if err == nil {
				break
			}
			if isClosed(err) {
				p.Counters.RxFifoErrors.Add(uint64(len(q) - n))
				break
			}
			p.Counters.RxFifoErrors.Add(1)
			q = q[n+1:]
		}
		rc.addTo(&p.Counters)
		clear(*pending)
		*pending = (*pending)[:0]
	}
	clear(r.dirty)
	r.dirty = r.dirty[:0]
}

// rxCount sums the receive counters of a batch of good frames, so that a
// port's counters take one atomic add each per batch, not per frame.
type rxCount struct {
	packets, bytes uint64
	mcast, vlan    uint64
	len            [numLenBuckets]uint64
}

// add counts frames, good frames the device took.
func (rc *rxCount) add(frames [][]byte) {
	for _, f := range frames {
		n := len(f)
		rc.packets++
		rc.bytes += uint64(n) + 4
		rc.len[lenBucket(n)]++
		if encap.IsMulticastMAC(f) {
			rc.mcast++
		}
		if isVLAN(f) {
			rc.vlan++
		}
	}
}

// addTo adds the sums to c.
func (rc *rxCount) addTo(c *PortCounters) {
	if rc.packets == 0 {
		return
	}
	c.RxPackets.Add(rc.packets)
	c.RxBytes.Add(rc.bytes)
	for i, v := range rc.len {
		if v != 0 {
			c.RxLen[i].Add(v)
		}
	}
	if rc.mcast != 0 {
		c.RxMcastBcast.Add(rc.mcast)
	}
	if u := rc.packets - rc.mcast; u != 0 {
		c.RxUnicast.Add(u)
	}
	if rc.vlan != 0 {
		c.RxVLAN.Add(rc.vlan)
	}
	if u := rc.packets - rc.vlan; u != 0 {
		c.RxUntagged.Add(u)
	}
}

// isClosed reports errors that mean the device is gone.
func isClosed(err error) bool {
	return errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
}
