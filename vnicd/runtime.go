package vnicd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Runtime VNICs: the control commands vnic_add, vnic_del and vnic_gc create
// and remove VNICs while vnicd runs (for containers: cmd/vnic-cni). Their
// arguments are checked by the same code as a vnics entry of the config
// (checker.buildVNIC) and applied through the node's own VEMA agent, as the
// static config is. In managed mode the EM owns the ports, and the same
// commands claim one of them for a container instead (claims.go).
//
// Restarts: a runtime VNIC survives vnicd as a claim does (claims.go), with
// the same machinery. Its TAP is persistent and carries the claim's alias
// (claimTag), so a vnicd that stops (SIGTERM, as for claims) or crashes
// leaves it where it is, with its addresses and routes, carrier off. The
// runtime VNICs (vnic_add's arguments as accepted, the vport, the owner and
// the namespace's identity) are kept in a state file beside the control
// socket (RuntimePath). At start, after the config's VNICs, each one whose
// namespace is still there (the same one) is added again through vnic_add's
// checks with its vport, and its TAP is taken over where it is
// (DeviceSpec.Attach). One whose namespace is gone is dropped (its TAP went
// with the namespace); one that no longer passes the checks (the config
// changed) or whose TAP cannot be taken over (it was deleted) is dropped and
// its TAP, if any, removed. vnic_del and vnic_gc delete the TAP and the
// entry. The entry is saved before the TAP is made persistent, so a crash
// in between leaves an entry without a TAP (dropped at the next start),
// never a persistent TAP without an entry.

// runtimeVNIC is a VNIC made by vnic_add.
type runtimeVNIC struct {
	netdev engine.NetdevConfig
	owner  string
	entry  RuntimeEntry // as the state file keeps it
	// restoring: the device factory takes the persistent TAP of the last
	// run over instead of making one (runtimeFactory).
	restoring bool
}

// runtimeVNICs is the daemon's record of the VNICs vnic_add made.
type runtimeVNICs struct {
	op sync.Mutex // serializes vnic_add, vnic_del and vnic_gc
	mu sync.Mutex // guards m; taken inside the agent's Set (netdevFor)
	m  map[uint8]runtimeVNIC

	file *stateFile // RuntimePath; never nil (Path "" for none)
	node string
}

// RuntimeEntry is a runtime VNIC as the state file keeps it.
type RuntimeEntry struct {
	VPort uint8 `json:"vport"`
	// Args are vnic_add's arguments as it accepted them; a restarted vnicd
	// checks them again, with VPort.
	Args  json.RawMessage `json:"args"`
	Owner string          `json:"owner,omitempty"`
	// NetNS and IfName are where the TAP is (NetNS as the caller named it;
	// "" for vnicd's own namespace).
	NetNS  string `json:"netns,omitempty"`
	IfName string `json:"ifname"`
	// NSDev and NSIno identify the namespace (its nsfs inode), as a
	// claim's do.
	NSDev uint64 `json:"ns_dev,omitempty"`
	NSIno uint64 `json:"ns_ino,omitempty"`
}

// runtimeVersion is the runtime state file's format.
const runtimeVersion = 1

// runtimeFile is the runtime state file's content.
type runtimeFile struct {
	Version int            `json:"version"`
	Node    string         `json:"node"`
	VNICs   []RuntimeEntry `json:"vnics"`
}

func (f *runtimeFile) FileVersion() int { return f.Version }

// RuntimePath is the state file of a control socket's runtime VNICs (static
// mode): the socket's path with ".runtime.json" for its ".sock" suffix, in
// the same directory. An abstract socket ("@name") has none: runtime VNICs
// then live in memory only.
func RuntimePath(socket string) string { return statePath(socket, ".runtime.json") }

// save writes the runtime VNICs to the state file, if there is one.
func (r *runtimeVNICs) save() error {
	return r.file.Save(func() any {
		r.mu.Lock()
		f := runtimeFile{Version: runtimeVersion, Node: r.node, VNICs: []RuntimeEntry{}}
		for _, v := range r.m {
			f.VNICs = append(f.VNICs, v.entry)
		}
		r.mu.Unlock()
		slices.SortFunc(f.VNICs, func(a, b RuntimeEntry) int { return int(a.VPort) - int(b.VPort) })
		return &f
	})
}

// loadRuntime reads a runtime state file; a missing file is none.
func loadRuntime(path string) ([]RuntimeEntry, error) {
	var f runtimeFile
	if _, err := runtimeState(path).Load(&f); err != nil {
		return nil, err
	}
	return compactArgs(f.VNICs), nil
}

// parseRuntime decodes a runtime state file's bytes (path is for the
// errors). The arguments are checked when they are used.
func parseRuntime(b []byte, path string) ([]RuntimeEntry, error) {
	var f runtimeFile
	if err := runtimeState(path).Decode(b, &f); err != nil {
		return nil, err
	}
	return compactArgs(f.VNICs), nil
}

// compactArgs compacts the entries' arguments, as vnic_add keeps them.
func compactArgs(es []RuntimeEntry) []RuntimeEntry {
	for i, e := range es {
		var c bytes.Buffer
		if err := json.Compact(&c, e.Args); err == nil {
			es[i].Args = c.Bytes()
		}
	}
	return es
}

func (r *runtimeVNICs) get(vport uint8) (runtimeVNIC, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[vport]
	return v, ok
}

// update changes vport's runtime VNIC with f, if there is one, and
// reports whether there was.
func (r *runtimeVNICs) update(vport uint8, f func(*runtimeVNIC)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[vport]
	if ok {
		f(&v)
		r.m[vport] = v
	}
	return ok
}

func (r *runtimeVNICs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

func (r *runtimeVNICs) set(vport uint8, v *runtimeVNIC) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[uint8]runtimeVNIC{}
	}
	if v == nil {
		delete(r.m, vport)
	} else {
		r.m[vport] = *v
	}
}

// netdevFor is the agent's netdev of vport: a runtime VNIC's, else the
// config's.
func (d *Daemon) netdevFor(vport uint8) engine.NetdevConfig {
	if v, ok := d.rt.get(vport); ok {
		return v.netdev
	}
	return d.cfg.NetdevFor(vport)
}

func (d *Daemon) registerRuntime() {
	d.ctl.HandleDeadline(ctl.CmdVNICAdd, d.vnicAdd)
	d.ctl.Handle(ctl.CmdVNICDel, d.vnicDel)
	d.ctl.Handle(ctl.CmdVNICGC, d.vnicGC)
}

// owner is the owner tag of vport: its runtime VNIC's or its claim's.
func (d *Daemon) owner(vport uint8) string {
	if v, ok := d.rt.get(vport); ok {
		return v.owner
	}
	if c, _, ok := d.claims.get(vport); ok {
		return c.Owner
	}
	return ""
}

// decorate adds to a port's status what the daemon knows beyond the
// engine: its owner, and the addresses a claim set.
func (d *Daemon) decorate(s *ctl.VNICStatus) {
	s.Owner = d.owner(s.VPort)
	if c, pending, ok := d.claims.get(s.VPort); ok && !pending {
		s.Addresses = c.Addresses
	}
}

// status describes vport with its owner.
func (d *Daemon) status(vport uint8) (ctl.VNICStatus, bool) {
	for _, s := range VNICStatuses(d.engine) {
		if s.VPort == vport {
			d.decorate(&s)
			return s, true
		}
	}
	return ctl.VNICStatus{}, false
}

// vnicAdd is vnic_add. Its turn may come after other requests have held
// the daemon (rt.op) for a while: with too little of its time left it does
// nothing (ErrLate), since a VNIC made after its client gave up would stay
// with nobody knowing of it.
func (d *Daemon) vnicAdd(deadline time.Time, args json.RawMessage) (any, error) {
	if d.mgmt.Managed() {
		return d.claimAdd(deadline, args)
	}
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	if err := ctl.StartBy(deadline); err != nil {
		return nil, err
	}
	s, err := d.addRuntime(args, nil)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// errTakeOver marks addRuntime's failures to take a saved runtime VNIC's
// TAP over (rather than its arguments failing the checks).
var errTakeOver = errors.New("cannot take its TAP over")

// addRuntime is vnic_add in static mode; d.rt.op is held. With saved (at
// start), it adds the runtime VNIC of the last run again, with the same
// checks, on its vport, taking its persistent TAP over.
func (d *Daemon) addRuntime(args json.RawMessage, saved *RuntimeEntry) (ctl.VNICStatus, error) {
	inUse := func(vport uint8) bool {
		if d.engine.Port(vport) != nil {
			return true
		}
		_, ok := d.rt.get(vport)
		return ok
	}
	full := false // every vport is in use: not the arguments' fault
	v, owner, err := d.cfg.VNICFromArgs(args, func() (uint8, bool) {
		if saved != nil {
			return saved.VPort, true
		}
		for i := 0; i <= config.MaxVPort; i++ {
			if !inUse(uint8(i)) && !slices.ContainsFunc(d.cfg.VNICs, func(c config.VNICConfig) bool { return c.VPort == uint8(i) }) {
				return uint8(i), true
			}
		}
		full = true
		return 0, false
	})
	if err != nil && !full {
		return ctl.VNICStatus{}, ctl.WithCode(ctl.CodeInvalidArgument, err)
	}
	if err != nil {
		return ctl.VNICStatus{}, err
	}
	if saved != nil && saved.IfName != "" {
		// Where the TAP was left: renamed or moved by hand, it is not
		// where the arguments put it (portPlaced).
		v.Netdev.IfName, v.Netdev.NetNS = saved.IfName, saved.NetNS
	}
	if inUse(v.VPort) {
		return ctl.VNICStatus{}, fmt.Errorf("vport: vport %d is in use", v.VPort)
	}
	if saved != nil && v.VPort != saved.VPort {
		return ctl.VNICStatus{}, fmt.Errorf("vport: the arguments name vport %d, the state file %d", v.VPort, saved.VPort)
	}
	key := config.NetdevKey(v.Netdev.NetNS, v.Netdev.IfName)
	for _, p := range d.engine.Ports() {
		if config.NetdevKey(p.NetNS(), p.Netdev().Name()) == key {
			return ctl.VNICStatus{}, fmt.Errorf("ifname: %q is vport %d's, in the same network namespace", v.Netdev.IfName, p.VPort())
		}
		if c := p.Config().VESW.VESWID & encap.VESWIDMask; c == v.Port.VESW.VESWID&encap.VESWIDMask {
			return ctl.VNICStatus{}, fmt.Errorf("vesw: vesw %d is already used by vport %d on this node (one port per vesw and node)", c, p.VPort())
		}
	}
	if owner != "" {
		for _, vp := range d.owned(func(o string) bool { return o == owner }) {
			return ctl.VNICStatus{}, fmt.Errorf("owner: %q already owns vport %d", owner, vp)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return ctl.VNICStatus{}, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %w", err)
	}
	rv := &runtimeVNIC{netdev: v.Netdev, owner: owner, restoring: saved != nil,
		entry: RuntimeEntry{VPort: v.VPort, Args: compact.Bytes(), Owner: owner, NetNS: v.Netdev.NetNS, IfName: v.Netdev.IfName}}
	if saved != nil {
		rv.entry.NSDev, rv.entry.NSIno = saved.NSDev, saved.NSIno
	}
	d.rt.set(v.VPort, rv)
	recorded := false // the state file names the VNIC
	undo := func(cause error) (ctl.VNICStatus, error) {
		d.rt.set(v.VPort, nil)
		if p := d.engine.Port(v.VPort); p != nil { // made, then a later step failed
			_ = d.setPersist(p, false)
			_ = d.removePort(v.VPort)
		}
		if recorded {
			if err := d.rt.save(); err != nil {
				cause = errors.Join(cause, fmt.Errorf("removing it from the state file: %w", err))
			}
		}
		return ctl.VNICStatus{}, cause
	}
	if err := d.mgmt.configurePort(v.VPort, &v.Port, v.MACTable); err != nil {
		if saved != nil {
			err = fmt.Errorf("%w: %w", errTakeOver, err)
		}
		return undo(err)
	}
	p := d.engine.Port(v.VPort)
	if p == nil {
		return undo(fmt.Errorf("vport %d went away", v.VPort))
	}
	rv.restoring = false
	rv.entry.IfName = p.Netdev().Name()
	if saved == nil && v.Netdev.NetNS != "" {
		// The TAP's making opened the namespace: it exists.
		if rv.entry.NSDev, rv.entry.NSIno, err = netnsID(v.Netdev.NetNS); err != nil {
			// Kept with no identity: a restarted vnicd drops it.
			d.log.Warn("cannot identify the runtime VNIC's namespace; it will not survive a vnicd restart",
				zap.Uint8("vnic", v.VPort), zap.String("netns", v.Netdev.NetNS), zap.Error(err))
		}
	}
	// The state file names the VNIC before its TAP is made persistent: a
	// vnicd that dies in between leaves an entry whose TAP died with it (the
	// next start fails to take it over and drops the entry), never a
	// persistent TAP that no entry names, which no start would take over
	// or remove. A restored VNIC is in the state file of the last run
	// already, which loadRuntimeOnStart rewrites once every entry has been
	// tried: a save here would drop those not tried yet.
	d.rt.set(v.VPort, rv)
	if saved == nil {
		if err := d.rt.save(); err != nil {
			return undo(err)
		}
		recorded = true
	}
	if err := d.setPersist(p, true); err != nil {
		return undo(err)
	}
	if saved == nil {
		d.log.Info("runtime VNIC added", zap.Uint8("vnic", v.VPort), zap.String("ifname", v.Netdev.IfName),
			zap.String("netns", v.Netdev.NetNS), zap.Uint16("vesw", uint16(v.Port.VESW.VESWID)), zap.String("owner", owner))
	}
	s, _ := d.status(v.VPort)
	return s, nil
}

// runtimeFactory wraps the engine's device factory in static mode: the
// device of a runtime VNIC being restored at start takes the persistent TAP
// of the last run over (DeviceSpec.Attach) instead of making a new one.
func (d *Daemon) runtimeFactory(base engine.DeviceFactory) engine.DeviceFactory {
	return func(s engine.DeviceSpec) (tap.Netdev, error) {
		if v, ok := d.rt.get(s.VPort); ok && v.restoring {
			s.Attach = d.claimTag(s.VPort)
		}
		return base(s)
	}
}

// readRuntimeOnStart reads the runtime VNICs of the last run (none from a
// state file that cannot be read: rtReadErr) and drops, removing its
// TAP, each one whose interface the config's VNICs now name: it runs before
// those are made, which would otherwise clash with the persistent TAP. It
// returns the others and how many it dropped.
func (d *Daemon) readRuntimeOnStart() ([]RuntimeEntry, int) {
	es, err := loadRuntime(d.rt.file.Path)
	if err != nil {
		// Warned about, and the file set aside, once the control socket
		// is this daemon's: a second vnicd on the socket of a running one
		// must not move the running one's file.
		d.rtReadErr = err
		return nil, 0
	}
	var out []RuntimeEntry
	for _, e := range es {
		i := slices.IndexFunc(d.cfg.VNICs, func(v config.VNICConfig) bool {
			nd := d.cfg.NetdevFor(v.VPort)
			return e.IfName != "" && config.NetdevKey(nd.NetNS, nd.IfName) == config.NetdevKey(e.NetNS, e.IfName)
		})
		if i < 0 {
			out = append(out, e)
			continue
		}
		log := d.log.With(zap.Uint8("vnic", e.VPort), zap.String("owner", e.Owner), zap.String("ifname", e.IfName),
			zap.String("netns", e.NetNS))
		log.Warn("runtime VNIC of the last run dropped: the config's VNIC of vport now has its interface",
			zap.Uint8("config_vport", d.cfg.VNICs[i].VPort))
		tag := d.claimTag(e.VPort)
		if err := d.removeTAP(e.NetNS, e.IfName, func(a string) bool { return a == tag }); err != nil {
			log.Warn("cannot remove its netdev", zap.Error(err))
		}
	}
	return out, len(es) - len(out)
}

// loadRuntimeOnStart adds the runtime VNICs of the last run again (after
// the config's VNICs): one whose namespace is gone (or is another one now)
// is dropped, its TAP gone with the namespace; one that fails vnic_add's
// checks against the config now, or whose TAP cannot be taken over, is
// dropped and its TAP removed. dropped counts those readRuntimeOnStart
// dropped.
func (d *Daemon) loadRuntimeOnStart(es []RuntimeEntry, dropped int) {
	if len(es)+dropped == 0 {
		return
	}
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	kept := 0
	for _, e := range es {
		log := d.log.With(zap.Uint8("vnic", e.VPort), zap.String("owner", e.Owner), zap.String("ifname", e.IfName),
			zap.String("netns", e.NetNS))
		if e.NetNS != "" {
			dev, ino, err := netnsID(e.NetNS)
			if err != nil || dev != e.NSDev || ino != e.NSIno {
				log.Info("runtime VNIC of the last run dropped: its namespace is gone")
				continue
			}
		}
		if e.VPort > config.MaxVPort {
			log.Warn("runtime VNIC of the last run dropped: its vport is out of range")
			continue
		}
		_, err := d.addRuntime(e.Args, &e)
		if err == nil {
			log.Info("runtime VNIC of the last run taken over where it was left")
			kept++
			continue
		}
		if errors.Is(err, errTakeOver) {
			log.Warn("runtime VNIC of the last run dropped: its TAP cannot be taken over (it was deleted while vnicd was down, or vnicd stopped before making it persistent)", zap.Error(err))
		} else {
			log.Warn("runtime VNIC of the last run dropped: it no longer passes vnic_add's checks against the config", zap.Error(err))
		}
		if e.IfName != "" {
			tag := d.claimTag(e.VPort)
			if err := d.removeTAP(e.NetNS, e.IfName, func(a string) bool { return a == tag }); err != nil && !errors.Is(err, tap.ErrNotOurs) {
				log.Warn("cannot remove its netdev", zap.Error(err))
			}
		}
	}
	d.log.Info("runtime VNICs of the last run", zap.Int("restored", kept), zap.Int("dropped", len(es)-kept+dropped))
	if err := d.rt.save(); err != nil {
		d.log.Warn("cannot save the runtime VNICs", zap.Error(err))
	}
}

// portPlaced records where a runtime VNIC's or a claimed port's netdev is
// after someone renamed it or moved it to another namespace by hand
// (EventPlace), so that a restarted vnicd takes its TAP over there and
// vnic_del finds it. It runs on the link watcher's goroutine, which
// MovePort and a port's close wait for under rt.op: it takes only the
// tables' leaf locks, never rt.op.
func (d *Daemon) portPlaced(ev engine.PortEvent) {
	var nsDev, nsIno uint64
	unnamed := strings.HasPrefix(ev.NetNS, "/proc/") || tap.IsUnnamedNetNS(ev.NetNS)
	if ev.NetNS != "" && !tap.IsUnnamedNetNS(ev.NetNS) {
		var err error
		if nsDev, nsIno, err = netnsID(ev.NetNS); err != nil {
			d.log.Warn("cannot identify the netdev's new namespace", zap.Uint8("vnic", ev.VPort),
				zap.String("netns", ev.NetNS), zap.Error(err))
		}
	}
	if unnamed {
		if _, ok := d.rt.get(ev.VPort); ok || d.claimActive(ev.VPort) {
			d.log.Warn("the netdev's namespace has no name (ip netns): its VNIC will not survive a vnicd restart",
				zap.Uint8("vnic", ev.VPort), zap.String("ifname", ev.IfName))
		}
	}
	if d.rt.update(ev.VPort, func(v *runtimeVNIC) {
		v.netdev.IfName, v.netdev.NetNS = ev.IfName, ev.NetNS
		v.entry.IfName, v.entry.NetNS, v.entry.NSDev, v.entry.NSIno = ev.IfName, ev.NetNS, nsDev, nsIno
	}) {
		if err := d.rt.save(); err != nil {
			d.log.Warn("cannot save the runtime VNICs", zap.Error(err))
		}
	}
	if d.claims.update(ev.VPort, func(c *ctl.Claim) {
		c.IfName, c.NetNS, c.NSDev, c.NSIno = ev.IfName, ev.NetNS, nsDev, nsIno
	}) {
		if err := d.claims.save(); err != nil {
			d.log.Warn("cannot save the claims", zap.Error(err))
		}
	}
}

// owned lists the runtime vports whose owner matches, in order.
func (d *Daemon) owned(match func(owner string) bool) []uint8 {
	d.rt.mu.Lock()
	defer d.rt.mu.Unlock()
	var out []uint8
	for vp, v := range d.rt.m {
		if v.owner != "" && match(v.owner) {
			out = append(out, vp)
		}
	}
	slices.Sort(out)
	return out
}

func (d *Daemon) vnicDel(args json.RawMessage) (any, error) {
	var a ctl.VNICDelArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %w", err)
	}
	switch {
	case a.VPort != nil && a.Owner != "":
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: give a vport or an owner, not both")
	case a.VPort == nil && a.Owner == "":
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %s needs a vport or an owner", ctl.CmdVNICDel)
	case a.VPort != nil && (*a.VPort < 0 || *a.VPort > config.MaxVPort):
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "vport: %d is out of range 0..%d", *a.VPort, config.MaxVPort)
	case d.mgmt.Managed():
		return d.claimDel(a)
	}
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	if a.VPort == nil {
		return d.deleteRuntime(d.owned(func(o string) bool { return o == a.Owner }))
	}
	vp := uint8(*a.VPort)
	if _, ok := d.rt.get(vp); !ok {
		if d.engine.Port(vp) != nil {
			return nil, fmt.Errorf("vport %d is from the config file; remove it there", vp)
		}
		return nil, ctl.Errorf(ctl.CodeNotFound, "no vport %d", vp)
	}
	return d.deleteRuntime([]uint8{vp})
}

func (d *Daemon) vnicGC(args json.RawMessage) (any, error) {
	var a ctl.VNICGCArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %w", err)
	}
	if a.Prefix == "" {
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "bad arguments: %s needs a non-empty owner prefix", ctl.CmdVNICGC)
	}
	if d.mgmt.Managed() {
		return d.claimGC(a)
	}
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	return d.deleteRuntime(d.owned(func(o string) bool {
		return strings.HasPrefix(o, a.Prefix) && !slices.Contains(a.Keep, o)
	}))
}

// deleteRuntime removes runtime VNICs and their TAPs; d.rt.op is held.
func (d *Daemon) deleteRuntime(vports []uint8) (ctl.VNICDeleted, error) {
	out := ctl.VNICDeleted{Deleted: []ctl.VNICStatus{}}
	var errs []error
	for _, vp := range vports {
		s, _ := d.status(vp)
		v, _ := d.rt.get(vp)
		persistent := false
		if p := d.engine.Port(vp); p != nil {
			if err := d.setPersist(p, false); err != nil {
				d.log.Warn("cannot make the netdev non-persistent; removing it", zap.Uint8("vnic", vp), zap.Error(err))
				persistent = true
			}
		}
		if err := d.removePort(vp); err != nil {
			errs = append(errs, err)
			continue
		}
		if persistent {
			tag := d.claimTag(vp)
			if err := d.removeTAP(v.entry.NetNS, v.entry.IfName, func(a string) bool { return a == tag }); err != nil {
				d.log.Warn("cannot remove the netdev", zap.Uint8("vnic", vp), zap.Error(err))
			}
		}
		d.rt.set(vp, nil)
		out.Deleted = append(out.Deleted, s)
		d.log.Info("runtime VNIC deleted", zap.Uint8("vnic", vp), zap.String("ifname", s.IfName), zap.String("owner", s.Owner))
	}
	if len(vports) > 0 {
		if err := d.rt.save(); err != nil {
			d.log.Warn("cannot save the runtime VNICs", zap.Error(err))
		}
	}
	return out, errors.Join(errs...)
}

// removePort takes vport down through the agent, as the EM does for a
// removed member (a VESWPortInfo Set with config_state DROP_ALL), then
// removes its netdev and the agent's state of it. A netdev that is already
// gone (its namespace was destroyed) is not an error.
func (d *Daemon) removePort(vport uint8) error {
	if info, ok := d.mgmt.Ports.VESWPortInfo(vport); ok {
		pc := PortConfigFrom(&info)
		pc.Port.ConfigState = engine.StateDropAll
		if err := d.mgmt.configurePort(vport, &pc, nil); err != nil {
			d.log.Warn("cannot set DROP_ALL before removal", zap.Uint8("vnic", vport), zap.Error(err))
		}
	}
	if err := d.engine.DeletePort(vport); err != nil {
		d.log.Warn("removing the netdev", zap.Uint8("vnic", vport), zap.Error(err))
	}
	d.mgmt.Ports.forget(vport)
	return nil
}

// forget drops the agent-side state of a removed vport.
func (c *EnginePorts) forget(vport uint8) {
	c.mu.Lock()
	delete(c.st, vport)
	c.mu.Unlock()
}
