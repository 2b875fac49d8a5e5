package fm

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vema"
)

// Timing of the FM (docs/management.md §2.5): a poll a second, three missed polls
// drop a node; requests are tried three times, 300 ms apart.
const (
	DefaultPollInterval = time.Second
	DefaultRetryTimeout = 300 * time.Millisecond
	DefaultTries        = 3
	MissedPollsToDrop   = 3

	tickInterval = 50 * time.Millisecond
	// pushDelay is how long the FM gathers changes before it pushes a new
	// directory generation; well within the protocol's second.
	pushDelay = 200 * time.Millisecond
	// inboundQueue bounds the MADs waiting for the FM's loop; beyond it they
	// are dropped (and counted), as a busy socket would.
	inboundQueue = 1024
	// maxPending bounds the outstanding requests: four per node at
	// MaxNodes (a poll, a directory push, EM requests), some 34 MB of
	// packets kept for retries.
	maxPending = 4 * MaxNodes
	// MaxNodes bounds the nodes the SM keeps (joining, active and lost):
	// with the FM's own entry they fill one directory generation
	// (vema.MaxDirEntries). An announce from a new port GUID beyond it is
	// refused (counted in NodesRefused) unless a lost node can make room.
	MaxNodes = vema.MaxDirEntries - 1
	// warnEvery rate-limits the warnings about refused input.
	warnEvery = 10 * time.Second
)

// Node states.
const (
	NodeJoining = "joining"
	NodeActive  = "active"
	NodeLost    = "lost"
)

// ErrUnknownLID is returned by PathRecord for a LID no active port holds.
var ErrUnknownLID = errors.New("fm: unknown LID")

// FM is the fabric manager: SM, SA and EM on one HFI. It registers itself as
// the HFI's L4 0x08 receiver; Run drives it.
//
// Concurrency: the HFI's receive goroutine only copies management packets
// into a bounded queue. One loop goroutine (Run) handles them, the timers and
// the polls; it and the API methods (Nodes, VESWs, PathRecord, Reload) share
// the state under mu, and every packet the FM sends goes out under mu through
// its one Sender.
type FM struct {
	log     *zap.Logger
	h       *hfi.HFI
	ownsHFI bool
	in      chan inbound
	// Dropped counts management packets dropped because the queue was full.
	Dropped atomic.Uint64
	// NodesRefused counts announces from new port GUIDs refused because the
	// SM holds MaxNodes nodes, none of them lost.
	NodesRefused atomic.Uint64
	// RequestsDropped counts requests not sent because maxPending requests
	// were outstanding.
	RequestsDropped atomic.Uint64
	// BadMADs counts management packets dropped because they could not be
	// decoded (truncated, malformed, or a MAD the FM does not take).
	BadMADs atomic.Uint64

	pollEvery    time.Duration
	retryTimeout time.Duration
	tries        int

	mu  sync.Mutex
	cfg *Config
	// idx indexes cfg's members (index.go), built with each config.
	idx *cfgIndex
	// byCfg is f.nodes by cfgName, nil when it must be built again
	// (nodesNamed, renamed).
	byCfg map[string][]*node
	// byLID is f.nodes by LID, nil when it must be built again
	// (nodesWithLID, relid).
	byLID   map[uint32][]*node
	send    *hfi.Sender
	nodes   map[uint64]*node // by port GUID
	pending map[uint64]*request
	gen     uint32
	// instance is this FM run's fm_instance in every directory block: nodes
	// order generations within one instance only, so a restarted FM's
	// directory is taken even when its generation is below what the last
	// run reached (generations can run ahead of the clock under churn, or
	// the FM moves to a host whose clock is behind).
	instance uint32
	dirty    bool
	dirtyAt  time.Time
	lastPoll time.Time
	members  map[memberKey]*memberState
	// deletes holds the DeleteVESWs not yet answered, by port GUID and
	// vport: sent when the node is active, retried on its polls.
	deletes map[uint64]map[uint8]*pendingDelete
	// lastDir is the current generation's blocks and lastData their MAD
	// data: a node that missed them (a lost block, a restart) is sent them
	// again from its poll.
	lastDir  []dirBlock
	lastData [][]byte
	// settleBy ends the start-up sweep: until every configured node has
	// joined or this time has passed, the FM learns and pushes nothing, so a
	// restarted FM never hands a node a directory or MAC table that lacks
	// nodes it has not heard from yet.
	settleBy time.Time
	settled  bool
	// warned rate-limits the warnings about refused input, by kind.
	warned map[string]*warnState
	// macPath is the MAC file (state.go, SetMACFile), "" for none; saved is
	// what it held when the FM started (less the members a reload removed),
	// macWritten what was last written.
	macPath    string
	saved      map[memberKey]savedMAC
	macWritten []byte
	// owed are DeleteVESWs owed to config nodes not matched to an active
	// node yet (from the MAC file, or a reload before the node was seen):
	// moved to deletes when the node is active (takeOwed).
	// They are kept by the node's name: each poll answer looks up its
	// node's (takeOwed), and a walk of all of them made a poll round cost
	// nodes x owed while many stayed owed to nodes not back.
	owed map[string]map[memberKey]bool
	// macPushes are the pushes that wait for the next write of the MAC
	// file (afterMACFile): the tick writes it once for all of them.
	macPushes []func()
	// lidRecs are the saved LIDs (lids.go) by port GUID, lidOwner the
	// same by LID; lidSeq is the last used stamp given. lidsDirty: they
	// changed since the state file was written (the next tick writes it).
	lidRecs   map[uint64]savedLID
	lidOwner  map[uint32]uint64
	lidSeq    uint64
	lidsDirty bool
	// notSent is set while request calls the onFail of a request it did
	// not send (maxPending): the node is not to blame (emFailed).
	notSent bool
}

// warnState is one kind of rate-limited warning: when it last went out and
// how many were held back since.
type warnState struct {
	last time.Time
	held int
}

// warn logs msg at most once per warnEvery per kind (f.mu held), with the
// number held back since the last one.
func (f *FM) warn(kind, msg string, fields ...zap.Field) {
	w := f.warned[kind]
	if w == nil {
		w = &warnState{}
		f.warned[kind] = w
	}
	now := time.Now()
	if !w.last.IsZero() && now.Sub(w.last) < warnEvery {
		w.held++
		return
	}
	f.log.Warn(msg, append(fields, zap.Int("suppressed", w.held))...)
	w.last, w.held = now, 0
}

type node struct {
	portGUID, nodeGUID uint64
	name               string // NodeDescription
	cfgName            string // the config node it matched, "" if none
	lid                uint32 // assigned LID, kept while lost so it comes back
	// pendingLID is the LID chosen for the PortInfo Set in flight: reserved
	// from chooseLID until the Set is answered or the join fails, so that
	// joins that overlap never pick the same LID.
	pendingLID uint32
	ep         netip.AddrPort
	state      string
	lostAt     time.Time // when it was last marked lost (eviction order)
	joining    bool
	misses     int
	pollOut    bool
	answeredAt time.Time // its last poll answer
	// probing: an announce came from another endpoint while the node
	// answered at its own; a PortInfo Get to its own endpoint is in flight
	// to tell a moved node (no answer) from a second host with its GUID.
	probing bool
	// cpiDone: its VEMA ClassPortInfo (trap_lid) was answered; cpiOut: the
	// Set is in flight; cpiRetry paces sending it again.
	cpiDone, cpiOut bool
	cpiRetry        emRetry
	// dirGen is the generation the node answered every block of, 0 when it
	// needs the current one from scratch (it (re)joined); dirSending is the
	// generation being sent to it, dirRefused one it refused a block of.
	// dirRetry paces sending it again.
	dirGen, dirSending, dirRefused uint32
	dirRetry                       emRetry
}

type memberKey struct {
	vesw  encap.VESWID
	node  string
	vport uint8
}

// memberState is what the EM knows of one member's port. Every push
// carries a sequence number per kind: only the answer to the latest one
// counts, so a late answer to an older push never commits stale state.
type memberState struct {
	learned [6]byte // MAC learned from a trap, zero if none
	info    []byte  // last VESWPortInfo pushed and acknowledged
	// infoSent is the VESWPortInfo Set in flight (infoOut), infoSeq its
	// sequence number; infoRefused says the node refused the latest one.
	infoSent    []byte
	infoSeq     uint32
	infoOut     bool
	infoRefused bool
	infoTID     uint64 // the Set in flight
	// infoAck is the EM's part (emFieldsOf) of the node's answer to the
	// last Set: a poll that reads back something else pushes again.
	infoAck []byte
	// digest is the MAC table the node acknowledged (every chunk), 0 when
	// none or unknown; tableLen the entries that may be on the node (a
	// later, shorter table deletes the rest). tableOut counts the chunks of
	// the push in flight (tableSeq, of digest tableDigest).
	digest       uint32
	tableLen     int
	tableSeq     uint32
	tableOut     int
	tableDigest  uint32
	tableRefused bool
	tableTIDs    []uint64 // the chunks of the push in flight
	reading      bool     // a VESWPortInfo Get in flight
	// learnOut: an IfaceUcastMacs Get after a trap is in flight;
	// learnPending: one is due (a trap came meanwhile, or it was lost).
	learnOut, learnPending bool
	adopted                bool    // adoptThenPush, or learnMAC, read the port (once per FM and member)
	retry                  emRetry // the member's pushes
}

// pendingDelete is a DeleteVESW the EM owes a node (by port GUID) until the
// node answers it.
type pendingDelete struct {
	vesw  encap.VESWID
	node  string // the config node whose member it was (the MAC file's)
	out   bool
	tid   uint64 // the DeleteVESW in flight (out)
	retry emRetry
}

type inbound struct {
	mad    []byte
	slid   uint32
	srcQPN uint32
	src    netip.AddrPort
}

type request struct {
	pkt      []byte
	ep       netip.AddrPort
	class    vema.Class // the request's class and attribute, which its answer must have
	attr     uint16
	left     int
	timeout  time.Duration
	deadline time.Time
	onResp   func(p *inbound, status vema.Status)
	onFail   func()
}

// New makes an FM on h with cfg and registers it as h's management receiver.
// cfg must not be changed afterwards (Reload takes a new one): the FM
// indexes it.
// h should be made with hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}.
func New(h *hfi.HFI, cfg *Config, log *zap.Logger) *FM {
	if log == nil {
		log = zap.NewNop()
	}
	f := &FM{
		log:          log.Named("fm").With(zap.String("fm", cfg.FM.Name)),
		h:            h,
		in:           make(chan inbound, inboundQueue),
		pollEvery:    DefaultPollInterval,
		retryTimeout: DefaultRetryTimeout,
		tries:        DefaultTries,
		cfg:          cfg,
		idx:          indexConfig(cfg),
		send:         h.NewSender(),
		nodes:        map[uint64]*node{},
		pending:      map[uint64]*request{},
		// Generations start at the clock, which orders them across FM
		// runs for nodes that predate fm_instance.
		gen:      uint32(time.Now().Unix()),
		instance: rand.Uint32() | 1,
		settleBy: time.Now().Add(settleGrace),
		members:  map[memberKey]*memberState{},
		deletes:  map[uint64]map[uint8]*pendingDelete{},
		warned:   map[string]*warnState{},
		lidRecs:  map[uint64]savedLID{},
		lidOwner: map[uint32]uint64{},
	}
	h.Register(encap.L4FabricMgt, f)
	return f
}

// Open makes the FM's UDP HFI at cfg.FM.Listen and the FM on it; Run then
// runs both. It is the way a daemon embeds the FM.
func Open(cfg *Config, log *zap.Logger) (*FM, error) {
	tr, err := hfi.ListenUDP(cfg.FM.Listen, 32)
	if err != nil {
		return nil, fmt.Errorf("fm: listen %v: %w", cfg.FM.Listen, err)
	}
	h := hfi.New(tr, hfi.Config{LID: cfg.FM.LID, VerifyICRC: true, TrustAnyMgmtSource: true})
	f := New(h, cfg, log)
	f.ownsHFI = true
	return f, nil
}

// Run is the embeddable entry point: Open, then Run until ctx is done.
func Run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	f, err := Open(cfg, log)
	if err != nil {
		return err
	}
	return f.Run(ctx)
}

// HFI returns the FM's HFI.
func (f *FM) HFI() *hfi.HFI { return f.h }

// Config returns the config in use. Callers must not change it: the FM
// keeps an index of it (index.go); Reload replaces it with another.
func (f *FM) Config() *Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg
}

// Receive implements hfi.Receiver: it copies the MAD and queues it for the
// loop, or drops it when the queue is full.
func (f *FM) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	mp, err := encap.MgmtPayload(pkt)
	if err != nil || len(mp.MAD) < vema.MADHeaderLen {
		f.BadMADs.Add(1)
		return
	}
	p := inbound{mad: append([]byte(nil), mp.MAD...), slid: h.SLID(), srcQPN: mp.SrcQPN, src: src}
	select {
	case f.in <- p:
	default:
		f.Dropped.Add(1)
	}
}

// Flush implements hfi.Receiver.
func (f *FM) Flush() {}

var _ hfi.Receiver = (*FM)(nil)

// Run handles management traffic, polls and pushes until ctx is done. When
// the FM made its own HFI (Open), Run runs it too and closes it on return.
func (f *FM) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hfiErr := make(chan error, 1)
	if f.ownsHFI {
		go func() { hfiErr <- f.h.Run(ctx) }()
	}
	f.mu.Lock()
	lid := f.cfg.FM.LID // f.cfg is Reload's to change: read it under f.mu
	f.mu.Unlock()
	f.log.Info("fabric manager running", zap.Stringer("lid", encap.LID(lid)),
		zap.Stringer("listen", f.h.Transport().LocalAddr()))
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			if f.lidsDirty { // a join in the last tick: saved for the next run
				f.saveMACs()
				f.lidsDirty = false
			}
			f.mu.Unlock()
			if f.ownsHFI {
				return <-hfiErr
			}
			return nil
		case err := <-hfiErr:
			return err
		case p := <-f.in:
			f.mu.Lock()
			f.handle(&p)
			f.mu.Unlock()
		case now := <-t.C:
			f.mu.Lock()
			f.tick(now)
			f.mu.Unlock()
		}
	}
}

// --- sending ---

// nextTID returns a TID for a new request: random, not one pending. A node
// sees the TIDs of the requests sent to it; a counter would let it answer
// those sent to other nodes (a poll answer from its endpoint moves the
// polled node there), since the FM's HFI takes management packets from any
// source and an answer is matched by its TID, class and attribute alone.
// math/rand/v2's generator is ChaCha8, seeded at random.
func (f *FM) nextTID() uint64 {
	t := rand.Uint64()
	// A pending TID comes up with odds of len(pending) in 2^64; the
	// next free one after it is as unguessable. At most len(pending)+1
	// steps.
	for t == 0 || f.pending[t] != nil {
		t++
	}
	return t
}

func (f *FM) smpParams(dlid uint32) encap.MgmtParams {
	return encap.MgmtParams{SLID: f.cfg.FM.LID, DLID: dlid, SC: 15, PKey: 0xFFFF, DestQPN: encap.QPNSMI, SrcQPN: encap.QPNSMI}
}

func (f *FM) gsiParams(dlid, destQPN uint32) encap.MgmtParams {
	return encap.MgmtParams{SLID: f.cfg.FM.LID, DLID: dlid, SC: 0, PKey: 0xFFFF, DestQPN: destQPN, SrcQPN: encap.QPNGSI}
}

func (f *FM) sendOnce(ep netip.AddrPort, p encap.MgmtParams, mad []byte) {
	pkt, err := encap.AppendMgmt(nil, &p, mad)
	if err != nil {
		f.log.Warn("cannot frame a MAD", zap.Error(err))
		return
	}
	f.send.SendTo(pkt, ep)
}

// request sends mad (whose TID is tid) and tries again until a response with
// the TID comes (onResp) or the tries run out (onFail, may be nil).
func (f *FM) request(ep netip.AddrPort, p encap.MgmtParams, tid uint64, mad []byte, tries int, timeout time.Duration,
	onResp func(*inbound, vema.Status), onFail func()) {
	if len(f.pending) >= maxPending {
		f.RequestsDropped.Add(1)
		f.warn("pending", "too many outstanding requests; dropping", zap.Int("max", maxPending), zap.Stringer("peer", ep))
		if onFail != nil {
			f.notSent = true
			onFail()
			f.notSent = false
		}
		return
	}
	pkt, err := encap.AppendMgmt(nil, &p, mad)
	if err != nil {
		f.log.Warn("cannot frame a MAD", zap.Error(err))
		return
	}
	f.pending[tid] = &request{pkt: pkt, ep: ep, class: vema.Class(mad[1]), attr: binary.BigEndian.Uint16(mad[16:]), left: tries - 1, timeout: timeout,
		deadline: time.Now().Add(timeout), onResp: onResp, onFail: onFail}
	f.send.SendTo(pkt, ep)
}

func (f *FM) drSMP(n *node, method vema.Method, attr uint16, attrMod uint32, data []byte, tries int, timeout time.Duration,
	onResp func(*inbound, *vema.SMP), onFail func()) {
	tid := f.nextTID()
	s := vema.SMP{
		SMPHeader: vema.SMPHeader{BaseVersion: vema.BaseVersion, MgmtClass: vema.ClassSubnDirectedRoute,
			ClassVersion: vema.SMPClassVersion, Method: method, TID: tid, AttrID: attr, AttrMod: attrMod},
		DR:   vema.DRRoute{DRSLID: encap.LIDPermissive, DRDLID: encap.LIDPermissive},
		Data: make([]byte, vema.SMPDRDataLen),
	}
	copy(s.Data, data)
	mad, _ := s.MarshalBinary()
	f.request(n.ep, f.smpParams(encap.LID16BPermissive), tid, mad, tries, timeout, func(p *inbound, st vema.Status) {
		var r vema.SMP
		if err := r.UnmarshalBinary(p.mad); err != nil || st&^vema.StatusDirection != 0 {
			f.log.Warn("SMP failed", zap.String("node", n.name), zap.Uint16("attr", attr),
				zap.Stringer("status", st), zap.Error(err))
			if onFail != nil {
				onFail()
			}
			return
		}
		onResp(p, &r)
	}, onFail)
}

// vendorMAD sends a 2048-byte vendor-class MAD (VEMA or directory) to a node.
func (f *FM) vendorMAD(n *node, class vema.Class, method vema.Method, attr uint16, attrMod uint32, data []byte,
	onResp func(*inbound, vema.Status), onFail func()) uint64 {
	tid := f.nextTID()
	var m vema.MAD
	m.VendorHeader = vema.VendorHeader{MADHeader: vema.MADHeader{BaseVersion: vema.BaseVersion, MgmtClass: class,
		ClassVersion: vema.VEMAClassVersion, Method: method, TID: tid, AttrID: attr, AttrMod: attrMod}, OUI: vema.IntelOUI}
	copy(m.Data[:], data)
	mad, _ := m.MarshalBinary()
	if onResp == nil {
		onResp = func(*inbound, vema.Status) {}
	}
	f.request(n.ep, f.gsiParams(n.lid, encap.QPNGSI), tid, mad, f.tries, f.retryTimeout, onResp, onFail)
	return tid
}

// cancel forgets the request tid, if still pending: it is not sent again,
// and neither its answer nor its failure is acted on. A push that replaces
// an earlier one cancels it, so that a retry of the old Set never reaches
// the node after the new one and undoes it.
func (f *FM) cancel(tid uint64) { delete(f.pending, tid) }

// --- the loop's events ---

func (f *FM) tick(now time.Time) {
	f.flushMACs()
	if f.lidsDirty {
		f.saveMACs() // an assignment changed: at most once per tick
		f.lidsDirty = false
	}
	for tid, r := range f.pending {
		if now.Before(r.deadline) {
			continue
		}
		if r.left > 0 {
			r.left--
			r.deadline = now.Add(r.timeout)
			f.send.SendTo(r.pkt, r.ep)
			continue
		}
		delete(f.pending, tid)
		if r.onFail != nil {
			r.onFail()
		}
	}
	if now.Sub(f.lastPoll) >= f.pollEvery {
		f.lastPoll = now
		f.poll()
	}
	if !f.checkSettled(now) {
		return
	}
	if f.dirty && now.Sub(f.dirtyAt) >= pushDelay {
		f.dirty = false
		f.pushDirectory()
	}
}

// settleGrace bounds the start-up sweep (see FM.settleBy): longer than the
// 3 s after which nodes that lost their SM announce, plus their 1 s period.
const settleGrace = 5 * time.Second

// checkSettled reports whether the start-up sweep is over, and ends it when
// every configured node is active or the grace has passed: then the EM
// configures every node that joined during the sweep.
func (f *FM) checkSettled(now time.Time) bool {
	if f.settled {
		return true
	}
	all := len(f.cfg.Nodes) > 0
	act := f.activeByName() // every tick of the sweep: linear in the nodes
	for _, c := range f.cfg.Nodes {
		all = all && act[c.Name] != nil
	}
	if all || !now.Before(f.settleBy) {
		f.settled = true
		f.log.Info("start-up sweep done", zap.Int("nodes", len(f.nodes)), zap.Bool("all_configured_nodes", all))
		// Every node's members first, each reading its port before its
		// push (adoptThenPush); then the members whose default ports name
		// a node, which pushMember holds back while their read runs.
		for _, n := range f.nodes {
			if n.state == NodeActive {
				f.configureNode(n, true)
			}
		}
		for _, n := range f.nodes {
			if n.state == NodeActive {
				f.repushDefaultPortsReferencing(n)
			}
		}
	}
	return f.settled
}

func (f *FM) markDirty() {
	if !f.dirty {
		f.dirty = true
		f.dirtyAt = time.Now()
	}
}

func (f *FM) handle(p *inbound) {
	var h vema.MADHeader
	if err := h.UnmarshalBinary(p.mad); err != nil {
		f.BadMADs.Add(1)
		return
	}
	if h.Method.IsResponse() {
		r, ok := f.pending[h.TID]
		if !ok {
			f.log.Debug("response to no request", zap.Uint64("tid", h.TID), zap.Stringer("peer", p.src))
			return
		}
		if h.MgmtClass != r.class || h.AttrID != r.attr {
			// Not the answer to that request, whatever its TID (the kernel's
			// MAD layer matches the class too): counted, and the request
			// waits for its answer or its retries.
			f.BadMADs.Add(1)
			f.log.Debug("response of another class or attribute than its request", zap.Uint64("tid", h.TID),
				zap.Stringer("peer", p.src), zap.Uint8("class", uint8(h.MgmtClass)), zap.Uint16("attr", h.AttrID))
			return
		}
		delete(f.pending, h.TID)
		r.onResp(p, h.Status)
		return
	}
	switch {
	case h.MgmtClass == vema.ClassSubnLIDRouted && h.Method == vema.MethodTrap && h.AttrID == vema.SMPAttrNotice:
		f.announce(p)
	case h.MgmtClass == vema.ClassVEMA && h.Method == vema.MethodTrap:
		f.vemaTrap(p)
	case h.MgmtClass == vema.ClassSubnAdm:
		f.sa(p)
	default:
		f.BadMADs.Add(1)
		f.log.Debug("unexpected MAD", zap.Stringer("peer", p.src), zap.Uint8("class", uint8(h.MgmtClass)),
			zap.Stringer("method", h.Method), zap.Uint16("attr", h.AttrID))
	}
}

// --- SM ---

// announce answers a node's trap 144 with TrapRepress and takes the node
// through the join when it needs one (§2.1).
func (f *FM) announce(p *inbound) {
	var s vema.SMP
	var ntc vema.SMPNotice
	if err := s.UnmarshalBinary(p.mad); err != nil || ntc.UnmarshalBinary(s.Data) != nil {
		f.BadMADs.Add(1)
		return
	}
	rep := s
	rep.Method = vema.MethodTrapRepress
	mad, _ := rep.MarshalBinary()
	f.sendOnce(p.src, encap.MgmtParams{SLID: f.cfg.FM.LID, DLID: p.slid, SC: 15, PKey: 0xFFFF,
		DestQPN: p.srcQPN, SrcQPN: encap.QPNSMI}, mad)
	if ntc.TrapNum != vema.TrapChangeCapability {
		return
	}
	guid := ntc.IssuerGID.InterfaceID()
	held := uint32(ntc.IssuerLID)
	n := f.nodes[guid]
	if n == nil {
		if !f.makeRoom() {
			f.NodesRefused.Add(1)
			f.warn("nodes", "node table full; announce refused", zap.Int("max", MaxNodes),
				zap.Uint64("guid", guid), zap.Stringer("peer", p.src))
			return
		}
		n = &node{portGUID: guid, ep: p.src, state: NodeJoining}
		f.putNode(n)
		f.log.Debug("node announced", zap.Uint64("guid", guid), zap.Stringer("peer", p.src), zap.Stringer("lid", encap.LID(held)))
	}
	if n.ep != p.src && n.state == NodeActive && n.misses == 0 && time.Since(n.answeredAt) < 2*f.pollEvery {
		// The node answered its polls at its endpoint lately: either it
		// restarted at another address (a move), or this is another host
		// with the same port GUID (a cloned config, two hosts with one name
		// and a derived GUID). Ask at the old endpoint: no answer is a move,
		// taken at once rather than after the polls there have failed.
		f.probeMove(n, p.src, held)
		return
	}
	f.joinFrom(n, p.src, held)
}

// probeMove sends n a PortInfo Get at its own endpoint after an announce
// from newEP: an answer means a second host announces n's GUID (warned,
// ignored); none, after the usual tries, means n moved to newEP, which then
// joins as an announce from there would (f.mu held in the callbacks).
func (f *FM) probeMove(n *node, newEP netip.AddrPort, held uint32) {
	if n.probing {
		return
	}
	n.probing = true
	oldEP := n.ep
	f.drSMP(n, vema.MethodGet, vema.SMPAttrPortInfo, vema.PortInfoAttrMod(1, false), nil, f.tries, f.retryTimeout,
		func(p *inbound, _ *vema.SMP) {
			n.probing = false
			if p.src != oldEP {
				return
			}
			n.answeredAt = time.Now()
			f.warn("guid", "port GUID announced from a second endpoint while the node answers at its own; ignored",
				zap.String("node", n.name), zap.Uint64("guid", n.portGUID), zap.Stringer("peer", newEP), zap.Stringer("node_peer", oldEP))
		}, func() {
			n.probing = false
			if f.nodes[n.portGUID] != n || n.ep != oldEP || n.state != NodeActive {
				return // moved, rejoined or lost meanwhile: that path decided
			}
			f.joinFrom(n, newEP, held)
		})
}

// joinFrom takes n, which announced from src holding held, through the join
// (the end of announce).
func (f *FM) joinFrom(n *node, src netip.AddrPort, held uint32) {
	if n.ep != src {
		f.log.Info("node moved", zap.String("node", n.name), zap.Stringer("peer", src), zap.Stringer("old", n.ep))
		n.ep = src
		// Polls missed at the old endpoint say nothing of the node at the
		// new one, where it just spoke: they must not drop it.
		n.misses = 0
		f.markDirty()
	}
	if n.state == NodeActive && !n.joining {
		// A node announces only when it has no LID or has not heard from
		// the SM for a while: it restarted (perhaps keeping a configured
		// LID), or lost the SM. Either way it needs its PortInfo and the
		// directory again.
		f.log.Info("active node announced; joining it again", zap.String("node", n.name),
			zap.Stringer("lid", encap.LID(n.lid)), zap.Stringer("held", encap.LID(held)))
	}
	f.join(n, held)
}

// join reads NodeInfo and NodeDescription, picks the LID and sets PortInfo
// (§2.2-2.4); then the directory and the node's VNICs follow.
func (f *FM) join(n *node, held uint32) {
	if n.joining {
		return
	}
	n.joining = true
	if n.state != NodeActive {
		n.state = NodeJoining
	}
	waits := false // chooseLID: the node waits for the start-up sweep; no anomaly
	fail := func() {
		n.joining = false
		n.pendingLID = 0
		if n.state == NodeJoining {
			if n.lid == 0 && f.nodes[n.portGUID] == n {
				// It never held a LID: nothing to keep it for, and it
				// must not hold a slot of the node table.
				f.dropNode(n)
			}
			n.state, n.lostAt = NodeLost, time.Now()
		}
		// An active node joined again (it announced, or its PortInfo
		// changed) that fails the join is dropped as three missed polls
		// would drop it: polls skip a joining node, and one that keeps
		// announcing but never answers must not stay active.
		f.loseNode(n, "node failed to join again; dropped")
		if !waits {
			f.warn("join", "join failed; waiting for the next announce", zap.String("node", n.name), zap.Stringer("peer", n.ep))
		}
	}
	f.drSMP(n, vema.MethodGet, vema.SMPAttrNodeInfo, 0, nil, f.tries, f.retryTimeout, func(_ *inbound, r *vema.SMP) {
		var ni vema.NodeInfo
		if err := ni.UnmarshalBinary(r.Data); err != nil || ni.PortGUID != n.portGUID {
			f.log.Warn("NodeInfo does not match the announce", zap.Uint64("guid", n.portGUID), zap.Uint64("port_guid", ni.PortGUID))
			fail()
			return
		}
		n.nodeGUID = ni.NodeGUID
		f.drSMP(n, vema.MethodGet, vema.SMPAttrNodeDescription, 0, nil, f.tries, f.retryTimeout, func(_ *inbound, r *vema.SMP) {
			var nd vema.NodeDescription
			if nd.UnmarshalBinary(r.Data) != nil {
				fail()
				return
			}
			n.name = nd.String()
			n.cfgName = f.matchConfig(n)
			f.renamed()
			if o := f.otherNodeAs(n); o != nil {
				f.warn("dup", "a second node matches an active config node; not joined", zap.String("node", n.cfgName),
					zap.Uint64("guid", n.portGUID), zap.Stringer("peer", n.ep),
					zap.Uint64("active_guid", o.portGUID), zap.Stringer("active_peer", o.ep))
				n.cfgName = ""
				f.renamed()
				fail()
				return
			}
			lid, err := f.chooseLID(n, held)
			if errors.Is(err, errSweeping) {
				f.log.Debug("node waits for the start-up sweep", zap.String("node", n.name), zap.Uint64("guid", n.portGUID))
				waits = true
				fail()
				return
			}
			if err != nil {
				f.warn("lid", "node not joined", zap.String("node", n.name), zap.Uint64("guid", n.portGUID),
					zap.Stringer("peer", n.ep), zap.Error(err))
				fail()
				return
			}
			n.pendingLID = lid
			f.setPortInfo(n, lid, fail)
		}, fail)
	}, fail)
}

func (f *FM) setPortInfo(n *node, lid uint32, fail func()) {
	var pi vema.PortInfo
	pi.LID = encap.LID(lid)
	pi.SMLID = encap.LID(f.cfg.FM.LID)
	pi.SubnetPrefix = f.cfg.FM.SubnetPrefix
	pi.SetPortState(uint8(hfi.StateActive))
	pi.SMTrapQP = encap.QPNSMI
	pi.SAQP = encap.QPNGSI
	data, _ := pi.MarshalBinary()
	f.drSMP(n, vema.MethodSet, vema.SMPAttrPortInfo, vema.PortInfoAttrMod(1, false), data, f.tries, f.retryTimeout,
		func(_ *inbound, r *vema.SMP) {
			var got vema.PortInfo
			if err := got.UnmarshalBinary(r.Data); err != nil || uint32(got.LID) != lid {
				f.log.Warn("PortInfo Set not taken", zap.String("node", n.name), zap.Stringer("lid", encap.LID(lid)),
					zap.Stringer("got", got.LID))
				fail()
				return
			}
			if n.pendingLID != lid {
				// Its configured owner claimed the LID while the Set was
				// in flight (chooseLID): join again for another one.
				f.log.Info("LID taken by its configured owner; joining again", zap.String("node", n.name),
					zap.Stringer("lid", encap.LID(lid)))
				n.joining = false
				f.join(n, 0)
				return
			}
			n.joining = false
			n.pendingLID = 0
			n.lid = lid
			f.relid()
			n.state = NodeActive
			n.misses = 0
			f.recordLID(n)
			n.dirGen, n.dirRetry, n.dirRefused = 0, emRetry{}, 0 // it gets the whole generation
			f.log.Info("node joined", zap.String("node", n.name), zap.Stringer("lid", encap.LID(lid)),
				zap.Bool("extended", encap.LID(lid).IsExtended()), zap.Stringer("peer", n.ep))
			f.markDirty()
			if f.settled {
				f.configureNode(n, true)
				f.repushDefaultPortsReferencing(n)
			} else {
				f.checkSettled(time.Now()) // configures every active node when the sweep ends
			}
		}, fail)
}

// otherNodeAs returns another node that matches n's config node and is
// active or joining: two hosts with one name. The first keeps the entry.
func (f *FM) otherNodeAs(n *node) *node {
	if n.cfgName == "" {
		return nil
	}
	for _, o := range f.nodes {
		if o != n && o.cfgName == n.cfgName && (o.state == NodeActive || o.joining) {
			return o
		}
	}
	return nil
}

// matchConfig returns the name of the config node n is: by GUID when the
// entry has one, else by NodeDescription.
func (f *FM) matchConfig(n *node) string { return f.index().match(n) }

// Why chooseLID gives a node no LID.
var (
	errPoolExhausted = errors.New("fm: LID pool exhausted")
	errDuplicateNode = errors.New("fm: another node holds this config node's fixed LID")
	errSweeping      = errors.New("fm: no pool LID is handed out before the start-up sweep ends")
)

// chooseLID applies §2.3: the fixed LID; else the LID the node holds if it is
// in the pool and free; else the LID this GUID had before in this run;
// else the LID saved for this GUID (lids.go), if in the pool and free; else,
// once the start-up sweep is over, the lowest free pool LID saved for no
// other GUID; else, the pool full, the free LID of the least recently used
// record, which that record's GUID loses. A LID counts as taken from the
// moment it is chosen for another node (pendingLID), not only once that
// node's PortInfo Set is answered. A fixed LID is taken from a node that no longer matches its
// config entry; a second node that matches the same entry (two hosts with
// one name) while the first is active or joining gets none.
func (f *FM) chooseLID(n *node, held uint32) (uint32, error) {
	if c, ok := f.index().node(n.cfgName); ok && n.cfgName != "" && c.LID != 0 {
		for _, o := range f.nodes {
			if o == n || (o.lid != c.LID && o.pendingLID != c.LID) {
				continue
			}
			if o.cfgName == n.cfgName && (o.state == NodeActive || o.joining) {
				return 0, fmt.Errorf("%w: %s (port GUID %#x, %v) is active as %q", errDuplicateNode,
					encap.LID(c.LID), o.portGUID, o.ep, n.cfgName)
			}
		}
		for _, o := range f.nodes {
			if o != n && (o.lid == c.LID || o.pendingLID == c.LID) {
				// The configured owner wins; the other rejoins with another LID.
				o.lid, o.pendingLID = 0, 0
				if o.state == NodeActive {
					f.join(o, 0)
				}
			}
		}
		return c.LID, nil
	}
	taken := f.lidsTaken(n)
	free := func(l uint32) bool { return encap.Is16BUnicast(l) && !taken[l] }
	if held != 0 && f.cfg.Pool.Contains(held) && free(held) {
		return held, nil
	}
	if n.lid != 0 && free(n.lid) {
		return n.lid, nil
	}
	if l, ok := f.savedLIDFree(n, taken); ok {
		return l, nil // its own: no need to wait for the sweep
	}
	if !f.settled {
		// A restarted FM has not heard yet from every node that holds a
		// pool LID (a node announces 3 s after it last heard the SM),
		// and the state file may not know them all (lost, damaged, or
		// written before their join): the lowest free LID may be one of
		// theirs.
		return 0, errSweeping
	}
	// At most len(taken)+len(f.lidOwner) LIDs of the pool are taken or
	// saved: the scan is linear in the nodes, not quadratic, at MaxNodes.
	for l := f.cfg.Pool.Start; l <= f.cfg.Pool.End && l != 0; l++ {
		if g, saved := f.lidOwner[l]; free(l) && (!saved || g == n.portGUID) {
			return l, nil
		}
	}
	if l, ok := f.reuseLRU(n, taken); ok {
		return l, nil
	}
	return 0, errPoolExhausted
}

// lidsTaken returns the LIDs n may not have, gathered once per choice:
// the FM's, those other nodes hold or are being given, and the config's
// fixed LIDs of other config nodes.
func (f *FM) lidsTaken(n *node) map[uint32]bool {
	taken := make(map[uint32]bool, 1+2*len(f.nodes)+len(f.cfg.Nodes))
	taken[f.cfg.FM.LID] = true
	for _, o := range f.nodes {
		if o != n {
			taken[o.lid], taken[o.pendingLID] = true, true
		}
	}
	for _, c := range f.cfg.Nodes {
		if c.LID != 0 && c.Name != n.cfgName {
			taken[c.LID] = true
		}
	}
	return taken
}

// makeRoom reports whether the node table has room for one more node,
// forgetting the node lost longest ago when it is full. Joining and active
// nodes are never forgotten; a forgotten node that comes back joins as a new
// one (with its configured LID, or the pool LID it still holds if free).
func (f *FM) makeRoom() bool {
	if len(f.nodes) < MaxNodes {
		return true
	}
	var oldest *node
	for _, o := range f.nodes {
		if o.state == NodeLost && !o.joining && (oldest == nil || o.lostAt.Before(oldest.lostAt)) {
			oldest = o
		}
	}
	if oldest == nil {
		return false
	}
	f.log.Info("node table full; forgetting the node lost longest ago", zap.String("node", oldest.name),
		zap.Uint64("guid", oldest.portGUID), zap.Stringer("lid", encap.LID(oldest.lid)))
	f.dropNode(oldest)
	for vport, d := range f.deletes[oldest.portGUID] {
		if d.node != "" { // still owed, by name, when it is back
			f.oweDelete(memberKey{d.vesw, d.node, vport})
		}
	}
	delete(f.deletes, oldest.portGUID)
	return true
}

// poll reads every active node's PortInfo (§2.5) and, through the EM, the
// VESWPortInfo of its members.
func (f *FM) poll() {
	for _, n := range f.nodes {
		if n.state != NodeActive || n.joining || n.pollOut {
			continue
		}
		n.pollOut = true
		f.drSMP(n, vema.MethodGet, vema.SMPAttrPortInfo, vema.PortInfoAttrMod(1, false), nil, 1, f.pollEvery*9/10,
			func(p *inbound, r *vema.SMP) {
				n.pollOut = false
				n.misses = 0
				n.answeredAt = time.Now()
				if p.src != n.ep {
					f.log.Info("node moved", zap.String("node", n.name), zap.Stringer("peer", p.src), zap.Stringer("old", n.ep))
					n.ep = p.src
					f.markDirty()
				}
				var pi vema.PortInfo
				if pi.UnmarshalBinary(r.Data) != nil {
					return
				}
				if uint32(pi.LID) != n.lid || uint32(pi.SMLID) != f.cfg.FM.LID || pi.SubnetPrefix != f.cfg.FM.SubnetPrefix {
					// A node that restarted with a LID from its own config
					// keeps the LID but not the SM LID.
					f.log.Info("node lost its PortInfo (restarted?); joining it again", zap.String("node", n.name),
						zap.Stringer("lid", encap.LID(n.lid)), zap.Stringer("got", pi.LID), zap.Stringer("sm_lid", pi.SMLID))
					f.join(n, uint32(pi.LID))
					return
				}
				f.resendDirectory(n)
				f.checkMembers(n)
			}, func() {
				n.pollOut = false
				n.misses++
				if n.misses >= MissedPollsToDrop {
					f.loseNode(n, "node stopped answering polls; dropped")
				}
			})
	}
}

// loseNode marks an active node lost (it leaves the directory, the EM stops
// pushing to it). It keeps its LID; when it announces again it joins again
// and the EM configures it afresh.
func (f *FM) loseNode(n *node, why string) {
	if n.state != NodeActive {
		return
	}
	f.log.Warn(why, zap.String("node", n.name), zap.Stringer("lid", encap.LID(n.lid)), zap.Stringer("peer", n.ep))
	n.state, n.lostAt = NodeLost, time.Now()
	f.touchLID(n) // the last time it was seen
	f.markDirty()
}

// --- directory ---

func (f *FM) directory() ([]dirEntry, []dirGroup) {
	var ents []dirEntry
	if a := f.cfg.FM.Listen; a.IsValid() && !a.Addr().IsUnspecified() {
		ents = append(ents, dirEntry{LID: f.cfg.FM.LID, EP: a})
	}
	for _, n := range f.nodes {
		if n.state == NodeActive && n.lid != 0 {
			ents = append(ents, dirEntry{LID: n.lid, EP: n.ep})
		}
	}
	byMLID := map[uint32]map[uint32]bool{}
	act := f.activeByName()
	for _, v := range f.cfg.VESWs {
		if v.McastDLID == 0 {
			continue
		}
		for _, m := range v.Members {
			if n := act[m.Node]; n != nil {
				if byMLID[v.McastDLID] == nil {
					byMLID[v.McastDLID] = map[uint32]bool{}
				}
				byMLID[v.McastDLID][n.lid] = true
			}
		}
	}
	var groups []dirGroup
	for mlid, set := range byMLID {
		g := dirGroup{MLID: mlid}
		for l := range set {
			g.Members = append(g.Members, l)
		}
		groups = append(groups, g)
	}
	return ents, groups
}

// pushDirectory sends a new generation to every active node.
func (f *FM) pushDirectory() {
	ents, groups := f.directory()
	f.gen = max(f.gen+1, uint32(time.Now().Unix()))
	blocks, err := directoryBlocks(f.gen, ents, groups)
	if err != nil {
		f.log.Error("cannot push the directory", zap.Error(err))
		return
	}
	for i := range blocks {
		blocks[i].Instance = f.instance
	}
	eps := map[uint32]netip.AddrPort{}
	for _, e := range ents {
		eps[e.LID] = e.EP
	}
	gs := map[uint32][]uint32{}
	for _, g := range groups {
		gs[g.MLID] = g.Members
	}
	if d, err := hfi.NewDirectory(eps, gs); err == nil {
		f.h.SetDirectory(d)
	}
	f.log.Info("pushing directory", zap.Uint32("generation", f.gen), zap.Int("lids", len(ents)), zap.Int("groups", len(groups)))
	data := make([][]byte, len(blocks))
	for i := range blocks {
		if data[i], err = blocks[i].appendData(nil); err != nil {
			f.log.Error("directory not pushed", zap.Error(err))
			return
		}
	}
	f.lastDir, f.lastData = blocks, data
	for _, n := range f.nodes {
		if n.state == NodeActive {
			n.dirRetry = emRetry{}
			f.sendDirectory(n, f.gen, blocks, data, 0)
		}
	}
}

// resendDirectory sends n the current generation again (on its poll) when
// n has not answered all of it and none of it is on its way: a block whose
// tries were all lost, or a node that rejoined. Paced by emBackoff; after
// emMaxFails failed sends in a row n is dropped, and gets the directory when
// it joins again.
func (f *FM) resendDirectory(n *node) {
	if !f.settled || f.lastDir == nil || n.dirGen == f.gen || n.dirSending == f.gen || n.dirRefused == f.gen ||
		n.dirRetry.waiting(time.Now()) {
		return
	}
	f.log.Info("sending the directory again", zap.String("node", n.name), zap.Uint32("generation", f.gen),
		zap.Uint32("node_has", n.dirGen))
	f.sendDirectory(n, f.gen, f.lastDir, f.lastData, 0)
}

// sendDirectory sends block i of generation gen to n and, once n answers,
// the next: a push holds one request per node, not one per block (at
// MaxNodes nodes, 51 blocks each would be some 200000, far beyond
// maxPending). It stops when a newer generation is being pushed or n is no
// longer active; a block refused or unanswered stops it too, and the poll
// decides when to send the generation again (resendDirectory).
func (f *FM) sendDirectory(n *node, gen uint32, blocks []dirBlock, data [][]byte, i int) {
	if i == 0 {
		n.dirSending = gen
	}
	if gen != f.gen || n.state != NodeActive || n.dirSending != gen {
		if n.dirSending == gen {
			n.dirSending = 0
		}
		return
	}
	if i == len(blocks) {
		n.dirSending, n.dirGen, n.dirRetry.fails = 0, gen, 0
		return
	}
	b := &blocks[i]
	f.vendorMAD(n, classDirectory, vema.MethodSet, b.Attr, uint32(b.Block), data[i], func(_ *inbound, st vema.Status) {
		if st != vema.StatusSuccess {
			f.log.Warn("directory block refused", zap.String("node", n.name), zap.Uint16("block", b.Block), zap.Stringer("status", st))
			if n.dirSending == gen {
				n.dirSending, n.dirRefused = 0, gen
			}
			return
		}
		f.sendDirectory(n, gen, blocks, data, i+1)
	}, func() {
		if n.dirSending != gen {
			return
		}
		n.dirSending = 0
		if gen == f.gen {
			f.emFailed(n, &n.dirRetry, "directory block")
		}
	})
}

// activeByName maps each config node name to its active node: activeNode
// for every name at once, for loops over a vesw's members.
func (f *FM) activeByName() map[string]*node {
	act := make(map[string]*node, len(f.nodes))
	for _, n := range f.nodes {
		if n.cfgName != "" && n.state == NodeActive && n.lid != 0 {
			act[n.cfgName] = n
		}
	}
	return act
}

// activeNode returns the active node matched to a config node name: from
// the index by name (nodesNamed), not a walk of the nodes, since portInfo
// asks it for each default port on every poll answer.
func (f *FM) activeNode(name string) *node {
	for _, n := range f.nodesNamed(name) {
		if n.cfgName == name && n.state == NodeActive && n.lid != 0 && f.nodes[n.portGUID] == n {
			return n
		}
	}
	return nil
}

// --- status API ---

// NodeStatus is one node as the SM knows it.
type NodeStatus struct {
	Name     string         `json:"name"`
	Config   string         `json:"config_name,omitempty"`
	NodeGUID encap.GUID     `json:"node_guid"`
	PortGUID encap.GUID     `json:"port_guid"`
	LID      encap.LID      `json:"lid"`
	Extended bool           `json:"extended"`
	Endpoint netip.AddrPort `json:"endpoint"`
	State    string         `json:"state"`
	// Error is the last error the kernel reported for the FM's datagrams
	// to the node's endpoint, if one came in the last hfi.PeerErrorQuiet:
	// why a node is lost ("connection refused (ICMP port unreachable from
	// 10.0.0.2)": its host runs no vnicd; "no route to host": the host
	// is gone), with its count and age; none from before the node's last
	// answer.
	Error string `json:"error,omitempty"`
	// LastAnswer is how long ago the node last answered one of the FM's
	// polls ("3s ago"); empty while it never has.
	LastAnswer string `json:"last_answer,omitempty"`
}

// Nodes returns every node the FM has seen.
func (f *FM) Nodes() []NodeStatus {
	now := time.Now()
	errs := hfi.RecentPeerErrors(f.h.PeerErrors(), now)
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]NodeStatus, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, NodeStatus{Name: n.name, Config: n.cfgName, NodeGUID: encap.GUID(n.nodeGUID), PortGUID: encap.GUID(n.portGUID),
			LID: encap.LID(n.lid), Extended: encap.LID(n.lid).IsExtended(), Endpoint: n.ep, State: n.state})
		if e, ok := errs[n.ep]; ok && e.Last.After(n.answeredAt) { // one before its last answer is over
			out[len(out)-1].Error = e.Describe(now)
		}
		if !n.answeredAt.IsZero() {
			out[len(out)-1].LastAnswer = now.Sub(n.answeredAt).Truncate(time.Second).String() + " ago"
		}
	}
	slices.SortStableFunc(out, func(a, b NodeStatus) int { // n log n: under f.mu, at MaxNodes
		return cmp.Or(cmp.Compare(a.LID, b.LID), cmp.Compare(len(a.Name), len(b.Name)))
	})
	return out
}

// Node returns the status of the node with that config or description name:
// an active node before a lost one (a host replaced by another with a new
// GUID leaves the old one lost, on a lower LID perhaps), and the config
// node of that name before a node that only describes itself so.
func (f *FM) Node(name string) (NodeStatus, bool) {
	best, rank := NodeStatus{}, 4
	for _, n := range f.Nodes() {
		r := 4
		switch {
		case n.Config == name:
			r = 0
		case n.Name == name:
			r = 1
		}
		if n.State != NodeActive {
			r += 2
		}
		if r < rank {
			best, rank = n, r
		}
	}
	return best, rank < 4
}

// MemberStatus is one vesw port.
type MemberStatus struct {
	Node       string    `json:"node"`
	VPort      uint8     `json:"vport"`
	LID        encap.LID `json:"lid"`
	MAC        string    `json:"mac"`
	IPs        []string  `json:"ip,omitempty"`
	Configured bool      `json:"configured"`
}

// VESWStatus is one vesw and its members.
type VESWStatus struct {
	ID        encap.VESWID   `json:"id"`
	Name      string         `json:"name"`
	PKey      string         `json:"pkey"`       // 0x8001, as vnicd's answers give it
	McastDLID encap.LID      `json:"mcast_dlid"` // 0xF00001
	AdminUp   bool           `json:"admin_up"`
	Members   []MemberStatus `json:"members"`
}

// VESWs returns the configured vesws with their members' state.
func (f *FM) VESWs() []VESWStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []VESWStatus
	act := f.activeByName() // not a walk of the nodes per member, under f.mu
	for _, v := range f.cfg.VESWs {
		s := VESWStatus{ID: v.ID, Name: v.Name, PKey: v.PKey.String(), McastDLID: encap.LID(v.McastDLID), AdminUp: v.AdminUp}
		for _, m := range v.Members {
			ms := MemberStatus{Node: m.Node, VPort: m.VPort, IPs: m.IPs}
			if n := act[m.Node]; n != nil {
				ms.LID = encap.LID(n.lid)
				mac := f.memberMAC(v, m, n)
				ms.MAC = fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
				st := f.members[memberKey{v.ID, m.Node, m.VPort}]
				ms.Configured = st != nil && st.info != nil
			}
			s.Members = append(s.Members, ms)
		}
		out = append(out, s)
	}
	return out
}
