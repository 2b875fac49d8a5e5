// Package nodetest has test doubles for package node: an in-memory
// node.PortController that behaves as the kernel's opa_vnic adapters do, so
// that agent and manager tests run without netdevs.
package nodetest

import (
	"maps"
	"sync"

	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vema/node"
)

// Port is one vport of Ports: what the agent stored, plus the netdev state a
// test sets (LinkUp, MAC lists, counters).
type Port struct {
	Info     vema.VESWPortInfo
	Table    node.MACTable
	LinkUp   bool // the netdev is administratively up
	UC       node.IfaceMACList
	MC       node.IfaceMACList
	Summary  vema.SummaryCounters
	Errors   vema.ErrorCounters
	SetCount int // SetVESWPortInfo calls
}

// Ports is an in-memory node.PortController. A vport created by a Set starts
// with its netdev up. oper_state / eth_link_status follow the kernel:
// FORWARDING / UP iff config_state is FORWARDING and the netdev is up.
// SetErr, when non-nil, makes SetVESWPortInfo fail.
type Ports struct {
	mu     sync.Mutex
	ports  map[uint8]*Port
	SetErr error
}

var _ node.PortController = (*Ports)(nil)

// NewPorts returns an empty controller.
func NewPorts() *Ports { return &Ports{ports: map[uint8]*Port{}} }

// Port returns vport's state for inspection and change (nil when missing).
// Hold no reference across agent calls from other goroutines.
func (p *Ports) Port(vport uint8) *Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ports[vport]
}

func (p *Ports) VESWPortInfo(vport uint8) (vema.VESWPortInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		return vema.VESWPortInfo{}, false
	}
	info := q.Info
	info.VPort.OperState, info.VPort.EthLinkStatus = vema.StateDropAll, vema.EthLinkDown
	if info.VPort.ConfigState == vema.StateForwarding && q.LinkUp {
		info.VPort.OperState, info.VPort.EthLinkStatus = vema.StateForwarding, vema.EthLinkUp
	}
	info.VPort.MACTblDigest = q.Table.Digest
	info.VPort.UCMACsGenCount = q.UC.GenCount
	info.VPort.MCMACsGenCount = q.MC.GenCount
	return info, true
}

func (p *Ports) SetVESWPortInfo(vport uint8, info *vema.VESWPortInfo) error {
	if p.SetErr != nil {
		return p.SetErr
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		q = &Port{LinkUp: true}
		p.ports[vport] = q
	}
	q.Info = *info
	q.SetCount++
	if len(q.UC.DevAddrs) == 0 {
		q.UC.DevAddrs = [][6]byte{info.VPort.BaseMACAddr}
	} else if q.UC.DevAddrs[0] != info.VPort.BaseMACAddr {
		q.UC.DevAddrs[0] = info.VPort.BaseMACAddr // the EM's MAC becomes the netdev's, no gen count
	}
	return nil
}

func (p *Ports) MACTable(vport uint8) (node.MACTable, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		return node.MACTable{}, false
	}
	return node.MACTable{Entries: maps.Clone(q.Table.Entries), Digest: q.Table.Digest}, true
}

func (p *Ports) SetMACTable(vport uint8, t node.MACTable) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		return nil
	}
	q.Table = t
	return nil
}

func (p *Ports) IfaceMACs(vport uint8, mcast bool) (node.IfaceMACList, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		return node.IfaceMACList{}, false
	}
	if mcast {
		return q.MC, true
	}
	return q.UC, true
}

func (p *Ports) Counters(vport uint8) (vema.SummaryCounters, vema.ErrorCounters, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ports[vport]
	if q == nil {
		return vema.SummaryCounters{}, vema.ErrorCounters{}, false
	}
	return q.Summary, q.Errors, true
}
