package vnicd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Daemon is a running vnicd, static or managed: the HFI on its UDP sockets,
// the engine with its ports, the management plane, the state files and the
// control socket.
type Daemon struct {
	cfg    *config.Config
	log    *zap.Logger
	hfi    *hfi.HFI
	engine *engine.Engine
	mgmt   *Mgmt
	ctl    *ctl.Server
	rt     runtimeVNICs // VNICs of vnic_add (runtime.go)
	claims *claimTable  // managed mode: ports claimed by containers (claims.go)
	// removeTAP deletes a claimed netdev (or a runtime VNIC's) left in a namespace
	// (tap.RemovePersistent; tests replace it).
	removeTAP func(netns, name string, match func(alias string) bool) error
	kick      chan struct{} // a claimed port may have changed: reconcile
	// rtReadErr is why the runtime VNICs' file of the last run could not
	// be read (readRuntimeOnStart); the file is set aside once the control
	// socket is this daemon's.
	rtReadErr error
}

// startRemoveTAP is a new daemon's removeTAP (tests replace it, to see what
// the start removes).
var startRemoveTAP = tap.RemovePersistent

// NewDaemon brings a node up from its config: it binds the HFI's socket,
// installs the directory, creates every VNIC's netdev and opens the control
// socket. Whatever it made is undone if a later step fails.
func NewDaemon(cfg *config.Config, newDevice engine.DeviceFactory, log *zap.Logger) (_ *Daemon, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("node", cfg.Node.Name))
	if !cfg.Node.Managed() {
		// A managed node's LID is the SM's to set (mgmt logs it when it
		// does): a field fixed here would say 0x0 on every line after.
		log = log.With(zap.Stringer("lid", cfg.Node.LID))
	}
	nq, why := resolveQueues(cfg)
	log.Info("data-plane queues", zap.Int("queues", nq), zap.String("why", why))
	qs, err := hfi.ListenUDPQueues(cfg.Node.Listen, 0, nq)
	if err != nil {
		return nil, err
	}
	tr := qs[0]
	more := make([]hfi.PollTransport, 0, len(qs)-1)
	for _, q := range qs[1:] {
		more = append(more, q)
	}
	defer func() {
		if err != nil {
			for _, q := range qs {
				q.Close()
			}
		}
	}()
	h := hfi.New(tr, hfi.Config{LID: cfg.Node.LID.To16B(), VerifyICRC: cfg.Node.VerifyICRC})
	dir, err := cfg.Directory()
	if err != nil {
		return nil, err
	}
	h.SetDirectory(dir)
	d := &Daemon{cfg: cfg, log: log, hfi: h, removeTAP: startRemoveTAP, kick: make(chan struct{}, 1)}
	d.claims = newClaimTable("", cfg.Node.Name)
	d.rt.file, d.rt.node = runtimeState(""), cfg.Node.Name
	if cfg.Node.Managed() {
		d.claims = newClaimTable(ClaimsPath(cfg.Control.Socket), cfg.Node.Name)
		newDevice = d.claimingFactory(newDevice)
	} else {
		d.rt.file = runtimeState(RuntimePath(cfg.Control.Socket))
		newDevice = d.runtimeFactory(newDevice)
	}
	if d.engine, err = engine.NewEngine(h, newDevice, log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.engine.Close()
		}
	}()
	if n := len(qs); n > 1 && runtime.GOMAXPROCS(0) <= n {
		// Each loop keeps its P while traffic flows (pollLoop.wait); one
		// more is for the rest of vnicd.
		log.Info("GOMAXPROCS raised for the data plane's queues", zap.Int("gomaxprocs", n+1), zap.Int("queues", n))
		runtime.GOMAXPROCS(n + 1)
	}
	if err = d.engine.EnableQueues(more); err != nil {
		return nil, err
	}
	if bp := cfg.Node.BusyPoll; bp > 0 {
		if err := d.engine.SetBusyPoll(bp); err != nil {
			log.Warn("node.busy_poll is not in effect", zap.Error(err))
		} else if d.engine.BusyPoll() != bp {
			log.Warn("node.busy_poll is not in effect: it needs GOMAXPROCS > node.queues",
				zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)), zap.Int("queues", d.engine.Queues()))
		}
	}
	mc := mgmtConfig(cfg)
	mc.Netdev = d.netdevFor
	d.mgmt = NewMgmt(d.engine, mc, log)
	d.engine.SetEventHook(func(ev engine.PortEvent) {
		d.mgmt.portEvent(ev)
		if ev.Kind == engine.EventPlace {
			d.portPlaced(ev)
		}
	})
	if cfg.Node.Managed() {
		d.mgmt.Ports.onSet = func(uint8) {
			select {
			case d.kick <- struct{}{}:
			default:
			}
		}
	}
	var saved []RuntimeEntry
	var dropped int
	if !cfg.Node.Managed() {
		saved, dropped = d.readRuntimeOnStart()
	}
	// Static mode configures its ports through its own VEMA agent, as the
	// EM would (docs/design.md: the agent is the only way a port's config changes).
	for _, v := range cfg.VNICs {
		if err := d.mgmt.configurePort(v.VPort, &v.Port, v.MACTable); err != nil {
			return nil, err
		}
	}
	d.ctl, err = ctl.Listen(cfg.Control.Socket, log)
	if err != nil {
		return nil, err
	}
	d.registerControl()
	// The socket is this daemon's now, and so are its state files: what an
	// interrupted write of the last run left goes.
	for _, p := range []string{ClaimsPath(cfg.Control.Socket), RuntimePath(cfg.Control.Socket)} {
		removeStateTemps(p, log)
	}
	if d.rtReadErr != nil {
		d.log.Warn("cannot read the runtime VNICs of the last run; starting with none",
			append([]zap.Field{zap.Error(d.rtReadErr)}, d.rt.file.setAside()...)...)
	}
	if cfg.Node.Managed() {
		d.loadClaimsOnStart()
	} else {
		d.loadRuntimeOnStart(saved, dropped)
	}
	d.warnMTU()
	log.Info("vnicd up", zap.Stringer("listen", tr.LocalAddr()), zap.Int("vnics", len(cfg.VNICs)),
		zap.Int("peers", len(cfg.Peers)), zap.String("control", cfg.Control.Socket))
	return d, nil
}

// Engine returns the daemon's engine.
func (d *Daemon) Engine() *engine.Engine { return d.engine }

// HFI returns the daemon's fabric port.
func (d *Daemon) HFI() *hfi.HFI { return d.hfi }

// Run serves until ctx is done, then removes every netdev the daemon made and
// the control socket.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg, claimsWG sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(3)
	go func() {
		defer wg.Done()
		d.mgmt.Run(ctx)
	}()
	claimsWG.Add(1)
	go func() {
		defer claimsWG.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.kick:
				d.reconcileClaims()
			}
		}
	}()
	go func() {
		defer wg.Done()
		errs <- d.engine.RunDataPlane(ctx)
		cancel()
	}()
	if d.engine.Queues() > 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.watchMisrouted(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.watchUnderlay(ctx)
	}()
	go func() {
		defer wg.Done()
		errs <- d.ctl.Serve(ctx)
		cancel()
	}()
	<-ctx.Done()
	claimsWG.Wait()
	d.rt.op.Lock() // control commands in flight finish first
	if n := len(d.claims.list()); n > 0 {
		d.log.Info("claimed ports stay in their containers, carrier off, for the next start to take over", zap.Int("claims", n))
	}
	if n := d.rt.count(); n > 0 {
		d.log.Info("runtime VNICs stay where they are, carrier off, for the next start to take over", zap.Int("vnics", n))
	}
	err := d.engine.Close()
	d.rt.op.Unlock()
	d.ctl.Close()
	wg.Wait()
	d.mgmt.Wait() // the data plane has stopped: no MAD comes after these
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	d.log.Info("vnicd stopped")
	return err
}

// How often the daemon looks at the HFI's counters of underlay trouble, and
// how often at most it warns of each kind.
const (
	underlayCheckEvery = 10 * time.Second
	underlayWarnEvery  = time.Hour
)

// watchUnderlay warns, until ctx is done, when the HFI's counters say the
// underlay loses packets (underlayWatch). The per-packet path only counts.
func (d *Daemon) watchUnderlay(ctx context.Context) {
	w := underlayWatch{unrouted: d.unroutedPeers, lastBad: d.lastBadSource, peerErrs: d.hfi.PeerErrors, namePeers: d.namePeerErrors}
	w.check(&d.hfi.Counters, time.Now(), nil) // what was before is not news
	everyUntilDone(ctx, underlayCheckEvery, func() { w.check(&d.hfi.Counters, time.Now(), d.log) })
}

// everyUntilDone calls f every interval until ctx is done.
func everyUntilDone(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// underlayWatch is what watchUnderlay has seen: the counts at its last look
// and when it last warned of each.
type underlayWatch struct {
	refused, badSource, floods                   uint64
	warnedRefused, warnedBadSource, warnedFloods time.Time

	// The warnings' details, if set: the peers the kernel has no route
	// to, and the last packet that failed the source check.
	unrouted func() []string
	lastBad  func() []zap.Field

	// The errors the kernel reported for datagrams sent, by endpoint
	// (hfi.HFI.PeerErrors), and how to name them in a warning; unset, the
	// watch does not look at them. peerErrors is the count at the last
	// look (lastLook), erring the endpoints that had an error in the
	// hfi.PeerErrorQuiet before it, each with whether it was warned of.
	peerErrs   func() []hfi.PeerError
	namePeers  func([]hfi.PeerError, time.Time) []string
	peerErrors uint64
	lastLook   time.Time
	erring     map[netip.AddrPort]bool
}

// maxUnroutedNamed bounds the peers a warning names; maxRouteProbes the
// directory entries unroutedPeers looks at (a directory has at most 4095
// nodes; the look runs at most once an hour).
const (
	maxUnroutedNamed = 8
	maxRouteProbes   = 4096
)

// unroutedPeers names the directory's endpoints the kernel has no route to
// from node.listen's address ("LID 0x000012 (name) at 10.0.0.2:4793"), at
// most maxUnroutedNamed, and how many more there are. Each look is a UDP
// connect, which asks the kernel for a route and sends nothing.
func (d *Daemon) unroutedPeers() []string {
	names := map[uint32]string{}
	for _, p := range d.cfg.Peers {
		names[p.LID.To16B()] = p.Name
	}
	eps := d.hfi.Directory().Endpoints()
	self := d.hfi.LID()
	var local *net.UDPAddr
	if a := d.hfi.Transport().LocalAddr().Addr(); a.IsValid() && !a.IsUnspecified() {
		local = net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0))
	}
	var out []string
	more := 0
	for i, lid := range sortedKeys(eps) {
		if i == maxRouteProbes {
			break
		}
		if lid == self {
			continue
		}
		ep := eps[lid]
		c, err := net.DialUDP("udp", local, net.UDPAddrFromAddrPort(ep))
		if err == nil {
			c.Close()
			continue
		}
		if len(out) == maxUnroutedNamed {
			more++
			continue
		}
		s := "LID " + encap.LIDFrom16B(lid).String()
		if n := names[lid]; n != "" {
			s += " (" + n + ")"
		}
		why := err.Error()
		if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
			why = oe.Err.Error() // "connect: network is unreachable"
		}
		out = append(out, s+" at "+ep.String()+": "+why)
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// lastBadSource describes the last packet that failed the source check:
// its SLID, where it came from, and where the directory has that LID.
func (d *Daemon) lastBadSource() []zap.Field {
	slid, from, ok := d.hfi.LastBadSource()
	if !ok {
		return nil
	}
	fs := []zap.Field{zap.Stringer("last_slid", encap.LIDFrom16B(slid)), zap.Stringer("last_from", from)}
	if ep, ok := d.hfi.Directory().Endpoint(slid); ok {
		fs = append(fs, zap.Stringer("slid_endpoint", ep))
	} else {
		fs = append(fs, zap.String("slid_endpoint", "none (not in the directory)"))
	}
	return fs
}

// check warns on log (nil: only records) of what rose since the last check,
// each kind at most once in underlayWarnEvery: datagrams the kernel refused
// (PortXmitDiscards less xmit_no_route: no route to a peer's address, say),
// and datagrams from an endpoint that is not their SLID's (rcv_bad_source:
// a peer whose underlay address changed). Both were only counted, so a peer
// cut off in either way went unremarked in the log.
func (w *underlayWatch) check(c *hfi.Counters, now time.Time, log *zap.Logger) {
	noRoute := c.XmitNoRoute.Load() // first: each is counted in XmitDiscards before
	refused := c.XmitDiscards.Load() - noRoute
	bad := c.RcvBadSource.Load()
	if log != nil && refused > w.refused && now.Sub(w.warnedRefused) >= underlayWarnEvery {
		fs := []zap.Field{zap.Uint64("refused", refused-w.refused), zap.Uint64("refused_total", refused)}
		if w.unrouted != nil {
			if u := w.unrouted(); len(u) > 0 {
				fs = append(fs, zap.Strings("no_route_to", u))
			}
		}
		log.Warn("the kernel refused datagrams to peers (no route to a peer's address? an underlay down? its device queue full?): their packets are lost; "+
			"vnicctl hfi counts them in PortXmitDiscards (less xmit_no_route)", fs...)
		w.warnedRefused = now
	}
	if log != nil && bad > w.badSource && now.Sub(w.warnedBadSource) >= underlayWarnEvery {
		fs := []zap.Field{zap.Uint64("bad_source", bad-w.badSource), zap.Uint64("bad_source_total", bad)}
		if w.lastBad != nil {
			fs = append(fs, w.lastBad()...)
		}
		log.Warn("packets came from an underlay endpoint that is not their source LID's in the directory (peers[].address, or the FM's; "+
			"a peer whose address changed?): "+
			"they are dropped; vnicctl hfi counts them in rcv_bad_source", fs...)
		w.warnedBadSource = now
	}
	w.refused, w.badSource = refused, bad
	if w.peerErrs != nil {
		w.checkPeerErrors(c.XmitPeerErrors.Load(), now, log)
	}
	floods := c.PeerErrorFloods.Load()
	if log != nil && floods > w.floods && now.Sub(w.warnedFloods) >= underlayWarnEvery {
		log.Warn("errors for this host's datagrams (ICMP unreachable) came faster than 10000 a second, forged most likely: "+
			"vnicd stops taking them for 10 s at a time, lest they starve its traffic, and sees no peer go down meanwhile; "+
			"vnicctl hfi counts these spells in peer_error_floods",
			zap.Uint64("floods", floods-w.floods), zap.Uint64("floods_total", floods))
		w.warnedFloods = now
	}
	w.floods = floods
}

// checkPeerErrors warns of the endpoints whose datagrams keep coming back
// with errors (ICMP port unreachable: no vnicd listening there; host
// unreachable: the host down), in one warning per look. An endpoint is
// named once it had errors at two looks or more (a peer that starts a
// moment after this host, or restarts, brings back an error or two and is
// not news), and not again until it has had none for hfi.PeerErrorQuiet.
func (w *underlayWatch) checkPeerErrors(total uint64, now time.Time, log *zap.Logger) {
	prev := w.lastLook
	w.lastLook = now
	if total == w.peerErrors && len(w.erring) == 0 {
		return
	}
	var news []hfi.PeerError
	erring := map[netip.AddrPort]bool{}
	for _, e := range w.peerErrs() {
		if now.Sub(e.Last) >= hfi.PeerErrorQuiet {
			continue
		}
		warned, seen := w.erring[e.Endpoint]
		if seen && !warned && e.Last.After(prev) {
			news = append(news, e)
			warned = true
		}
		erring[e.Endpoint] = warned
	}
	w.erring, w.peerErrors = erring, total
	if log == nil || len(news) == 0 {
		return
	}
	more := 0
	if len(news) > maxUnroutedNamed {
		news, more = news[:maxUnroutedNamed], len(news)-maxUnroutedNamed
	}
	named := w.namePeers(news, now)
	if more > 0 {
		named = append(named, fmt.Sprintf("and %d more", more))
	}
	log.Warn("datagrams to peers keep coming back with errors (connection refused: no vnicd listening there; no route to host: the host down?): "+
		"their packets are lost; vnicctl fabric shows each peer's last error, vnicctl hfi counts them in xmit_peer_errors",
		zap.Strings("peers", named), zap.Uint64("xmit_peer_errors", total))
}

// namePeerErrors describes each error with the peer it is about: its LID
// and name when the endpoint is in the directory, the fabric manager's
// endpoint as such.
func (d *Daemon) namePeerErrors(errs []hfi.PeerError, now time.Time) []string {
	names := map[uint32]string{}
	for _, p := range d.cfg.Peers {
		names[p.LID.To16B()] = p.Name
	}
	byEP := map[netip.AddrPort]uint32{}
	for lid, ep := range d.hfi.Directory().Endpoints() {
		if old, ok := byEP[ep]; !ok || lid < old {
			byEP[ep] = lid
		}
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		var who string
		if lid, ok := byEP[e.Endpoint]; ok {
			who = "LID " + encap.LIDFrom16B(lid).String()
			if n := names[lid]; n != "" {
				who += " (" + n + ")"
			}
			who += " at " + e.Endpoint.String()
		} else if e.Endpoint == d.cfg.Node.FabricManager {
			who = "the fabric manager at " + e.Endpoint.String()
		} else {
			who = e.Endpoint.String() + " (not in the directory)"
		}
		out = append(out, who+": "+e.Describe(now))
	}
	return out
}

// How often the daemon looks at its queues' misrouted packets, and how
// often at most it warns of them.
const (
	misrouteCheckEvery = 10 * time.Second
	misrouteWarnEvery  = time.Hour
)

// watchMisrouted warns, until ctx is done, when the data plane's queues
// read packets that belong to another queue (QueueCounters.RxMisrouted):
// the underlay merges datagrams of several flows, so flows may be
// reordered. The per-packet path only counts them.
func (d *Daemon) watchMisrouted(ctx context.Context) {
	var seen uint64
	var warned time.Time
	everyUntilDone(ctx, misrouteCheckEvery, func() {
		var n uint64
		for _, q := range d.engine.QueueCounters() {
			n += q.RxMisrouted
		}
		if n > seen && time.Since(warned) >= misrouteWarnEvery {
			d.log.Warn("packets reached a data-plane queue other than their flow's: the underlay merges datagrams of several flows "+
				"(receive GRO on a NIC), so a flow may be reordered; set node.queues: 1, or turn GRO off on the underlay device",
				zap.Uint64("misrouted", n), zap.Int("queues", d.engine.Queues()))
			warned = time.Now()
		}
		seen = n
	})
}

// MgmtConfig is the management plane's part of the config.
func mgmtConfig(c *config.Config) MgmtConfig {
	return MgmtConfig{
		NodeGUID: c.Node.GUID, PortGUID: c.Node.GUID, Description: c.Node.Name,
		FM: c.Node.FabricManager, FMLID: c.Node.FMLID.To16B(), Trusted: c.TrustedManagers,
		SubnetPrefix: c.Node.SubnetPrefix, Netdev: c.NetdevFor,
	}
}

// warnMTU warns when a full-size packet plus UDP/IP headers exceeds the
// underlay interface's MTU: IP fragmentation will carry it, slower.
func (d *Daemon) warnMTU() {
	link, err := d.underlayLink()
	if err != nil || link == nil {
		d.log.Debug("underlay MTU not checked", zap.Error(err))
		return
	}
	ipHdr := d.cfg.UnderlayIPHeaderLen()
	for _, v := range d.cfg.VNICs {
		pkt := encap.VNICPacketLen(int(v.Port.VESW.EthMTU)+engine.MaxFrameOverMTU) + 8 + ipHdr
		if mtu := link.Attrs().MTU; pkt > mtu {
			d.log.Warn("full-size VNIC packets exceed the underlay MTU; IP fragmentation will carry them, slower",
				zap.Uint8("vnic", v.VPort), zap.Uint16("eth_mtu", v.Port.VESW.EthMTU),
				zap.Int("packet_with_udp_ip", pkt), zap.String("underlay", link.Attrs().Name), zap.Int("underlay_mtu", mtu),
				zap.Int("eth_mtu_that_fits", ethMTUThatFits(mtu, ipHdr)))
		}
	}
}

// ethMTUThatFits is the largest eth_mtu whose full-size packet, with UDP
// and an IP header of ipHdr bytes, fits an underlay MTU of mtu (at least the
// smallest eth_mtu, 68). The packet's pad rounds it up to 8 bytes, so the
// figure is not the configured eth_mtu less the excess.
func ethMTUThatFits(mtu, ipHdr int) int {
	m := mtu - 8 - ipHdr - encap.VNICHeaderLen - encap.TrailerLen - engine.MaxFrameOverMTU
	for m > engine.MinEthMTU && encap.VNICPacketLen(m+engine.MaxFrameOverMTU)+8+ipHdr > mtu {
		m-- // at most 7 steps: the pad is under 8 bytes
	}
	return max(m, engine.MinEthMTU)
}

func (d *Daemon) underlayLink() (netlink.Link, error) { return underlayLinkOf(d.cfg, false) }

func stateName(s uint8) string {
	switch s {
	case engine.StateForwarding:
		return "FORWARDING"
	case engine.StateDropAll:
		return "DROP_ALL"
	}
	return fmt.Sprintf("%d", s)
}

func (d *Daemon) registerControl() {
	d.ctl.Handle(ctl.CmdVNICs, func(json.RawMessage) (any, error) {
		out := VNICStatuses(d.engine)
		for i := range out {
			d.decorate(&out[i])
		}
		return out, nil
	})
	d.registerRuntime()
	d.ctl.Handle(ctl.CmdClaims, func(json.RawMessage) (any, error) { return d.claims.list(), nil })
	d.ctl.Handle(ctl.CmdCounters, func(args json.RawMessage) (any, error) {
		var a ctl.CountersArgs
		if len(args) > 0 {
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %w", err)
			}
		}
		out := []ctl.PortCounterSet{}
		for _, p := range d.engine.Ports() {
			if a.VPort == nil || *a.VPort == int(p.VPort()) {
				out = append(out, ctl.PortCounterSet{VPort: p.VPort(), IfName: p.Netdev().Name(), Counters: ctlCounters(p.AllCounters())})
			}
		}
		if a.VPort != nil && len(out) == 0 {
			return nil, ctl.Errorf(ctl.CodeNotFound, "no vport %d", *a.VPort)
		}
		return out, nil
	})
	d.ctl.Handle(ctl.CmdHFI, func(json.RawMessage) (any, error) {
		cs := d.hfi.Counters.Snapshot()
		cs = append(cs,
			hfi.CounterValue{Name: "vnic_rx_bad_tail", Value: d.engine.RxBadTail.Load()},
			hfi.CounterValue{Name: "vnic_rx_no_port", Value: d.engine.RxNoPort.Load()},
			hfi.CounterValue{Name: "mgmt_untrusted", Value: d.mgmt.Untrusted.Load()},
			hfi.CounterValue{Name: "mgmt_bad", Value: d.mgmt.Bad.Load()},
			hfi.CounterValue{Name: "mgmt_dropped", Value: d.mgmt.Dropped.Load()},
			hfi.CounterValue{Name: "busy_polls_idle", Value: d.engine.BusyPolls()})
		qc := d.engine.QueueCounters()
		for i, q := range qc {
			cs = append(cs,
				hfi.CounterValue{Name: fmt.Sprintf("queue%d_rx_packets", i), Value: q.RxPackets},
				hfi.CounterValue{Name: fmt.Sprintf("queue%d_tx_frames", i), Value: q.TxFrames},
				hfi.CounterValue{Name: fmt.Sprintf("queue%d_rx_kernel_drops", i), Value: q.RxKernelDrops})
			if len(qc) > 1 { // one queue has no other to misroute to
				cs = append(cs, hfi.CounterValue{Name: fmt.Sprintf("queue%d_rx_misrouted", i), Value: q.RxMisrouted})
			}
		}
		lid := encap.LIDFrom16B(d.hfi.LID())
		st := ctl.HFIStatus{
			Node: d.cfg.Node.Name, LID: lid.String(), Extended: lid.IsExtended(), State: d.hfi.State().String(),
			Listen: d.hfi.Transport().LocalAddr().String(), VerifyICRC: d.cfg.Node.VerifyICRC, BusyPoll: d.engine.BusyPoll().String(), Counters: ctlCounters(cs),
		}
		if fm := d.cfg.Node.FabricManager; fm.IsValid() {
			st.FabricManager = fm.String()
			now := time.Now()
			if e, ok := hfi.RecentPeerErrors(d.hfi.PeerErrors(), now)[fm]; ok && e.Last.After(d.mgmt.LastHeardFromSM()) {
				st.FabricManagerError = e.Describe(now)
			}
		}
		return st, nil
	})
	d.ctl.Handle(ctl.CmdFabric, func(json.RawMessage) (any, error) {
		return FabricEntries(d.hfi, time.Now()), nil
	})
	d.ctl.Handle(ctl.CmdVESWs, func(json.RawMessage) (any, error) { return VESWStatuses(d.engine), nil })
	d.ctl.Handle(ctl.CmdPath, func(args json.RawMessage) (any, error) {
		var a ctl.PathArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %w", err)
		}
		lid, err := encap.ParseLID(a.LID)
		if err != nil {
			for _, p := range d.cfg.Peers {
				if p.Name != "" && p.Name == a.LID {
					lid, err = p.LID, nil
				}
			}
		}
		if err != nil {
			return nil, ctl.Errorf(ctl.CodeNotFound, "%q is neither a LID nor the name of a configured peer", a.LID)
		}
		rec, err := d.mgmt.Path(context.Background(), lid)
		if err != nil {
			return nil, err
		}
		return PathStatusOf(&rec), nil
	})
}

// VNICStatuses describes every port of e.
func VNICStatuses(e *engine.Engine) []ctl.VNICStatus {
	out := []ctl.VNICStatus{} // [] in JSON, not null, when there is none
	for _, p := range e.Ports() {
		c := p.Config()
		out = append(out, ctl.VNICStatus{
			VPort: p.VPort(), IfName: p.Netdev().Name(), NetNS: p.NetNS(),
			MAC:  netMAC(c.Port.BaseMAC),
			VESW: uint16(c.VESW.VESWID), PKey: c.VESW.PKey.String(), EthMTU: c.VESW.EthMTU,
			SLID:        encap.LIDFrom16B(c.Port.EncapSLID).String(),
			McastDLID:   fmt.Sprintf("0x%06X", c.VESW.McastDLID),
			ConfigState: stateName(c.Port.ConfigState), OperState: stateName(p.OperState()), LinkUp: p.LinkUp(),
		})
		for _, a := range p.NetdevConfig().Addresses {
			out[len(out)-1].Addresses = append(out[len(out)-1].Addresses, a.String())
		}
	}
	return out
}

// FabricEntries lists h's directory, unicast LIDs first, each sorted. A
// unicast entry other than h's own shows h's traffic with it, and, if the
// kernel reported errors for its endpoint (hfi.HFI.PeerErrors) in the
// hfi.PeerErrorQuiet before now and since the last packet from it, the
// last.
func FabricEntries(h *hfi.HFI, now time.Time) []ctl.FabricEntry {
	var out []ctl.FabricEntry
	d := h.Directory()
	eps := d.Endpoints()
	byEP := hfi.RecentPeerErrors(h.PeerErrors(), now)
	for _, lid := range sortedKeys(eps) {
		fe := ctl.FabricEntry{LID: encap.LIDFrom16B(lid).String(), Endpoint: eps[lid].String()}
		var heard time.Time
		if t, ok := h.PeerTraffic(lid); ok && lid != h.LID() {
			rp, rb, tp, tb := t.RxPkts.Load(), t.RxBytes.Load(), t.TxPkts.Load(), t.TxBytes.Load()
			fe.RxPackets, fe.RxBytes, fe.TxPackets, fe.TxBytes = &rp, &rb, &tp, &tb
			fe.LastRx = "never"
			if at, ok := t.LastRx(); ok {
				heard = at
				fe.LastRx = max(now.Sub(at), 0).Truncate(time.Second).String() + " ago" // wall clock: it may step back
			}
		}
		if e, ok := byEP[eps[lid]]; ok && e.Last.After(heard) {
			// An error from before the peer's last packet is over: it was
			// up since (a peer that started later than this host).
			fe.Error = e.Describe(now)
		}
		out = append(out, fe)
	}
	groups := d.Groups()
	for _, mlid := range sortedKeys(groups) {
		s := ""
		for i, m := range groups[mlid] {
			if i > 0 {
				s += ","
			}
			s += encap.LID(m).String()
		}
		out = append(out, ctl.FabricEntry{LID: fmt.Sprintf("0x%06X", mlid), Members: s})
	}
	return out
}

func netMAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// VESWStatuses describes the vesw of every port of e.
func VESWStatuses(e *engine.Engine) []ctl.VESWStatus {
	out := []ctl.VESWStatus{}
	for _, p := range e.Ports() {
		c := p.Config().VESW
		s := ctl.VESWStatus{VPort: p.VPort(), IfName: p.Netdev().Name(), VESWID: uint16(c.VESWID), FabricID: c.FabricID,
			PKey: c.PKey.String(), McastDLID: fmt.Sprintf("0x%06X", c.McastDLID), RC: fmt.Sprintf("0x%08X", c.RC),
			EthMTU: c.EthMTU, DefaultPorts: []string{}}
		for i := range c.UcastDLID {
			if c.DefPortMask&(1<<i) != 0 {
				s.DefaultPorts = append(s.DefaultPorts, fmt.Sprintf("%d:%v", i, encap.LIDFrom16B(c.UcastDLID[i])))
			}
		}
		out = append(out, s)
	}
	return out
}

// PathStatusOf describes a path record.
func PathStatusOf(r *vema.PathRecord) ctl.PathStatus {
	return ctl.PathStatus{SGID: netip.AddrFrom16(r.SGID).String(), DGID: netip.AddrFrom16(r.DGID).String(),
		SLID: r.SLID.String(), DLID: r.DLID.String(), HopLimit: r.HopLimit, PKey: r.PKey.String(),
		MTU: r.MTU, Rate: r.Rate, SL: r.SL}
}

// ctlCounters is counters as the control protocol carries them.
func ctlCounters[C ~struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}](cs []C) []ctl.Counter {
	out := make([]ctl.Counter, len(cs))
	for i, c := range cs {
		out[i] = ctl.Counter(c)
	}
	return out
}
