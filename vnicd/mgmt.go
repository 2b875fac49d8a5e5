package vnicd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/handoff"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vema/node"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// MgmtConfig is what the management plane needs from the node's config.
type MgmtConfig struct {
	NodeGUID, PortGUID uint64
	Description        string
	// FM is the fabric manager's UDP endpoint (managed mode); invalid in
	// static mode.
	FM    netip.AddrPort
	FMLID uint32 // 16B; default 1
	// Trusted are the endpoints a static node takes Get/Set MADs from.
	Trusted      []netip.AddrPort
	SubnetPrefix uint64
	// Netdev names the netdev of a vport (nil: vnic<vport> in vnicd's netns).
	Netdev func(vport uint8) engine.NetdevConfig
}

// Mgmt is the node's management plane (docs/management.md): the hfi.Receiver of
// L4 0x08, with the SMA, the VEMA agent, the directory assembler, the SA
// client, the announce loop and the traps.
type Mgmt struct {
	log    *zap.Logger
	hfi    *hfi.HFI
	cfg    MgmtConfig
	Agent  *node.Agent
	SMA    *node.SMA
	Ports  *EnginePorts
	sendMu sync.Mutex
	sender *hfi.Sender

	dirMu sync.Mutex
	dir   node.DirAssembler

	lastSM  atomic.Int64 // unix nanos of the last trusted SMP from the SM
	tid     atomic.Uint64
	pendMu  sync.Mutex
	pending map[uint64]chan []byte // SA queries in flight, each removed by its answer or timeout
	// announced holds the TIDs of the last announces: their TrapRepress is
	// a response asked for. A ring, so unanswered announces take no room.
	announced [announceTIDs]uint64
	annNext   int
	// watch follows the node's source address toward the FM when it
	// listens on the wildcard address (nil otherwise).
	watch *addrWatch

	// refused holds, per vport, the reason the EM's last refused Set was
	// warned about, so that a Set the FM retries is warned about once.
	refusedMu sync.Mutex
	refused   map[uint8]string

	// in takes the MADs the data plane hands over (Receive) to the
	// management goroutine.
	in *handoff.Queue[madFrom]

	// Untrusted counts MADs from a source that is not the manager, and
	// responses nobody asked for (mgmt_untrusted).
	Untrusted atomic.Uint64
	// Bad counts management packets that do not parse (mgmt_bad).
	Bad atomic.Uint64
	// Dropped counts MADs that came while MaxQueuedMADs were waiting for
	// the management goroutine (mgmt_dropped); the sender's retry brings
	// them again, as a full receive queue of the kernel's MAD layer does.
	Dropped atomic.Uint64
}

// madFrom is what the management goroutine needs of the packet that
// carried a MAD.
type madFrom struct {
	slid            uint32
	src             netip.AddrPort
	srcQPN, destQPN uint32
}

// Management framing (docs/management.md §1).
const (
	scSMP      = 15
	pkeyFull   = encap.PKey(0xFFFF)
	pkeyLimit  = encap.PKey(0x7FFF)
	saTimeout  = 2 * time.Second
	announceIv = time.Second
	smSilence  = 3 * time.Second
	// announceTIDs is how many recent announces a TrapRepress may answer.
	announceTIDs = 8
	// MaxSAQueries bounds the SA queries (Path) in flight; one more fails
	// with ErrSABusy.
	MaxSAQueries = 64
	// MaxQueuedMADs bounds the MADs the data plane has handed to the
	// management goroutine and it has not handled yet; one more is dropped.
	MaxQueuedMADs = 64
)

// NewMgmt makes the management plane of engine e's HFI and registers it for
// L4 0x08.
func NewMgmt(e *engine.Engine, cfg MgmtConfig, log *zap.Logger) *Mgmt {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.FMLID == 0 {
		cfg.FMLID = 1
	}
	if cfg.SubnetPrefix == 0 {
		cfg.SubnetPrefix = encap.DefaultSubnetPrefix
	}
	h := e.HFI()
	m := &Mgmt{log: log.Named("mgmt"), hfi: h, cfg: cfg, sender: h.NewSender(), pending: map[uint64]chan []byte{}}
	m.in = handoff.New(MaxQueuedMADs, vema.MADSize, func(mad []byte, f madFrom) {
		m.handle(mad, f.slid, f.src, f.srcQPN, f.destQPN)
	})
	m.Ports = NewEnginePorts(e, cfg.Netdev)
	m.Agent = node.NewAgent(m.Ports, nil)
	state := vema.PortStateInit
	if h.LID() != 0 {
		state = vema.PortStateActive
	}
	m.SMA = node.NewSMA(cfg.NodeGUID, cfg.PortGUID, cfg.Description,
		node.SMAPort{LID: encap.LIDFrom16B(h.LID()), SubnetPrefix: cfg.SubnetPrefix, State: state, SAQP: 1},
		m.applyPort)
	if m.Managed() && h.Transport().LocalAddr().Addr().IsUnspecified() {
		m.watch = newAddrWatch(cfg.FM)
	}
	e.SetEventHook(m.portEvent)
	h.Register(encap.L4FabricMgt, m)
	return m
}

// Managed reports whether the node has a fabric manager.
func (m *Mgmt) Managed() bool { return m.cfg.FM.IsValid() }

func (m *Mgmt) applyPort(p node.SMAPort) {
	if uint32(p.LID) != m.hfi.LID() {
		m.log.Info("LID set by the SM", zap.Stringer("lid", p.LID), zap.Stringer("sm_lid", p.SMLID))
		m.hfi.SetLID(uint32(p.LID))
	}
	if p.State == vema.PortStateActive && p.LID != 0 {
		m.hfi.SetState(hfi.StateActive)
	}
}

// smLID is the LID management MADs must come from.
func (m *Mgmt) smLID() uint32 {
	if l := uint32(m.SMA.Port().SMLID); l != 0 {
		return l
	}
	return m.cfg.FMLID
}

func (m *Mgmt) trusted(slid uint32, src netip.AddrPort) bool {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if m.Managed() {
		fm := netip.AddrPortFrom(m.cfg.FM.Addr().Unmap(), m.cfg.FM.Port())
		return slid == m.smLID() && src == fm
	}
	return slices.ContainsFunc(m.cfg.Trusted, func(t netip.AddrPort) bool {
		return netip.AddrPortFrom(t.Addr().Unmap(), t.Port()) == src
	})
}

// Receive takes one management packet (hfi.Receiver). It runs on the data
// plane's poll loop, which must not wait: it copies the MAD (at most
// vema.MADSize bytes) and hands it to the management goroutine, which
// handles MADs one at a time, in order (handle). A Set that reconfigures a
// port makes netlink calls that take tens of milliseconds; the frames of
// every port on the loop go on meanwhile. Without a free buffer (the
// goroutine is MaxQueuedMADs behind) the MAD is dropped and counted.
func (m *Mgmt) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	mp, err := encap.MgmtPayload(pkt)
	if err != nil || len(mp.MAD) < vema.MADHeaderLen || len(mp.MAD) > vema.MADSize {
		m.Bad.Add(1)
		return
	}
	if !m.in.Put(mp.MAD, madFrom{slid: h.SLID(), src: src, srcQPN: mp.SrcQPN, destQPN: mp.DestQPN}) {
		m.Dropped.Add(1)
	}
}

// Wait returns once every MAD handed over so far has been handled.
func (m *Mgmt) Wait() { m.in.Wait() }

// handle handles one MAD from slid at src (the management goroutine).
func (m *Mgmt) handle(mad []byte, slid uint32, src netip.AddrPort, srcQPN, destQPN uint32) {
	method := vema.Method(mad[3])
	tid := binary.BigEndian.Uint64(mad[8:])
	// A response is taken, as a Get or Set, only from the manager: a fabric
	// member could otherwise answer a query in flight (its TID guessed) and
	// so end it before the FM's answer comes.
	if !m.trusted(slid, src) {
		m.Untrusted.Add(1)
		return
	}
	if method.IsResponse() || method == vema.MethodTrapRepress {
		if !m.deliver(tid, mad) {
			m.Untrusted.Add(1)
		}
		return
	}
	var resp []byte
	var ok bool
	sc, pkey, class := uint8(0), pkeyFull, vema.Class(mad[1])
	switch class {
	case vema.ClassSubnDirectedRoute, vema.ClassSubnLIDRouted:
		m.lastSM.Store(time.Now().UnixNano())
		resp, ok = m.SMA.Handle(mad)
		sc, pkey = scSMP, pkeyLimit
	case vema.ClassVEMA:
		resp, ok = m.Agent.Handle(mad)
		if ok && method == vema.MethodSet {
			m.noteSet(mad, resp)
		}
	case vema.ClassDirectory:
		resp, ok = m.handleDirectory(mad)
	default:
		m.Bad.Add(1)
		return
	}
	if !ok {
		m.Bad.Add(1)
		return
	}
	m.send(resp, slid, sc, pkey, srcQPN, destQPN, src)
}

// noteSet warns when the node refuses a VEMA Set of the EM (a netdev name
// taken in the target namespace, say): the FM logs the status it got, and
// the node says why. A refusal the FM's retries repeat is warned about
// once, until a Set of that vport succeeds or fails otherwise.
func (m *Mgmt) noteSet(req, resp []byte) {
	if len(resp) < vema.MADHeaderLen || len(req) < vema.MADHeaderLen {
		return
	}
	vport := uint8(binary.BigEndian.Uint32(req[20:]))
	attr := binary.BigEndian.Uint16(req[16:])
	st := vema.Status(binary.BigEndian.Uint16(resp[4:]))
	reason := st.String()
	err := m.Ports.takeErr()
	if err != nil {
		reason = err.Error()
	} else if attr == vema.AttrDeleteVESW && st == vema.StatusInvalidAttrValue {
		// No such vport: the FM takes it as done (the port is gone, as
		// asked), and sends such deletes in normal operation.
		return
	}
	m.refusedMu.Lock()
	defer m.refusedMu.Unlock()
	if st == vema.StatusSuccess {
		delete(m.refused, vport)
		return
	}
	if m.refused == nil {
		m.refused = map[uint8]string{}
	}
	if m.refused[vport] == reason {
		return
	}
	m.refused[vport] = reason
	m.log.Warn("refused a VEMA Set of the fabric manager", zap.Uint8("vport", vport),
		zap.String("attr", vema.VEMAAttrName(attr)), zap.Stringer("status", st),
		zap.String("reason", reason))
}

// Flush is part of hfi.Receiver; each MAD is handed over in Receive.
func (m *Mgmt) Flush() {}

func (m *Mgmt) selfLID() uint32 {
	if l := m.hfi.LID(); l != 0 {
		return l
	}
	return encap.LID16BPermissive
}

// send frames mad and sends it to ep (or, when ep is invalid, by the
// directory to dlid).
func (m *Mgmt) send(mad []byte, dlid uint32, sc uint8, pkey encap.PKey, dqp, sqp uint32, ep netip.AddrPort) {
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: m.selfLID(), DLID: dlid, SC: sc, PKey: pkey,
		DestQPN: dqp, SrcQPN: sqp}, mad)
	if err != nil {
		m.log.Warn("cannot frame a MAD", zap.Error(err))
		return
	}
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	if ep.IsValid() {
		m.sender.SendTo(pkt, ep)
	} else {
		m.sender.Send([][]byte{pkt})
	}
}

func (m *Mgmt) deliver(tid uint64, mad []byte) bool {
	m.pendMu.Lock()
	ch, ok := m.pending[tid]
	delete(m.pending, tid)
	announce := tid != 0 && slices.Contains(m.announced[:], tid)
	m.pendMu.Unlock()
	if ok {
		ch <- slices.Clone(mad)
	}
	return ok || announce
}

// handleDirectory answers a directory-class MAD (docs/management.md §3). A MAD
// with another base or class version or OUI is not the directory class's
// and gets no answer (as the agent treats VEMA's).
func (m *Mgmt) handleDirectory(req []byte) ([]byte, bool) {
	if len(req) < vema.VendorHeaderLen || req[0] != vema.BaseVersion || req[2] != vema.DirectoryClassVersion ||
		vema.OUI(req[37:40]) != vema.IntelOUI {
		return nil, false
	}
	resp := make([]byte, vema.MADSize)
	copy(resp, req[:vema.VendorHeaderLen])
	copy(resp[vema.VendorHeaderLen:], req[vema.VendorHeaderLen:])
	resp[3] = byte(vema.MethodGetResp)
	st := m.applyDirectory(req)
	binary.BigEndian.PutUint16(resp[4:], uint16(st))
	return resp, true
}

func (m *Mgmt) applyDirectory(req []byte) vema.Status {
	if vema.Method(req[3]) != vema.MethodSet {
		return vema.StatusUnsupportedMethodAttr
	}
	data := req[vema.VendorHeaderLen:]
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	var eps map[uint32]netip.AddrPort
	var groups map[uint32][]uint32
	var done bool
	var err error
	switch binary.BigEndian.Uint16(req[16:]) {
	case vema.AttrDirectoryBlock:
		var b vema.DirectoryBlock
		if err = b.UnmarshalBinary(data); err == nil {
			// Each entry is checked as its block comes: the block that
			// carries a bad one is refused, and the generation is not
			// taken for installed (the FM sends it again).
			for _, e := range b.Entries {
				if err = hfi.CheckEndpoint(e.LID, e.Addr); err != nil {
					break
				}
			}
		}
		if err == nil {
			eps, groups, done, err = m.dir.AddDirectoryBlock(&b)
		}
	case vema.AttrMulticastBlock:
		var b vema.MulticastBlock
		if err = b.UnmarshalBinary(data); err == nil {
			for _, g := range b.Groups {
				if err = hfi.CheckGroup(g.MLID, g.Members); err != nil {
					break
				}
			}
		}
		if err == nil {
			eps, groups, done, err = m.dir.AddMulticastBlock(&b)
		}
	default:
		return vema.StatusUnsupportedMethodAttr
	}
	if err != nil {
		m.log.Warn("directory block from the FM refused", zap.Error(err))
		return vema.StatusInvalidAttrValue
	}
	if !done {
		return vema.StatusSuccess
	}
	if m.Managed() {
		// The FM stays reachable whatever the directory says: its LID maps
		// to the endpoint the node takes management MADs from (trusted).
		// The FM names itself by the address it listens on, which need not
		// be the one the node reaches it at (a port mapping), and the HFI's
		// source check would then drop all it sends.
		eps[m.cfg.FMLID] = m.cfg.FM
	}
	d, err := hfi.NewDirectory(eps, groups)
	if err != nil {
		m.log.Warn("directory from the FM refused", zap.Error(err))
		return vema.StatusInvalidAttrValue
	}
	m.hfi.SetDirectory(d)
	gen, _ := m.dir.Installed()
	m.log.Info("directory installed", zap.Uint32("generation", gen), zap.Int("endpoints", len(eps)), zap.Int("groups", len(groups)))
	return vema.StatusSuccess
}

// portEvent turns netdev changes into VEMA traps (docs/linux-compat.md §4.9).
func (m *Mgmt) portEvent(ev engine.PortEvent) {
	switch ev.Kind {
	case engine.EventMAC:
		if m.Ports.netdevMAC(ev.VPort, ev.MAC, ev.Initial) {
			m.Trap(ev.VPort, vema.TrapIfaceUcastMACChange)
		}
	case engine.EventMcast:
		if m.Ports.netdevMcast(ev.VPort) {
			m.Trap(ev.VPort, vema.TrapIfaceMcastMACChange)
		}
	case engine.EventLink:
		m.Trap(ev.VPort, vema.TrapEthLinkStatusChange)
	}
}

// Trap sends a VEMA trap of vport to the stored trap_lid, if the agent
// lets it go (trap_lid set, rate limit).
func (m *Mgmt) Trap(vport, opcode uint8) {
	mad, dlid, _, ok := m.Agent.Trap(vport, opcode)
	if !ok {
		return
	}
	var ep netip.AddrPort
	if m.Managed() && dlid.To16B() == m.cfg.FMLID {
		ep = m.cfg.FM
	}
	m.send(mad, dlid.To16B(), 0, pkeyFull, encap.QPNGSI, encap.QPNGSI, ep)
}

// joined reports whether the node has joined the fabric and its manager
// still talks to it: the SM gave it a LID and was heard within smSilence
// (it polls every node each second).
func (m *Mgmt) joined() bool {
	return m.hfi.LID() != 0 && time.Since(time.Unix(0, m.lastSM.Load())) <= smSilence
}

// Run sends announces (managed mode) until ctx is done: every second while
// the node has no LID or has not heard from the SM for 3 s, and at once
// when a node listening on the wildcard address loses the address the FM
// knows it by (addrWatch).
func (m *Mgmt) Run(ctx context.Context) {
	if !m.Managed() {
		return
	}
	t := time.NewTicker(announceIv)
	defer t.Stop()
	var watch <-chan time.Time
	if m.watch != nil {
		wt := time.NewTicker(addrWatchIv)
		defer wt.Stop()
		watch = wt.C
	}
	due := true
	for {
		if due && !m.joined() {
			m.announce()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			due = true
		case <-watch:
			due = false
			if old, cur, moved := m.watch.moved(); moved && m.joined() {
				m.log.Info("the underlay address the FM knows this node by is gone: announcing from the new one",
					zap.Stringer("old", old), zap.Stringer("new", cur))
				m.lastSM.Store(0) // the FM cannot reach the node until it hears the announce
				t.Reset(announceIv)
				due = true
			}
		}
	}
}

// announce sends one announce (docs/management.md §2) to the FM.
func (m *Mgmt) announce() {
	tid := m.tid.Add(1)
	m.pendMu.Lock()
	m.announced[m.annNext] = tid // a TrapRepress is a response we asked for
	m.annNext = (m.annNext + 1) % announceTIDs
	m.pendMu.Unlock()
	m.send(m.SMA.Announce(tid), m.cfg.FMLID, scSMP, pkeyLimit, encap.QPNSMI, encap.QPNSMI, m.cfg.FM)
}

// expect registers an SA query's TID; nil when MaxSAQueries are in flight.
func (m *Mgmt) expect(tid uint64) chan []byte {
	m.pendMu.Lock()
	defer m.pendMu.Unlock()
	if len(m.pending) >= MaxSAQueries {
		return nil
	}
	ch := make(chan []byte, 1)
	m.pending[tid] = ch
	return ch
}

// ErrNoFM is returned by Path when the node has no fabric manager.
var ErrNoFM = errors.New("vnicd: no fabric manager configured")

// ErrSATimeout is returned by Path when the SA does not answer in time.
var ErrSATimeout = errors.New("vnicd: the SA did not answer within 2 s")

// ErrSABusy is returned by Path when MaxSAQueries queries are in flight.
var ErrSABusy = fmt.Errorf("vnicd: %d SA queries are in flight; try again", MaxSAQueries)

// Path asks the SA (the FM) for the path record from this node to dlid
// (docs/management.md §5).
func (m *Mgmt) Path(ctx context.Context, dlid encap.LID) (vema.PathRecord, error) {
	if !m.Managed() {
		return vema.PathRecord{}, ErrNoFM
	}
	tid := m.tid.Add(1)
	mad, err := pathQuery(tid, encap.LIDFrom16B(m.hfi.LID()), dlid)
	if err != nil {
		return vema.PathRecord{}, err
	}
	ch := m.expect(tid)
	if ch == nil {
		return vema.PathRecord{}, ErrSABusy
	}
	m.send(mad, m.cfg.FMLID, 0, pkeyFull, encap.QPNGSI, encap.QPNGSI, m.cfg.FM)
	ctx, cancel := context.WithTimeout(ctx, saTimeout)
	defer cancel()
	select {
	case resp := <-ch:
		var r vema.SAMAD
		if err := r.UnmarshalBinary(resp); err != nil {
			return vema.PathRecord{}, fmt.Errorf("vnicd: SA answer: %w", err)
		}
		if st := r.Status; st == vema.StatusInvalidAttrValue {
			// The FM's "no record" (docs/management.md §5).
			return vema.PathRecord{}, fmt.Errorf("vnicd: the SA has no path to %v: the fabric manager does not know the LID or its node is not active (SA status %v)", dlid, st)
		} else if st != vema.StatusSuccess {
			return vema.PathRecord{}, fmt.Errorf("vnicd: SA answered status %v", st)
		}
		var p vema.PathRecord
		if err := p.UnmarshalBinary(r.Data); err != nil {
			return vema.PathRecord{}, fmt.Errorf("vnicd: SA answer: %w", err)
		}
		return p, nil
	case <-ctx.Done():
		m.pendMu.Lock()
		delete(m.pending, tid)
		m.pendMu.Unlock()
		return vema.PathRecord{}, ErrSATimeout
	}
}

// pathQuery is the SubnAdmGet PathRecord Path sends (docs/management.md §5): an
// OPA SA MAD (base and class version 0x80) with comp_mask SLID|DLID and the
// OPA record carrying the 32-bit LIDs. It is 256 bytes, as the kernel's SA
// client sends it: sa_query.c alloc_mad asks ib_create_send_mad for
// IB_MGMT_SA_HDR + IB_MGMT_SA_DATA (56 + 200) also for an OPA query, and
// mad.c sends an OPA MAD only hdr_len + data_len long ("OPA MADs don't have
// to be the full 2048 bytes").
func pathQuery(tid uint64, slid, dlid encap.LID) ([]byte, error) {
	q := vema.SAMAD{SAHeader: vema.SAHeader{
		MADHeader: vema.MADHeader{BaseVersion: vema.BaseVersion, MgmtClass: vema.ClassSubnAdm,
			ClassVersion: vema.SAClassVersion, Method: vema.MethodGet, TID: tid, AttrID: vema.SAAttrPathRecord},
		CompMask: vema.CompMaskSLID | vema.CompMaskDLID,
	}}
	rec := vema.PathRecord{SLID: slid, DLID: dlid}
	data, err := rec.MarshalBinary()
	if err != nil {
		return nil, err
	}
	q.Data = make([]byte, vema.IBSADataLen)
	copy(q.Data, data)
	return q.MarshalBinary()
}

// configurePort runs a VNIC of the static config through the agent, as the
// EM would set it: Set VESWPortInfo, then the MAC table in Sets of at most
// 125 entries (docs/design.md: the VEMA agent is the only way a port's config
// changes).
func (m *Mgmt) configurePort(vport uint8, pc *engine.PortConfig, macs []engine.MACEntry) error {
	info := VESWPortInfoFrom(pc)
	var req vema.MAD
	req.BaseVersion, req.MgmtClass, req.ClassVersion, req.Method = vema.BaseVersion, vema.ClassVEMA, vema.VEMAClassVersion, vema.MethodSet
	req.OUI = vema.IntelOUI
	req.AttrID, req.AttrMod = vema.AttrVESWPortInfo, uint32(vport)
	req.TID = m.tid.Add(1)
	_, _ = info.AppendBinary(req.Data[:0])
	if err := m.local(&req); err != nil {
		return err
	}
	if len(macs) == 0 {
		return nil
	}
	ents := make([]vema.MACTableEntry, len(macs))
	for i, e := range macs {
		ents[i] = vema.MACTableEntry{MAC: e.MAC, Mask: [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, DLIDSD: vema.MakeDLIDSD(e.DLID, false)}
	}
	digest := MACTableDigest(ents)
	for off := 0; off < len(ents); off += vema.MaxMACEntriesPerMAD {
		chunk := ents[off:min(off+vema.MaxMACEntriesPerMAD, len(ents))]
		t := vema.VESWPortMACEntries{MACTableHeader: vema.MACTableHeader{Offset: uint16(off), NumEntries: uint16(len(chunk)), Digest: digest}, Entries: chunk}
		req.AttrID, req.TID = vema.AttrVESWPortMACEntries, m.tid.Add(1)
		clear(req.Data[:])
		if _, err := t.AppendBinary(req.Data[:0]); err != nil {
			return err
		}
		if err := m.local(&req); err != nil {
			return err
		}
	}
	return nil
}

// MACTableDigest is the EM's mac_tbl_digest (docs/management.md §4.3): CRC-32
// (IEEE) of the encoded entries.
func MACTableDigest(ents []vema.MACTableEntry) uint32 {
	var b []byte
	for i := range ents {
		b, _ = ents[i].AppendBinary(b)
	}
	return crc32IEEE(b)
}

func (m *Mgmt) local(req *vema.MAD) error {
	b, _ := req.MarshalBinary()
	resp, ok := m.Agent.Handle(b)
	if !ok {
		return errors.New("vnicd: the VEMA agent did not answer")
	}
	if st := vema.Status(binary.BigEndian.Uint16(resp[4:])); st != vema.StatusSuccess {
		if err := m.Ports.takeErr(); err != nil {
			return err
		}
		return fmt.Errorf("%w: vport %d: %s %v", engine.ErrPortConfig, req.AttrMod&0xFF, vema.VEMAAttrName(req.AttrID), st)
	}
	return nil
}

// LastHeardFromSM returns when the last trusted SMP from the SM came; the
// zero time if none came yet (or since the node last announced itself).
func (m *Mgmt) LastHeardFromSM() time.Time {
	if ns := m.lastSM.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
