package vnicd

import (
	"net/netip"
	"time"

	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Hooks for the external tests (package vnicd_test), which need taptest and
// so cannot live in package vnicd.

// EMSetPort applies pc to vport through the node's VEMA agent, as a
// VESWPortInfo Set from the EM does (it makes the port if there is none).
func (d *Daemon) EMSetPort(vport uint8, pc engine.PortConfig) error {
	return d.mgmt.configurePort(vport, &pc, nil)
}

// EMDeleteVESW applies a DeleteVESW of vport through the agent, as the EM
// sends it for a member removed from the fabric config.
func (d *Daemon) EMDeleteVESW(vport uint8) error {
	var req vema.MAD
	req.BaseVersion, req.MgmtClass, req.ClassVersion, req.Method = vema.BaseVersion, vema.ClassVEMA, vema.VEMAClassVersion, vema.MethodSet
	req.OUI = vema.IntelOUI
	req.AttrID, req.AttrMod = vema.AttrDeleteVESW, uint32(vport)
	req.TID = d.mgmt.tid.Add(1)
	return d.mgmt.local(&req)
}

// SetStartRemoveTAP replaces what deletes a netdev left in a namespace for
// the daemons NewDaemon makes from now on (their start-up included); nil
// restores tap.RemovePersistent.
func SetStartRemoveTAP(f func(netns, name string, match func(alias string) bool) error) {
	if f == nil {
		f = tap.RemovePersistent
	}
	startRemoveTAP = f
}

// RuntimePathOf is the runtime state file of a control socket.
func RuntimePathOf(socket string) string { return RuntimePath(socket) }

// HeardFromSM makes the node look joined (Mgmt.joined): the SM gave it lid
// and was heard just now.
func (d *Daemon) HeardFromSM(lid uint32) { d.mgmt.HeardFromSM(lid) }

// WatchAddr makes m follow its source address toward the FM as a node
// listening on the wildcard address does, with src and local in place of
// the kernel's route lookup and the host's address list. Call it before
// m.Run.
func (m *Mgmt) WatchAddr(src func(netip.AddrPort) (netip.Addr, error), local func(netip.Addr) bool) {
	m.watch = &addrWatch{fm: m.cfg.FM, src: src, local: local}
}

// HeardFromSM makes the node look joined: the SM gave it lid and was heard
// just now.
func (m *Mgmt) HeardFromSM(lid uint32) {
	m.hfi.SetLID(lid)
	m.lastSM.Store(time.Now().UnixNano())
}

// NetdevPlaced tells the daemon that vport's netdev is now ifname in netns,
// renamed or moved by hand, as the port's link watcher does (EventPlace).
func (d *Daemon) NetdevPlaced(vport uint8, ifname, netns string) {
	d.portPlaced(engine.PortEvent{VPort: vport, Kind: engine.EventPlace, IfName: ifname, NetNS: netns})
}

// AutoQueues is what node.queues "auto" picks for cpus CPUs and underlay
// device dev, with merging in place of the search for a device with GRO
// on; MergingBelow is that search, DeviceGRO its ethtool query of one
// device; ResolveQueues is the daemon's choice for cfg on this machine.
var (
	AutoQueues    = autoQueues
	MergingBelow  = mergingBelow
	DeviceGRO     = deviceGRO
	ResolveQueues = resolveQueues
	StartProcs    = startProcs
)
