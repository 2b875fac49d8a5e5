package hfi

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/opavnic/opavnic/encap"
)

// PortState is the logical port state (PortInfo byte 19, bits 3:0).
type PortState uint32

// Port states.
const (
	StateDown   PortState = 1
	StateInit   PortState = 2
	StateArmed  PortState = 3
	StateActive PortState = 4
)

func (s PortState) String() string {
	switch s {
	case StateDown:
		return "Down"
	case StateInit:
		return "Init"
	case StateArmed:
		return "Armed"
	case StateActive:
		return "Active"
	}
	return "NOP"
}

// Receiver takes the packets of one L4 type that passed the HFI's checks.
//
// Receive gets the whole packet and its header view; both alias the HFI's
// receive buffer and stay valid until the Flush that ends the batch, so a
// receiver may queue them and write them out in Flush without copying. src is
// the datagram's source endpoint. Receive and Flush are called from the HFI's
// receive goroutine only, and must not block for long: they are the receive
// path.
type Receiver interface {
	Receive(pkt []byte, h encap.Header16B, src netip.AddrPort)
	Flush()
}

// Config configures an HFI.
type Config struct {
	// LID is the port's 16B LID; 0 until the SM assigns one.
	LID uint32
	// VerifyICRC checks the ICRC of every received packet. Turning it off is
	// for experiments only.
	VerifyICRC bool
	// PKeys is the port's partition table.
	PKeys []encap.PKey
	// TrustAnyMgmtSource skips the source check (docs/wire.md §7: the SLID's
	// directory endpoint must be the datagram's source) for management
	// packets, L4 0x08, only. A fabric manager needs it: nodes announce
	// themselves before they are in any directory, so the FM cannot check
	// them by endpoint and matches them by port GUID instead (docs/management.md
	// §6). Every other L4 type is still checked.
	TrustAnyMgmtSource bool
}

// HFI is one software fabric port on a Transport.
type HFI struct {
	tr        Transport
	verify    bool
	trustMgmt bool
	lid       atomic.Uint32
	state     atomic.Uint32
	routes    atomic.Pointer[routes]
	uplink    atomic.Pointer[netip.AddrPort] // SetUplink
	pkeys     atomic.Pointer[[]encap.PKey]
	recv      [256]Receiver
	traffic   trafficTable

	// Counters are the port's counters; read them with Load.
	Counters Counters

	bad badSource
}

// badSource is the last packet that failed the source check
// (RcvBadSource), for the log. It is written on that drop path only, with
// TryLock, so that the path never waits (another queue's loop writing it
// at the same moment wins).
type badSource struct {
	mu   sync.Mutex
	slid uint32
	from netip.AddrPort
	set  bool
}

// LastBadSource returns the source LID and the endpoint of the last packet
// that came from an endpoint that is not its SLID's in the directory
// (rcv_bad_source), if any did.
func (h *HFI) LastBadSource() (slid uint32, from netip.AddrPort, ok bool) {
	h.bad.mu.Lock()
	defer h.bad.mu.Unlock()
	return h.bad.slid, h.bad.from, h.bad.set
}

// New makes an HFI on tr with an empty directory. Register receivers, set the
// directory, then call Run.
func New(tr Transport, cfg Config) *HFI {
	h := &HFI{tr: tr, verify: cfg.VerifyICRC, trustMgmt: cfg.TrustAnyMgmtSource}
	h.lid.Store(cfg.LID & encap.LID16BMask)
	if cfg.LID != 0 {
		h.state.Store(uint32(StateActive))
	} else {
		h.state.Store(uint32(StateInit))
	}
	pk := append([]encap.PKey(nil), cfg.PKeys...)
	h.pkeys.Store(&pk)
	empty, _ := NewDirectory(nil, nil)
	h.routes.Store(h.newRoutes(empty, h.lid.Load()))
	if r, ok := tr.(peerErrorReporter); ok {
		r.countPeerErrorsIn(&h.Counters.XmitPeerErrors, &h.Counters.PeerErrorFloods)
	}
	return h
}

// peerErrorReporter is a transport that records the errors the kernel
// reports for the datagrams it sent (the UDP transport).
type peerErrorReporter interface {
	PeerErrors() []PeerError
	countPeerErrorsIn(errs, floods *atomic.Uint64)
}

// PeerErrors returns what the transport recorded of the errors the kernel
// reported for datagrams sent, by endpoint, the latest first (UDP.PeerErrors);
// nil for a transport that does not record them.
func (h *HFI) PeerErrors() []PeerError {
	if r, ok := h.tr.(peerErrorReporter); ok {
		return r.PeerErrors()
	}
	return nil
}

// Register routes packets of L4 type l4 to r. It must be called before Run.
func (h *HFI) Register(l4 uint8, r Receiver) { h.recv[l4] = r }

// Transport returns the HFI's wire.
func (h *HFI) Transport() Transport { return h.tr }

// LID returns the port's 16B LID (0 when unassigned).
func (h *HFI) LID() uint32 { return h.lid.Load() }

// SetLID assigns the port's LID; a non-zero LID makes the port Active.
func (h *HFI) SetLID(lid uint32) {
	lid &= encap.LID16BMask
	h.lid.Store(lid)
	h.routes.Store(h.newRoutes(h.routes.Load().dir, lid))
	if lid != 0 {
		h.state.Store(uint32(StateActive))
	} else {
		h.state.Store(uint32(StateInit))
	}
}

// State returns the logical port state.
func (h *HFI) State() PortState { return PortState(h.state.Load()) }

// SetState sets the logical port state.
func (h *HFI) SetState(s PortState) { h.state.Store(uint32(s)) }

// PKeys returns the partition table.
func (h *HFI) PKeys() []encap.PKey { return *h.pkeys.Load() }

// SetPKeys replaces the partition table.
func (h *HFI) SetPKeys(p []encap.PKey) {
	pk := append([]encap.PKey(nil), p...)
	h.pkeys.Store(&pk)
}

// HasPKey reports whether p's base is in the partition table.
func (h *HFI) HasPKey(p encap.PKey) bool {
	for _, k := range *h.pkeys.Load() {
		if k.Base() == p.Base() {
			return true
		}
	}
	return false
}

// Directory returns the directory in use.
func (h *HFI) Directory() *Directory { return h.routes.Load().dir }

// SetUplink puts the port on a switched fabric: ep is the switch port its
// cable ends at. From then on every packet, unicast or multicast, is sent
// to ep (the switch forwards it by DLID and replicates multicast), only
// packets from ep are taken, and a multicast packet is taken for any group
// (the switch sends only the groups the port is in). The directory is kept
// but not used.
func (h *HFI) SetUplink(ep netip.AddrPort) {
	ep = netip.AddrPortFrom(ep.Addr().Unmap(), ep.Port())
	h.uplink.Store(&ep)
	h.routes.Store(h.newRoutes(h.routes.Load().dir, h.lid.Load()))
}

// Uplink returns the switch port the HFI is cabled to, if it is on a
// switched fabric.
func (h *HFI) Uplink() (netip.AddrPort, bool) {
	if up := h.uplink.Load(); up != nil {
		return *up, true
	}
	return netip.AddrPort{}, false
}

// SetDirectory swaps in a new directory. Packets in flight see either the old
// or the new one, never a mix.
func (h *HFI) SetDirectory(d *Directory) { h.routes.Store(h.newRoutes(d, h.lid.Load())) }

// newRoutes makes d's routes for port self, with the traffic entries of its
// LIDs.
func (h *HFI) newRoutes(d *Directory, self uint32) *routes {
	r := newRoutes(d, self, h.traffic.entries(d))
	if up := h.uplink.Load(); up != nil {
		r.uplink = *up
	}
	return r
}

// Run receives until ctx is done or the transport is closed. It returns nil
// on a clean stop (ctx cancelled or transport closed) and the transport's
// error otherwise. Cancelling ctx closes the transport. It is the receive
// loop of an HFI that has no poll loop of its own (the fabric manager's);
// vnicd's engine reads its transports in its poll loops instead
// (NewRxPoller).
func (h *HFI) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { h.tr.Close() })
	defer stop()
	msgs := newReadBatch(h.tr.BatchSize())
	for {
		k, err := h.tr.ReadBatch(msgs)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		h.ReceiveBatch(msgs[:k])
	}
}

// RxPoller is the receive side of an HFI for a caller's own poll loop (one
// goroutine): each Poll reads what is queued without waiting and handles it
// as Run would.
type RxPoller struct {
	h    *HFI
	tr   PollTransport
	recv *[256]Receiver
	msgs []Message

	queue, queues int           // SetQueue
	misrouted     atomic.Uint64 // VNIC packets steered for another queue
}

// NewRxPoller returns an RxPoller, or nil when the transport cannot be
// polled (is not a PollTransport).
func (h *HFI) NewRxPoller() *RxPoller {
	tr, ok := h.tr.(PollTransport)
	if !ok {
		return nil
	}
	return &RxPoller{h: h, tr: tr, recv: &h.recv, msgs: newReadBatch(h.tr.BatchSize())}
}

// NewQueueRxPoller returns an RxPoller for another queue of the HFI's port
// (ListenUDPQueues): it reads tr, checks its packets as the HFI's own, and
// hands those of each L4 type to recv's receiver instead of the registered
// one, so that each queue's poll loop has receivers of its own. A packet of
// an L4 type recv has no receiver for is counted in RcvUnknownL4.
func (h *HFI) NewQueueRxPoller(tr PollTransport, recv map[uint8]Receiver) *RxPoller {
	table := new([256]Receiver)
	for l4, r := range recv {
		table[l4] = r
	}
	return &RxPoller{h: h, tr: tr, recv: table, msgs: newReadBatch(tr.BatchSize())}
}

// Control runs f with the transport's file descriptor (for the caller's
// epoll set).
func (p *RxPoller) Control(f func(fd uintptr)) error { return p.tr.Control(f) }

// DrainErrors takes the errors the kernel queued on the transport for
// datagrams sent (UDP.DrainErrors), if it queues any; the caller's poll
// loop calls it when its epoll set reports an error on the fd (EPOLLERR),
// which it does, level-triggered, for as long as one is queued.
func (p *RxPoller) DrainErrors() {
	if d, ok := p.tr.(interface{ DrainErrors() error }); ok {
		_ = d.DrainErrors()
	}
}

// Offsets in a 16B header of the bytes a queue group steers by: the L4
// type, and the low byte of the entropy field (bits 15:0 of the fourth
// little-endian word), which holds all of the 8-bit entropy a VNIC sends
// (encap.FoldEntropy).
const (
	steerL4Off      = 8
	steerEntropyOff = 12
)

// steerKey is what a queue group steers a datagram by (steeringProgram):
// its L4 type and entropy byte, or all ones when it is too short for them.
// A UDP GSO send is steered whole, by its first datagram, so WriteBatch
// keeps each such send to one key.
func steerKey(b []byte) uint16 {
	if len(b) <= steerEntropyOff {
		return 0xFFFF
	}
	return uint16(b[steerL4Off])<<8 | uint16(b[steerEntropyOff])
}

// steerQueue is the queue of a group of n that steeringProgram gives a
// datagram with key k: entropy mod n for a VNIC packet, the first for any
// other.
func steerQueue(k uint16, n int) int {
	if k>>8 != encap.L4Ethernet {
		return 0
	}
	return int(k&0xFF) % n
}

// SetQueue tells the poller that its transport is queue q of a queue
// group of n (ListenUDPQueues): it then counts the VNIC packets it reads
// that the group's program steers to another queue (Misrouted). Call it
// before the first Poll.
func (p *RxPoller) SetQueue(q, n int) { p.queue, p.queues = q, n }

// Misrouted returns how many VNIC packets the poller read that belong to
// another queue of its group (SetQueue): datagrams of several flows that
// the kernel merged (receive GRO on the underlay merges consecutive
// datagrams of one host pair, whatever their flow) and so steered whole by
// the first. They are handled as any other, but a flow whose frames reach
// two queues may be reordered.
func (p *RxPoller) Misrouted() uint64 { return p.misrouted.Load() }

// Poll reads one batch of what is queued, without waiting, and hands it to
// the receivers. n is how many datagrams it read; full reports a full
// batch: more may be queued.
func (p *RxPoller) Poll() (n int, full bool, err error) {
	k, err := p.tr.TryReadBatch(p.msgs)
	if k > 0 {
		if p.queues > 1 {
			p.countMisrouted(p.msgs[:k])
		}
		p.h.receiveBatch(p.msgs[:k], p.recv)
	}
	return k, k == len(p.msgs), err
}

// countMisrouted counts the VNIC packets of msgs that the queue group's
// program (steeringProgram) gives to another queue than the poller's.
func (p *RxPoller) countMisrouted(msgs []Message) {
	var n uint64
	for i := range msgs {
		if steerQueue(steerKey(msgs[i].Buf[:msgs[i].N]), p.queues) != p.queue {
			n++
		}
	}
	if n > 0 {
		p.misrouted.Add(n)
	}
}

// readBufLen is one receive buffer: the largest 16B packet and one byte
// more. A transport cuts a datagram longer than the buffer to its length (as
// recvmsg does, with MSG_TRUNC), and a datagram cut to exactly MaxPacketLen
// bytes could be a valid packet; one cut to MaxPacketLen+1 never is, so a
// longer datagram is counted malformed (docs/wire.md §1, §7), as it is when the
// transport hands it over whole.
const readBufLen = encap.MaxPacketLen + 1

// newReadBatch returns n messages with their own receive buffers.
func newReadBatch(n int) []Message {
	msgs := make([]Message, n)
	backing := make([]byte, n*readBufLen)
	for i := range msgs {
		msgs[i].Buf = backing[i*readBufLen : (i+1)*readBufLen : (i+1)*readBufLen]
	}
	return msgs
}

// ReceiveBatch runs the receive checks on a batch of datagrams and hands the
// good ones to their receivers, then flushes the receivers. Run calls it; it
// is exported for transports that deliver by other means and for tests. The
// datagrams must stay untouched until it returns.
func (h *HFI) ReceiveBatch(msgs []Message) { h.receiveBatch(msgs, &h.recv) }

// receiveBatch is ReceiveBatch with the receivers of recv.
func (h *HFI) receiveBatch(msgs []Message, recv *[256]Receiver) {
	r := h.routes.Load()
	self := h.lid.Load()
	c := &h.Counters
	var used [2]Receiver
	from := tally{rx: true}
	var src routeMemo // a batch's datagrams mostly come from one peer
	// On a switched fabric every packet comes from the uplink (decided
	// once a batch: the mesh's per-packet path stays as it is).
	switched := r.uplink.IsValid()
	uplink := peerRoute{ep: r.uplink}
	for i := range msgs {
		pkt := msgs[i].Buf[:msgs[i].N]
		hdr, err := encap.Parse(pkt, h.verify)
		if err != nil {
			c.RcvErrors.Add(1)
			if err == encap.ErrICRC {
				c.RcvBadICRC.Add(1)
			} else {
				c.RcvMalformed.Add(1)
			}
			continue
		}
		var pr peerRoute
		var ok bool
		if switched {
			pr, ok = uplink, true
		} else {
			pr, ok = src.get(r, hdr.SLID())
		}
		ok = ok && pr.ep == msgs[i].Addr
		if !ok && !(h.trustMgmt && hdr.L4() == encap.L4FabricMgt) {
			c.RcvErrors.Add(1)
			c.RcvBadSource.Add(1)
			if h.bad.mu.TryLock() {
				h.bad.slid, h.bad.from, h.bad.set = hdr.SLID(), msgs[i].Addr, true
				h.bad.mu.Unlock()
			}
			continue
		}
		if dlid := hdr.DLID(); dlid != self || self == 0 {
			if !(dlid == encap.LID16BPermissive || encap.Is16BMulticast(dlid) && (r.joined[dlid] || switched)) {
				c.RcvErrors.Add(1)
				c.RcvBadDLID.Add(1)
				continue
			}
		}
		rcv := recv[hdr.L4()]
		if rcv == nil {
			c.RcvErrors.Add(1)
			c.RcvUnknownL4.Add(1)
			continue
		}
		c.RcvPkts.Add(1)
		c.RcvData.Add(uint64(len(pkt) / 8))
		if ok {
			from.add(pr.t, len(pkt))
		}
		rcv.Receive(pkt, hdr, msgs[i].Addr)
		switch {
		case used[0] == nil || used[0] == rcv:
			used[0] = rcv
		case used[1] == nil:
			used[1] = rcv
		default:
			rcv.Flush() // a third receiver in one batch: flush as we go
		}
	}
	from.flush()
	for _, rcv := range used {
		if rcv != nil {
			rcv.Flush()
		}
	}
}

// Sender sends packets on an HFI. Each sending goroutine owns its Sender; the
// Sender's scratch space is what keeps the send path free of locks and
// allocations.
type Sender struct {
	h    *HFI
	tr   Transport
	msgs []Message
	to   []*PeerTraffic // msgs[i] is for to[i]; nil when sent by endpoint
}

// NewSender returns a Sender for one goroutine.
func (h *HFI) NewSender() *Sender { return h.NewQueueSender(h.tr) }

// NewQueueSender returns a Sender for one goroutine that sends on tr,
// another queue of the HFI's port (ListenUDPQueues), with the HFI's
// directory and counters.
func (h *HFI) NewQueueSender(tr Transport) *Sender {
	n := tr.BatchSize()
	return &Sender{h: h, tr: tr, msgs: make([]Message, 0, n), to: make([]*PeerTraffic, 0, n)}
}

// Send hands complete 16B packets (header, payload, ICRC, tail) to the wire,
// each to the endpoint of its DLID, or, for a multicast DLID, to every member
// of the group but this port. A packet whose DLID has no endpoint is counted
// in XmitDiscards and XmitNoRoute. The packets may be reused when Send returns.
func (s *Sender) Send(pkts [][]byte) {
	h := s.h
	r := h.routes.Load()
	c := &h.Counters
	if up := r.uplink; up.IsValid() {
		// A switched fabric: the switch routes every packet, and
		// replicates multicast.
		for _, pkt := range pkts {
			s.add(pkt, up, nil)
		}
		s.flush()
		return
	}
	var dst routeMemo // runs of packets go to one DLID
	for _, pkt := range pkts {
		dlid := encap.Header16B(pkt).DLID()
		if encap.Is16BMulticast(dlid) {
			prs, ok := r.fanout[dlid]
			if !ok {
				c.XmitDiscards.Add(1)
				c.XmitNoRoute.Add(1)
				continue
			}
			for _, pr := range prs {
				s.add(pkt, pr.ep, pr.t)
			}
			continue
		}
		pr, ok := dst.get(r, dlid)
		if !ok || dlid == r.self {
			c.XmitDiscards.Add(1)
			c.XmitNoRoute.Add(1)
			continue
		}
		s.add(pkt, pr.ep, pr.t)
	}
	s.flush()
}

// SendTo sends one complete packet to an explicit endpoint, bypassing the
// directory: the management path uses it to answer a node that has no
// directory entry yet. A packet whose DLID's endpoint in the directory is
// ep counts in that LID's PeerTraffic.
func (s *Sender) SendTo(pkt []byte, ep netip.AddrPort) {
	var t *PeerTraffic
	if len(pkt) >= encap.HeaderLen {
		if pr, ok := s.h.routes.Load().peers[encap.Header16B(pkt).DLID()]; ok && pr.ep == ep {
			t = pr.t
		}
	}
	s.add(pkt, ep, t)
	s.flush()
}

func (s *Sender) add(pkt []byte, ep netip.AddrPort, t *PeerTraffic) {
	if len(s.msgs) == cap(s.msgs) {
		s.flush()
	}
	s.msgs = append(s.msgs, Message{Buf: pkt, N: len(pkt), Addr: ep})
	s.to = append(s.to, t)
}

func (s *Sender) flush() {
	if len(s.msgs) == 0 {
		return
	}
	c := &s.h.Counters
	n, _ := s.tr.WriteBatch(s.msgs)
	// Only what the kernel took counts as sent, in the port's counters and
	// each peer's: the transport marks the others Refused.
	var flits uint64
	var to tally
	for i := range s.msgs {
		if s.msgs[i].Refused {
			continue
		}
		flits += uint64(s.msgs[i].N / 8)
		if s.to[i] != nil {
			to.add(s.to[i], s.msgs[i].N)
		}
	}
	to.flush()
	c.XmitPkts.Add(uint64(n))
	c.XmitData.Add(flits)
	if n < len(s.msgs) {
		c.XmitDiscards.Add(uint64(len(s.msgs) - n))
	}
	clear(s.msgs) // drop references to the caller's buffers
	s.msgs = s.msgs[:0]
	s.to = s.to[:0]
}
