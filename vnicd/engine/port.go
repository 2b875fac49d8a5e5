package engine

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// maxTxBufLen is the largest transmit buffer: headroom for the 20-byte
// header, the largest frame a 16B packet can carry plus one byte (to see
// truncation), and the tailroom for pad, ICRC and tail.
const maxTxBufLen = encap.Headroom + encap.MaxFrameLen + 1 + encap.Tailroom

// txBufLen is the transmit buffer of a port whose frames are at most
// maxFrame bytes (eth_mtu + 18): a longer frame the kernel hands over is cut
// to the buffer, seen by its spare byte, and dropped. It holds a short frame
// padded to 60 bytes (Port.encap) whatever the eth_mtu: the EM may set one
// below 42.
func txBufLen(maxFrame int) int {
	return encap.Headroom + max(min(maxFrame, encap.MaxFrameLen), encap.MinFrameLen) + 1 + encap.Tailroom
}

// readErrorBackoff is the pause after a failed TAP read, so that a device in
// a bad state is never spun on.
const readErrorBackoff = 10 * time.Millisecond

// MaxFrameOverMTU is what a frame may add to the MTU: an Ethernet header with
// one VLAN tag (VLAN_ETH_HLEN). Receivers drop longer frames as oversize.
const MaxFrameOverMTU = 18

// portState is one immutable configuration of a port with everything the
// data path derives from it. A change builds a new one and swaps it in, so
// the transmit and receive goroutines never lock.
type portState struct {
	cfg      PortConfig
	flows    encap.FlowTable
	macs     map[uint64]uint32 // destination MAC (macKey) -> DLID (source-MAC entries left out)
	maxFrame int
	params   encap.VNICParams // SLID, PKey, VESWID filled in
}

func newPortState(cfg PortConfig, macs []MACEntry) *portState {
	s := &portState{
		cfg:      cfg,
		flows:    encap.NewFlowTable(cfg.VESW.DefPortMask),
		maxFrame: max(int(cfg.VESW.EthMTU), MinEthMTU) + MaxFrameOverMTU,
		params: encap.VNICParams{
			SLID:   cfg.Port.EncapSLID,
			PKey:   cfg.VESW.PKey,
			VESWID: cfg.VESW.VESWID,
		},
	}
	if len(macs) > 0 {
		s.macs = make(map[uint64]uint32, len(macs))
		for _, m := range macs {
			if _, dup := s.macs[macKey(m.MAC[:])]; !dup && m.DLID != 0 {
				s.macs[macKey(m.MAC[:])] = m.DLID & encap.LID16BMask
			}
		}
	}
	return s
}

// macKey is the MAC at b[0:6] as a map key: a uint64 key has the map's
// fast path, a [6]byte one is hashed as memory.
func macKey(b []byte) uint64 {
	return uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))
}

// macMemo is the last MAC table lookup of one transmit batch, which holds
// one portState: frames in a batch mostly go to one destination. The zero
// value holds none.
type macMemo struct {
	key     uint64
	dlid    uint32
	ok, set bool
}

// dlid chooses the destination as opa_vnic_get_dlid: the MAC table, then the
// vesw's multicast DLID, then the LID in a locally administered MAC, then the
// default port's unknown-unicast DLID; 0 when none applies. m is the
// batch's last MAC table lookup, in s's table.
func (s *portState) dlid(frame []byte, fi *encap.FrameInfo, entropy uint8, m *macMemo) uint32 {
	if s.macs != nil {
		if k := macKey(frame); !m.set || k != m.key {
			m.dlid, m.ok = s.macs[k]
			m.key, m.set = k, true
		}
		if m.ok {
			return m.dlid
		}
	}
	if fi.Multicast {
		return s.cfg.VESW.McastDLID & encap.LID16BMask
	}
	if encap.IsLocalMAC(frame) {
		return encap.DLIDFromMAC(frame)
	}
	if dp := s.flows.Port(entropy); dp < encap.MaxDefaultPort {
		return s.cfg.VESW.UcastDLID[dp] & encap.LID16BMask
	}
	return 0
}

// Port is one VNIC port: a netdev and the configuration the VEMA gave it.
type Port struct {
	vport  uint8
	dev    tap.Netdev
	netdev NetdevConfig
	st     atomic.Pointer[portState]
	linkUp atomic.Bool // the netdev is administratively up
	// mtu is the netdev's MTU as last seen (the link watcher), or, for a
	// device with no netdev to watch, the vesw's eth_mtu; the receive
	// check drops longer frames as oversize, as the kernel's did.
	mtu atomic.Int32
	fwd atomic.Bool // oper_state FORWARDING: config FORWARDING and link up
	// operMu makes each updateOper read both inputs and store fwd as one
	// step: the link watcher and a Set each change one input and then
	// recompute, and the last to recompute must see both changes.
	operMu sync.Mutex

	// Counters are the port's counters, under the kernel's names.
	Counters PortCounters

	closing atomic.Bool

	// pq are the device's queues as the engine's poll loops drive them, one
	// per loop (fewer if the device has fewer), set at creation.
	pq []*portQueue

	moveMu    sync.Mutex    // one MovePort at a time
	watchDone chan struct{} // closed when the link watcher's goroutine ends; under moveMu after creation
}

// VPort returns the port's vport index.
func (p *Port) VPort() uint8 { return p.vport }

// AllCounters returns the port's kernel counters (PortCounters.Snapshot)
// followed by its netdev's offload counters, if it has them (a TAP does).
func (p *Port) AllCounters() []Counter {
	return append(p.Counters.Snapshot(), p.dev.OffloadCounters()...)
}

// portQueue is one queue of a port's device as a poll loop drives it. The
// loop owns tx, the queue's transmit buffers, and txReady, whether the
// queue may have frames queued.
type portQueue struct {
	dev     tap.Poller
	tx      *txState
	txReady bool
}

// Queues returns how many of the device's queues poll loops carry.
func (p *Port) Queues() int { return len(p.pq) }

// Netdev returns the port's netdev.
func (p *Port) Netdev() tap.Netdev { return p.dev }

// NetdevConfig returns the netdev settings the port was made with.
func (p *Port) NetdevConfig() NetdevConfig { return p.netdev }

// NetNS returns the namespace the port's netdev is in, as the config or a
// move named it ("" is vnicd's own).
func (p *Port) NetNS() string { return p.dev.NetNS() }

// Config returns the port's current configuration.
func (p *Port) Config() PortConfig { return p.st.Load().cfg }

// MACTable returns the port's MAC-table entries (unordered).
func (p *Port) MACTable() []MACEntry {
	st := p.st.Load()
	out := make([]MACEntry, 0, len(st.macs))
	for k, d := range st.macs {
		var mac [6]byte
		binary.BigEndian.PutUint16(mac[:], uint16(k>>32))
		binary.BigEndian.PutUint32(mac[2:], uint32(k))
		out = append(out, MACEntry{MAC: mac, DLID: d})
	}
	return out
}

// OperState returns StateForwarding or StateDropAll.
func (p *Port) OperState() uint8 {
	if p.fwd.Load() {
		return StateForwarding
	}
	return StateDropAll
}

// maxMTU is the largest MTU the port's netdev may have: the kernel's
// max_mtu, max(eth_mtu, min_mtu) (docs/linux-compat.md §6).
func (p *Port) maxMTU() int { return max(int(p.st.Load().cfg.VESW.EthMTU), MinEthMTU) }

// LinkUp reports whether the netdev is administratively up.
func (p *Port) LinkUp() bool { return p.linkUp.Load() }

func (p *Port) updateOper() {
	p.operMu.Lock()
	defer p.operMu.Unlock()
	p.fwd.Store(p.st.Load().cfg.Port.ConfigState == StateForwarding && p.linkUp.Load())
}

// txState is the transmit buffers of one of a port's queues, owned by the
// poll loop that carries the queue. They are sized
// for the port's eth_mtu, and grown (the one allocation, on a config change)
// when it rises.
type txState struct {
	bufs     [][]byte
	sizes    []int
	pkts     [][]byte
	maxFrame int // the longest frame the buffers hold
}

func newTxState(batch, maxFrame int) *txState {
	batch = max(batch, 1)
	t := &txState{bufs: make([][]byte, batch), sizes: make([]int, batch), pkts: make([][]byte, 0, batch), maxFrame: maxFrame}
	n := txBufLen(maxFrame)
	backing := make([]byte, batch*n)
	for i := range t.bufs {
		t.bufs[i] = backing[i*n : (i+1)*n : (i+1)*n]
	}
	return t
}

// txBuffers returns p's transmit buffers, grown first if the port's frames
// may now be longer.
func (p *Port) txBuffers(tx *txState) *txState {
	if m := p.st.Load().maxFrame; m > tx.maxFrame {
		return newTxState(len(tx.bufs), m)
	}
	return tx
}

// transmit wraps the n frames read into tx's buffers and sends them.
func (p *Port) transmit(tx *txState, n int, s *hfi.Sender) {
	st := p.st.Load()
	fwd := p.fwd.Load()
	pkts := tx.pkts[:0]
	var m macMemo
	for i := range n {
		if pkt := p.encap(st, fwd, tx.bufs[i], tx.sizes[i], &m); pkt != nil {
			pkts = append(pkts, pkt)
		}
	}
	if len(pkts) > 0 {
		s.Send(pkts)
	}
	clear(pkts)
}

// encap makes the transmit decisions for one frame (at buf[Headroom:]) and
// wraps it; nil means dropped (and counted). m is the batch's last MAC table
// lookup, in st's table.
func (p *Port) encap(st *portState, fwd bool, buf []byte, n int, m *macMemo) []byte {
	if n >= 14 && n < encap.MinFrameLen {
		// The kernel's netdev pads a short frame with zeros before anything
		// looks at it (opa_netdev_start_xmit): the counters and the choices
		// below see the 60 bytes the packet carries. Every transmit buffer
		// has room for them (txBufLen).
		clear(buf[encap.Headroom+n : encap.Headroom+encap.MinFrameLen])
		n = encap.MinFrameLen
	}
	c := &p.Counters
	c.TxPackets.Add(1)
	c.TxBytes.Add(uint64(n) + 4)
	c.TxLen[lenBucket(n)].Add(1)
	if !fwd {
		c.TxDropState.Add(1)
		return nil
	}
	if n < 14 || n > st.maxFrame {
		// Too short, or longer than eth_mtu allows (cut to the buffer or
		// not); SetPort keeps maxFrame within encap.MaxFrameLen.
		c.TxFifoErrors.Add(1)
		return nil
	}
	frame := buf[encap.Headroom : encap.Headroom+n]
	fi := encap.ParseFrame(frame)
	entropy := encap.FoldEntropy(encap.FlowHash(frame, &fi))
	dlid := st.dlid(frame, &fi, entropy, m)
	if dlid == 0 {
		c.TxDLIDZero.Add(1)
		return nil
	}
	params := st.params
	params.DLID = dlid
	params.SC = st.cfg.Port.SC.SC(&fi)
	params.RC = encap.SelectRC(st.cfg.VESW.RC, &fi)
	params.Entropy = uint16(entropy)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, n, &params)
	if err != nil {
		c.TxFifoErrors.Add(1)
		return nil
	}
	if fi.Multicast {
		c.TxMcastBcast.Add(1)
	} else {
		c.TxUnicast.Add(1)
	}
	if fi.Tagged {
		c.TxVLAN.Add(1)
	} else {
		c.TxUntagged.Add(1)
	}
	return pkt
}

// isVLAN reports an in-band 802.1Q or 802.1ad tag.
func isVLAN(frame []byte) bool {
	et := binary.BigEndian.Uint16(frame[12:])
	return et == encap.EtherTypeVLAN || et == encap.EtherTypeQinQ
}
