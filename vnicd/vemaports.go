package vnicd

import (
	"maps"
	"slices"
	"sync"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vema/node"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// EnginePorts is the VEMA agent's node.PortController on top of an Engine:
// it keeps what the kernel's adapter keeps beyond the engine's PortConfig
// (reserved fields, the PCP->VL maps, the MAC table with masks, side bits
// and digest, the gen counts) and converts to PortConfig for the engine.
type EnginePorts struct {
	e *engine.Engine
	// netdev names, places and addresses the netdev of a vport the agent
	// creates (from the config; IfName "" means vnic<vport>).
	netdev func(vport uint8) engine.NetdevConfig

	mu      sync.Mutex
	st      map[uint8]*vportState
	lastErr error // the engine's last refusal, for the static-mode caller

	// onSet, when set before the agent runs, is told of every applied
	// VESWPortInfo Set (the daemon follows claimed ports with it). It must
	// not block.
	onSet func(vport uint8)
}

func (c *EnginePorts) takeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.lastErr
	c.lastErr = nil
	return err
}

func (c *EnginePorts) setErr(err error) error {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
	return err
}

type vportState struct {
	info  vema.VESWPortInfo
	table node.MACTable
	mac   [6]byte // the netdev's MAC as last seen
	ucGen uint16
	mcGen uint16 // changes of the netdev's multicast list
	// applying are the base_mac_addr values of VESWPortInfo Sets being
	// applied: the netdev reports the MAC change (its link watcher) while
	// SetPort is still running, before info holds the new value.
	applying [][6]byte
	// owed are base_mac_addr values a Set put on the netdev whose change
	// the link watcher had not yet reported when SetPort returned, oldest
	// first: that report is the EM's change, not the user's.
	owed [][6]byte
}

// maxOwedMACs bounds vportState.owed: a report that never comes (SetMAC
// failed, logged) is forgotten after this many later Sets.
const maxOwedMACs = 4

var _ node.PortController = (*EnginePorts)(nil)

// NewEnginePorts returns the controller of e's ports.
func NewEnginePorts(e *engine.Engine, netdev func(vport uint8) engine.NetdevConfig) *EnginePorts {
	if netdev == nil {
		netdev = func(uint8) engine.NetdevConfig { return engine.NetdevConfig{} }
	}
	return &EnginePorts{e: e, netdev: netdev, st: map[uint8]*vportState{}}
}

// PortConfigFrom converts a VESWPortInfo into the engine's PortConfig: LIDs
// in their 16B form (a 16B value stays as it is, as the kernel's cut to 24
// bits keeps it; a 32-bit multicast LID is converted).
func PortConfigFrom(v *vema.VESWPortInfo) engine.PortConfig {
	var c engine.PortConfig
	w, p := &v.VESW, &v.VPort
	c.VESW = engine.VESWConfig{FabricID: w.FabricID, VESWID: w.VESWID, DefPortMask: w.DefPortMask, PKey: w.PKey,
		McastDLID: w.UMcastDLID.To16B(), RC: w.RC, EthMTU: w.EthMTU}
	for i, l := range w.UUcastDLID {
		c.VESW.UcastDLID[i] = l.To16B()
	}
	c.Port = engine.VPortConfig{PortNum: p.PortNum, BaseMAC: p.BaseMACAddr, ConfigState: p.ConfigState,
		EncapSLID: p.EncapSLID.To16B(),
		SC:        encap.SCMap{PCPToSCUC: p.PCPToSCUC, PCPToSCMC: p.PCPToSCMC, NonVLANUC: p.NonVLANSCUC, NonVLANMC: p.NonVLANSCMC},
		PCPToVLUC: p.PCPToVLUC, PCPToVLMC: p.PCPToVLMC, NonVLANVL: [2]uint8{p.NonVLANVLUC, p.NonVLANVLMC}}
	return c
}

// VESWPortInfoFrom is the Set a config's PortConfig makes (static mode).
func VESWPortInfoFrom(c *engine.PortConfig) vema.VESWPortInfo {
	v := vema.PowerOnVESWPortInfo()
	w, p := &v.VESW, &v.VPort
	w.FabricID, w.VESWID, w.DefPortMask, w.PKey = c.VESW.FabricID, c.VESW.VESWID, c.VESW.DefPortMask, c.VESW.PKey
	w.UMcastDLID, w.RC, w.EthMTU = encap.LID(c.VESW.McastDLID), c.VESW.RC, c.VESW.EthMTU // 16B form: the kernel cuts to 24 bits
	for i, l := range c.VESW.UcastDLID {
		w.UUcastDLID[i] = encap.LID(l)
	}
	p.PortNum, p.BaseMACAddr, p.ConfigState, p.EncapSLID = c.Port.PortNum, c.Port.BaseMAC, c.Port.ConfigState, encap.LID(c.Port.EncapSLID)
	p.PCPToSCUC, p.PCPToSCMC, p.NonVLANSCUC, p.NonVLANSCMC = c.Port.SC.PCPToSCUC, c.Port.SC.PCPToSCMC, c.Port.SC.NonVLANUC, c.Port.SC.NonVLANMC
	p.PCPToVLUC, p.PCPToVLMC, p.NonVLANVLUC, p.NonVLANVLMC = c.Port.PCPToVLUC, c.Port.PCPToVLMC, c.Port.NonVLANVL[0], c.Port.NonVLANVL[1]
	return v
}

// macEntries is the engine's view of a VEMA MAC table: source-MAC entries
// left out (they never choose a DLID), in index order.
func macEntries(t node.MACTable) []engine.MACEntry {
	out := []engine.MACEntry{}
	for _, idx := range slices.Sorted(maps.Keys(t.Entries)) {
		e := t.Entries[idx]
		if e.IsSourceMAC() {
			continue
		}
		out = append(out, engine.MACEntry{MAC: e.MAC, DLID: e.DLID()})
	}
	return out
}

func (c *EnginePorts) VESWPortInfo(vport uint8) (vema.VESWPortInfo, bool) {
	p := c.e.Port(vport)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st[vport]
	if p == nil || s == nil {
		return vema.VESWPortInfo{}, false
	}
	info := s.info
	info.VPort.OperState, info.VPort.EthLinkStatus = vema.StateDropAll, vema.EthLinkDown
	if p.OperState() == engine.StateForwarding {
		info.VPort.OperState, info.VPort.EthLinkStatus = vema.StateForwarding, vema.EthLinkUp
	}
	info.VPort.MaxMACTblEnt, info.VPort.MaxSMACEnt = vema.MACTableMaxEntries, vema.MaxSMACEntries
	info.VPort.MACTblDigest = s.table.Digest
	info.VPort.UCMACsGenCount, info.VPort.MCMACsGenCount = s.ucGen, s.mcGen
	return info, true
}

func (c *EnginePorts) SetVESWPortInfo(vport uint8, info *vema.VESWPortInfo) error {
	c.mu.Lock()
	s := c.st[vport]
	var macs []engine.MACEntry
	if s != nil {
		macs = macEntries(s.table)
		s.applying = append(s.applying, info.VPort.BaseMACAddr)
	}
	c.mu.Unlock()
	err := c.e.SetPort(vport, PortConfigFrom(info), c.netdev(vport), macs)
	c.mu.Lock()
	if s != nil {
		base := info.VPort.BaseMACAddr
		if i := slices.Index(s.applying, base); i >= 0 {
			s.applying = slices.Delete(s.applying, i, i+1)
		}
		// SetPort set the netdev's MAC when the base changed to one not
		// zero (engine.SetPort); if the watcher has not reported it yet,
		// its report is owed. Taken with the removal from applying, so no
		// report falls between the two.
		if err == nil && base != ([6]byte{}) && s.info.VPort.BaseMACAddr != base && s.mac != base {
			s.owed = append(s.owed, base)
			if len(s.owed) > maxOwedMACs {
				s.owed = slices.Delete(s.owed, 0, len(s.owed)-maxOwedMACs)
			}
		}
	}
	c.mu.Unlock()
	if err != nil {
		return c.setErr(err)
	}
	c.mu.Lock()
	if s = c.st[vport]; s == nil {
		s = &vportState{mac: info.VPort.BaseMACAddr}
		c.st[vport] = s
	}
	s.info = *info
	c.mu.Unlock()
	if c.onSet != nil {
		c.onSet(vport)
	}
	return nil
}

func (c *EnginePorts) MACTable(vport uint8) (node.MACTable, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st[vport]
	if s == nil || c.e.Port(vport) == nil {
		return node.MACTable{}, false
	}
	return node.MACTable{Entries: maps.Clone(s.table.Entries), Digest: s.table.Digest}, true
}

func (c *EnginePorts) SetMACTable(vport uint8, t node.MACTable) error {
	c.mu.Lock()
	s := c.st[vport]
	if s == nil {
		c.mu.Unlock()
		return nil
	}
	info := s.info
	c.mu.Unlock()
	if err := c.e.SetPort(vport, PortConfigFrom(&info), c.netdev(vport), macEntries(t)); err != nil {
		return c.setErr(err) // the table the engine runs stays the one Get reports
	}
	c.mu.Lock()
	if c.st[vport] == s {
		s.table = t
	}
	c.mu.Unlock()
	return nil
}

// IfaceMACs reports the netdev's MAC as its dev_addrs (vnicd does not follow
// a secondary unicast list, which reads as empty), and as the multicast list
// the netdev's own, read now (mcast.go). The generation counts are those of
// the changes vnicd saw: the kernel's counted every ndo_set_rx_mode call,
// which a TAP's owner does not see.
func (c *EnginePorts) IfaceMACs(vport uint8, mcast bool) (node.IfaceMACList, bool) {
	var macs [][6]byte
	if mcast {
		p := c.e.Port(vport)
		if p == nil {
			return node.IfaceMACList{}, false
		}
		var err error
		if macs, err = p.Netdev().McastMACs(); err != nil {
			return node.IfaceMACList{}, false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st[vport]
	if s == nil {
		return node.IfaceMACList{}, false
	}
	if mcast {
		return node.IfaceMACList{UC: macs, GenCount: s.mcGen}, true
	}
	return node.IfaceMACList{DevAddrs: [][6]byte{s.mac}, GenCount: s.ucGen}, true
}

// Counters maps the port's counters onto the VEMA counter MADs
// (docs/linux-compat.md §4.8).
func (c *EnginePorts) Counters(vport uint8) (vema.SummaryCounters, vema.ErrorCounters, bool) {
	p := c.e.Port(vport)
	if p == nil {
		return vema.SummaryCounters{}, vema.ErrorCounters{}, false
	}
	k := &p.Counters
	txErr := k.TxFifoErrors.Load() + k.TxCarrierErrors.Load() + k.TxDropState.Load() + k.TxDLIDZero.Load()
	rxErr := k.RxFifoErrors.Load() + k.RxBadVESWID.Load() + k.RxDropState.Load() + k.RxOversize.Load() +
		k.RxRunt.Load() + k.RxBadPKey.Load()
	s := vema.SummaryCounters{TxErrors: txErr, RxErrors: rxErr,
		TxPackets: k.TxPackets.Load(), RxPackets: k.RxPackets.Load(), TxBytes: k.TxBytes.Load(), RxBytes: k.RxBytes.Load(),
		TxUnicast: k.TxUnicast.Load(), TxMcastBcast: k.TxMcastBcast.Load(), TxUntagged: k.TxUntagged.Load(), TxVLAN: k.TxVLAN.Load(),
		Tx64: k.TxLen[0].Load(), Tx65To127: k.TxLen[1].Load(), Tx128To255: k.TxLen[2].Load(), Tx256To511: k.TxLen[3].Load(),
		Tx512To1023: k.TxLen[4].Load(), Tx1024To1518: k.TxLen[5].Load(), Tx1519Max: k.TxLen[6].Load(),
		RxUnicast: k.RxUnicast.Load(), RxMcastBcast: k.RxMcastBcast.Load(), RxUntagged: k.RxUntagged.Load(), RxVLAN: k.RxVLAN.Load(),
		Rx64: k.RxLen[0].Load(), Rx65To127: k.RxLen[1].Load(), Rx128To255: k.RxLen[2].Load(), Rx256To511: k.RxLen[3].Load(),
		Rx512To1023: k.RxLen[4].Load(), Rx1024To1518: k.RxLen[5].Load(), Rx1519Max: k.RxLen[6].Load()}
	e := vema.ErrorCounters{TxErrors: txErr, RxErrors: rxErr, TxDLIDZero: k.TxDLIDZero.Load(),
		TxLogic: k.TxFifoErrors.Load() + k.TxCarrierErrors.Load(), TxDropState: k.TxDropState.Load(),
		RxBadVESWID: k.RxBadVESWID.Load(), RxRunt: k.RxRunt.Load(), RxOversize: k.RxOversize.Load(),
		RxDropState: k.RxDropState.Load(), RxLogic: k.RxFifoErrors.Load()}
	return s, e, true
}

// netdevMcast counts a change of the netdev's multicast list (its link
// watcher's readings differ; the first reading is none) in
// mc_macs_gen_count and reports whether the trap with opcode 2 is due: as
// the driver after ndo_set_rx_mode (docs/linux-compat.md §4.9), whenever the
// vport exists.
func (c *EnginePorts) netdevMcast(vport uint8) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st[vport]
	if s == nil {
		return false
	}
	s.mcGen++
	return true
}

// netdevMAC records the netdev's MAC; it reports whether the change is the
// user's (a trap with opcode 1 is due): not the first reading, and not the
// report of a base_mac_addr a VESWPortInfo Set is applying or has applied
// (the kernel sends no trap for the EM's change, and one for every
// ndo_set_mac_address, docs/linux-compat.md §4.9: a user who sets the MAC
// back to the base_mac_addr is trapped too). A user change bumps
// uc_macs_gen_count.
func (c *EnginePorts) netdevMAC(vport uint8, mac [6]byte, initial bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st[vport]
	if s == nil || s.mac == mac {
		if s != nil {
			s.mac = mac
		}
		return false
	}
	s.mac = mac
	if initial || slices.Contains(s.applying, mac) {
		return false
	}
	if i := slices.Index(s.owed, mac); i >= 0 {
		s.owed = slices.Delete(s.owed, 0, i+1) // reports come in order: older ones are past
		return false
	}
	s.ucGen++
	return true
}
