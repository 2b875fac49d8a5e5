package vnicd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Claims: containers on a managed node. In managed mode the EM owns the
// ports (it creates them with VESWPortInfo Sets), so vnic_add cannot make
// one. Instead a container claims a port the EM made: vnic_add with a vesw
// picks this node's free EM-created port on that vesw, moves its netdev
// into the container's namespace under the requested name (the TAP's fd,
// and with it the data path, is untouched by the move) and tags it with the
// owner; vnic_del moves it back under its old name and ends the claim;
// vnic_gc ends the claims of owners not in a keep list.
//
// Which ports are free: every EM-created port that vnicd's config does not
// keep for the host (a `netdevs` or `vnics` entry) and that no claim holds.
// A node has at most one port per vesw (receivers find the port by vesw_id,
// as the kernel's did), so a vesw takes one container per node.
//
// A claimed port stays the EM's: a reconfiguration applies as for any port
// (a new MAC or a lower MTU reaches the netdev in the container). When the
// EM takes the port off its vesw (DeleteVESW: the member left the fabric
// config) the netdev stays in the container, down, and comes back up if the
// EM puts it back on the same vesw; when the EM puts the port on another
// vesw, the claim ends and the netdev goes back to vnicd, so a container is
// never on a vesw it did not ask for.
//
// Restarts: a claimed TAP is persistent (TUNSETPERSIST) and carries an alias
// naming this node and vport, so it outlives vnicd: the container keeps its
// interface, addresses and routes, with carrier off, while vnicd is down.
// The claims are kept in a state file beside the control socket (ClaimsPath),
// a claim saved before its TAP is made persistent (a crash in between leaves
// a claim whose TAP died with vnicd, ended at the next start, never a
// persistent TAP that no claim names).
// A restarted vnicd reads them back as pending; when the EM makes the port
// again (it does for a rejoining node) on the claimed vesw, vnicd takes the
// persistent TAP over in the container's namespace (tap.Attach) instead of
// making a new netdev, and the container's traffic resumes. A claim whose
// namespace is gone, whose netdev is gone, or whose port the EM makes on
// another vesw ends, and the port is made afresh in vnicd's namespace.

// claimsVersion is the state file's format.
const claimsVersion = 1

// claimsFile is the state file's content.
type claimsFile struct {
	Version int         `json:"version"`
	Node    string      `json:"node"`
	Claims  []ctl.Claim `json:"claims"`
}

func (f *claimsFile) FileVersion() int { return f.Version }

// ClaimsPath is the state file of a control socket's claims: the socket's
// path with ".claims.json" for its ".sock" suffix, in the same directory.
// An abstract socket ("@name") has none: claims then live in memory only.
func ClaimsPath(socket string) string { return statePath(socket, ".claims.json") }

// claimTable holds the claims. mu is a leaf lock: nothing is called with it
// held. Changes are made under the daemon's rt.op, except that the device
// factory takes a pending claim (takePending) when the EM makes its port.
type claimTable struct {
	mu      sync.Mutex
	m       map[uint8]*ctl.Claim
	pending map[uint8]bool
	offVESW map[uint8]bool // logged: the EM took the port off its vesw

	file *stateFile
	node string
}

func newClaimTable(path, node string) *claimTable {
	return &claimTable{m: map[uint8]*ctl.Claim{}, pending: map[uint8]bool{}, offVESW: map[uint8]bool{}, file: claimsState(path), node: node}
}

// get returns vport's claim and whether it is pending.
func (t *claimTable) get(vport uint8) (ctl.Claim, bool, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[vport]
	if !ok {
		return ctl.Claim{}, false, false
	}
	return *c, t.pending[vport], true
}

func (t *claimTable) put(c ctl.Claim, pending bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.State = ""
	t.m[c.VPort] = &c
	t.pending[c.VPort] = pending
	delete(t.offVESW, c.VPort)
}

// update changes vport's active claim with f, if there is one, and
// reports whether there was.
func (t *claimTable) update(vport uint8, f func(*ctl.Claim)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[vport]
	if !ok || t.pending[vport] {
		return false
	}
	f(c)
	return true
}

func (t *claimTable) drop(vport uint8) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, vport)
	delete(t.pending, vport)
	delete(t.offVESW, vport)
}

// dropPending drops vport's claim if it is pending, and reports whether it
// did; a claim the device factory took meanwhile is not pending any more.
func (t *claimTable) dropPending(vport uint8) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.pending[vport] {
		return false
	}
	delete(t.m, vport)
	delete(t.pending, vport)
	return true
}

// takePending marks vport's pending claim active and returns it.
func (t *claimTable) takePending(vport uint8) (ctl.Claim, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[vport]
	if !ok || !t.pending[vport] {
		return ctl.Claim{}, false
	}
	t.pending[vport] = false
	return *c, true
}

// noteOffVESW records that vport's port is off its vesw and reports whether
// that is news (to log once).
func (t *claimTable) noteOffVESW(vport uint8, off bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.offVESW[vport]
	if off {
		t.offVESW[vport] = true
	} else {
		delete(t.offVESW, vport)
	}
	return was != off
}

// list returns every claim with its state, by vport.
func (t *claimTable) list() []ctl.Claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ctl.Claim, 0, len(t.m))
	for vp, c := range t.m {
		cc := *c
		cc.State = ctl.ClaimActive
		if t.pending[vp] {
			cc.State = ctl.ClaimPending
		}
		out = append(out, cc)
	}
	slices.SortFunc(out, func(a, b ctl.Claim) int { return int(a.VPort) - int(b.VPort) })
	return out
}

// owned lists the vports of claims whose owner matches, in order.
func (t *claimTable) owned(match func(owner string) bool) []uint8 {
	var out []uint8
	for _, c := range t.list() {
		if c.Owner != "" && match(c.Owner) {
			out = append(out, c.VPort)
		}
	}
	return out
}

// save writes the claims to the state file (atomically: a new file renamed
// over the old), if there is one.
func (t *claimTable) save() error {
	return t.file.Save(func() any {
		f := claimsFile{Version: claimsVersion, Node: t.node, Claims: t.list()}
		for i := range f.Claims {
			f.Claims[i].State = ""
		}
		return &f
	})
}

// loadClaims reads a state file; a missing file is no claims.
func loadClaims(path string) ([]ctl.Claim, error) {
	var f claimsFile
	if _, err := claimsState(path).Load(&f); err != nil {
		return nil, err
	}
	return f.Claims, nil
}

// parseClaims decodes a state file's bytes (path is for the errors).
func parseClaims(b []byte, path string) ([]ctl.Claim, error) {
	var f claimsFile
	if err := claimsState(path).Decode(b, &f); err != nil {
		return nil, err
	}
	return f.Claims, nil
}

// netnsID is the identity (device, inode) of the namespace spec names.
func netnsID(spec string) (dev, ino uint64, err error) {
	if spec == "" {
		return 0, 0, errors.New("no namespace")
	}
	var st unix.Stat_t
	if err := unix.Stat(tap.NetNSPath(spec), &st); err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: tap.NetNSPath(spec), Err: err}
	}
	return uint64(st.Dev), st.Ino, nil
}

// candidate is one of this node's ports as a claim sees it.
type candidate struct {
	vport   uint8
	vesw    uint16
	host    bool   // vnicd's config keeps it for the host (netdevs, vnics)
	claimed bool   // a claim holds it
	owner   string // the claim's owner
}

func (c candidate) why() string {
	switch {
	case c.host:
		return fmt.Sprintf("vport %d, kept for the host by vnicd's config (netdevs)", c.vport)
	case c.claimed && c.owner != "":
		return fmt.Sprintf("vport %d, claimed by %s", c.vport, c.owner)
	case c.claimed:
		return fmt.Sprintf("vport %d, claimed", c.vport)
	}
	return fmt.Sprintf("vport %d, free", c.vport)
}

// pickPort chooses the port a claim on vesw gets among this node's ports:
// want when given (it must be on vesw and free), else the lowest free one.
// Its errors name the vesw and say how many ports it has here and why none
// is free; with none on vesw, whether the fabric manager has configured the
// node yet (joined: Mgmt.joined) before blaming the fabric config.
func pickPort(node string, vesw uint16, want *uint8, ports []candidate, joined bool) (uint8, error) {
	var on []candidate
	for _, p := range ports {
		if p.vesw == vesw {
			on = append(on, p)
		}
	}
	slices.SortFunc(on, func(a, b candidate) int { return int(a.vport) - int(b.vport) })
	if want != nil {
		i := slices.IndexFunc(ports, func(p candidate) bool { return p.vport == *want })
		switch {
		case i < 0:
			return 0, ctl.Errorf(ctl.CodeNotFound, "vport: node %s has no vport %d (the EM has not made it)", node, *want)
		case ports[i].vesw != vesw:
			return 0, ctl.Errorf(ctl.CodeInvalidArgument, "vport: vport %d is on vesw %d, not vesw %d", *want, ports[i].vesw, vesw)
		case ports[i].host || ports[i].claimed:
			return 0, fmt.Errorf("%w: %s", ctl.ErrNoFreePort, ports[i].why())
		}
		return *want, nil
	}
	for _, p := range on {
		if !p.host && !p.claimed {
			return p.vport, nil
		}
	}
	switch {
	case len(on) == 0 && !joined:
		return 0, fmt.Errorf("%w: vesw %d has no port on node %s: this node has not been configured by the fabric manager yet (not joined, or the FM is unreachable); try again",
			ctl.ErrNoFreePort, vesw, node)
	case len(ports) == 0:
		return 0, fmt.Errorf("%w: vesw %d has no port on node %s: the EM has made no port on this node yet (it has not configured the node yet: try again; or the fabric config has no member on this node)",
			ctl.ErrNoFreePort, vesw, node)
	case len(on) == 0:
		return 0, fmt.Errorf("%w: vesw %d has no port on node %s: the EM made none (the fabric config has no member of vesw %d on this node)",
			ctl.ErrNoFreePort, vesw, node, vesw)
	}
	whys := make([]string, len(on))
	for i, p := range on {
		whys[i] = p.why()
	}
	plural := "s"
	if len(on) == 1 {
		plural = ""
	}
	return 0, fmt.Errorf("%w: vesw %d has %d port%s on node %s: %s (a node has one port per vesw, so each vesw takes one container per node)",
		ctl.ErrNoFreePort, vesw, len(on), plural, node, strings.Join(whys, "; "))
}

// claimTag is the alias a claimed TAP carries: tap.Attach takes over only a
// netdev with it.
func (d *Daemon) claimTag(vport uint8) string {
	return fmt.Sprintf("opavnic:%s:vport%d", d.cfg.Node.Name, vport)
}

// hostPort reports whether vnicd's config keeps vport for the host.
func (d *Daemon) hostPort(vport uint8) bool {
	if _, ok := d.cfg.Netdevs[vport]; ok {
		return true
	}
	return slices.ContainsFunc(d.cfg.VNICs, func(v config.VNICConfig) bool { return v.VPort == vport })
}

// candidates describes this node's ports for pickPort.
func (d *Daemon) candidates() []candidate {
	var out []candidate
	for _, p := range d.engine.Ports() {
		c := candidate{vport: p.VPort(), vesw: uint16(p.Config().VESW.VESWID & encap.VESWIDMask), host: d.hostPort(p.VPort())}
		if cl, _, ok := d.claims.get(p.VPort()); ok {
			c.claimed, c.owner = true, cl.Owner
		}
		out = append(out, c)
	}
	return out
}

// setPersist makes vport's netdev persistent (with the claim's tag) or not.
func (d *Daemon) setPersist(p *engine.Port, on bool) error {
	if ps, ok := p.Netdev().(persister); ok {
		return ps.SetPersist(on, d.claimTag(p.VPort()))
	}
	return nil
}

// claimAdd is vnic_add on a managed node.
func (d *Daemon) claimAdd(deadline time.Time, args json.RawMessage) (any, error) {
	r, err := config.ClaimFromArgs(args)
	if err != nil {
		return nil, ctl.WithCode(ctl.CodeInvalidArgument, err)
	}
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	if err := ctl.StartBy(deadline); err != nil {
		return nil, err
	}
	if r.Owner != "" {
		if vps := d.claims.owned(func(o string) bool { return o == r.Owner }); len(vps) > 0 {
			return nil, fmt.Errorf("owner: %q already holds vport %d", r.Owner, vps[0])
		}
	}
	vport, err := pickPort(d.cfg.Node.Name, r.VESW, r.VPort, d.candidates(), d.mgmt.joined())
	if err != nil {
		return nil, err
	}
	p := d.engine.Port(vport)
	if p == nil {
		return nil, fmt.Errorf("vport %d went away", vport)
	}
	pc := p.Config()
	switch {
	case r.PKey != nil && *r.PKey != pc.VESW.PKey:
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "pkey: %v, but the EM gave vesw %d pkey %v on this node", *r.PKey, r.VESW, pc.VESW.PKey)
	case r.EthMTU != nil && *r.EthMTU != pc.VESW.EthMTU:
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "eth_mtu: %d, but the EM gave vesw %d eth_mtu %d on this node", *r.EthMTU, r.VESW, pc.VESW.EthMTU)
	case r.McastDLID != nil && *r.McastDLID != pc.VESW.McastDLID&encap.LID16BMask:
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "mcast_dlid: 0x%06X, but the EM gave vesw %d mcast_dlid 0x%06X on this node", *r.McastDLID, r.VESW, pc.VESW.McastDLID)
	}
	nsDev, nsIno, err := netnsID(r.Netdev.NetNS)
	if err != nil {
		return nil, ctl.Errorf(ctl.CodeInvalidArgument, "netns: %q: %w", r.Netdev.NetNS, err)
	}
	home := p.Netdev().Name()
	ifname := r.Netdev.IfName
	if ifname == "" {
		ifname = home
	}
	c := ctl.Claim{VPort: vport, VESW: r.VESW, Owner: r.Owner, NetNS: r.Netdev.NetNS, IfName: ifname, Home: home,
		NSDev: nsDev, NSIno: nsIno}
	for _, a := range r.Netdev.Addresses {
		c.Addresses = append(c.Addresses, a.String())
	}
	if err := d.engine.MovePort(vport, r.Netdev.NetNS, ifname, r.Netdev.Addresses); err != nil {
		return nil, err
	}
	c.IfName = p.Netdev().Name()
	recorded := false // the state file names the claim
	undo := func(cause error) (any, error) {
		d.claims.drop(vport)
		_ = d.setPersist(p, false)
		if err := d.engine.MovePort(vport, "", home, nil); err != nil {
			cause = errors.Join(cause, fmt.Errorf("moving it back: %w", err))
		}
		if recorded {
			if err := d.claims.save(); err != nil {
				cause = errors.Join(cause, fmt.Errorf("removing it from the state file: %w", err))
			}
		}
		return nil, cause
	}
	// The state file names the claim before its TAP is made persistent: a
	// vnicd that dies in between leaves a claim whose TAP died with it (the
	// next start fails to take it over and ends the claim), never a
	// persistent TAP that no claim names, which no start would take over
	// or remove.
	d.claims.put(c, false)
	if err := d.claims.save(); err != nil {
		return undo(err)
	}
	recorded = true
	if err := d.setPersist(p, true); err != nil {
		return undo(err)
	}
	d.log.Info("port claimed", zap.Uint8("vnic", vport), zap.Uint16("vesw", r.VESW), zap.String("ifname", c.IfName),
		zap.String("netns", c.NetNS), zap.String("owner", c.Owner))
	s, _ := d.status(vport)
	return s, nil
}

// claimDel is vnic_del on a managed node, its arguments checked (vnicDel).
func (d *Daemon) claimDel(a ctl.VNICDelArgs) (any, error) {
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	if a.VPort == nil {
		return d.release(d.claims.owned(func(o string) bool { return o == a.Owner })), nil
	}
	vp := uint8(*a.VPort)
	if _, _, ok := d.claims.get(vp); !ok {
		return nil, ctl.Errorf(ctl.CodeNotFound, "vport %d is not claimed (a managed node's ports are the EM's)", vp)
	}
	return d.release([]uint8{vp}), nil
}

// claimGC is vnic_gc on a managed node.
func (d *Daemon) claimGC(a ctl.VNICGCArgs) (any, error) {
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	return d.release(d.claims.owned(func(o string) bool {
		return strings.HasPrefix(o, a.Prefix) && !slices.Contains(a.Keep, o)
	})), nil
}

// release ends the claims of vports; d.rt.op is held. Ending a claim never
// fails: a netdev that cannot go back home is removed (the EM makes the
// port again when it finds it gone).
func (d *Daemon) release(vports []uint8) ctl.VNICDeleted {
	out := ctl.VNICDeleted{Deleted: []ctl.VNICStatus{}}
	for _, vp := range vports {
		c, _, ok := d.claims.get(vp)
		if !ok {
			continue
		}
		s, ok := d.status(vp)
		if !ok || !d.claimActive(vp) {
			s = ctl.VNICStatus{VPort: vp, IfName: c.IfName, NetNS: c.NetNS, VESW: c.VESW, Owner: c.Owner}
		}
		d.endClaim(c, "released")
		out.Deleted = append(out.Deleted, s)
	}
	if err := d.claims.save(); err != nil {
		d.log.Warn("cannot save the claims", zap.Error(err))
	}
	return out
}

// claimActive reports whether vport has an active claim.
func (d *Daemon) claimActive(vport uint8) bool {
	_, pending, ok := d.claims.get(vport)
	return ok && !pending
}

// endClaim ends claim c: a pending claim's netdev, persistent in the
// namespace with no port behind it, is deleted; an active claim's netdev goes
// back to vnicd's namespace under its home name (or vnic%d if another
// netdev took that name meanwhile), not persistent any more. The caller
// saves the claims.
func (d *Daemon) endClaim(c ctl.Claim, why string) {
	log := d.log.With(zap.Uint8("vnic", c.VPort), zap.Uint16("vesw", c.VESW), zap.String("owner", c.Owner),
		zap.String("ifname", c.IfName), zap.String("netns", c.NetNS))
	if d.claims.dropPending(c.VPort) {
		tag := d.claimTag(c.VPort)
		if err := d.removeTAP(c.NetNS, c.IfName, func(a string) bool { return a == tag }); err != nil {
			log.Warn("cannot remove the claimed netdev", zap.Error(err))
		}
		log.Info("claim ended; it was waiting for the EM to make its port", zap.String("why", why))
		return
	}
	defer d.claims.drop(c.VPort)
	p := d.engine.Port(c.VPort)
	if p == nil { // vnicd is stopping: the persistent netdev stays behind
		tag := d.claimTag(c.VPort)
		if err := d.removeTAP(c.NetNS, c.IfName, func(a string) bool { return a == tag }); err != nil {
			log.Warn("cannot remove the claimed netdev", zap.Error(err))
		}
		log.Info("claim ended; its port is gone", zap.String("why", why))
		return
	}
	if err := d.setPersist(p, false); err != nil {
		log.Warn("cannot make the netdev non-persistent", zap.Error(err))
	}
	err := d.engine.MovePort(c.VPort, "", c.Home, nil)
	if err != nil {
		if err2 := d.engine.MovePort(c.VPort, "", tap.DefaultName, nil); err2 != nil {
			log.Warn("cannot move the netdev back; removing the port (the EM will make it again)", zap.String("why", why),
				zap.Error(errors.Join(err, err2)))
			_ = d.removePort(c.VPort)
			return
		}
	}
	log.Info("claim ended; the port is back in vnicd's namespace", zap.String("why", why), zap.String("home", p.Netdev().Name()))
}

// claimingFactory wraps the engine's device factory: when the EM makes a
// port that a pending claim names (after a vnicd restart), the claimed
// netdev is taken over where it is (DeviceSpec.Attach) instead of a new one
// being made. A claim that cannot be taken up (another vesw, the netdev
// gone) ends, and the port is made as usual.
func (d *Daemon) claimingFactory(base engine.DeviceFactory) engine.DeviceFactory {
	return func(s engine.DeviceSpec) (tap.Netdev, error) {
		c, ok := d.claims.takePending(s.VPort)
		if !ok {
			return base(s)
		}
		log := d.log.With(zap.Uint8("vnic", s.VPort), zap.Uint16("vesw", c.VESW), zap.String("owner", c.Owner),
			zap.String("ifname", c.IfName), zap.String("netns", c.NetNS))
		tag := d.claimTag(s.VPort)
		end := func(why string, err error) (tap.Netdev, error) {
			log.Warn("claim ended: "+why, zap.Error(err))
			d.claims.drop(s.VPort)
			if err := d.removeTAP(c.NetNS, c.IfName, func(a string) bool { return a == tag }); err != nil {
				log.Warn("cannot remove the claimed netdev", zap.Error(err))
			}
			if err := d.claims.save(); err != nil {
				log.Warn("cannot save the claims", zap.Error(err))
			}
			return base(s)
		}
		if uint16(s.VESW&encap.VESWIDMask) != c.VESW {
			return end(fmt.Sprintf("the EM made the port again on vesw %d, not the claimed vesw", s.VESW&encap.VESWIDMask), nil)
		}
		as := s
		as.Netdev = engine.NetdevConfig{IfName: c.IfName, NetNS: c.NetNS}
		as.Attach = tag
		dev, err := base(as)
		if err != nil {
			return end("cannot take the claimed netdev over (it was deleted while vnicd was down, or vnicd stopped before making it persistent)", err)
		}
		log.Info("claimed port taken over where it was left")
		return dev, nil
	}
}

// loadClaimsOnStart reads the claims of an earlier run as pending; a claim
// whose namespace is gone (or is another one now) ends: its persistent TAP
// went with the namespace.
func (d *Daemon) loadClaimsOnStart() {
	cs, err := loadClaims(d.claims.file.Path)
	if err != nil {
		d.log.Warn("cannot read the claims of the last run; starting with none: their netdevs stay in their containers, carrier off",
			append([]zap.Field{zap.Error(err)}, d.claims.file.setAside()...)...)
		return
	}
	kept := 0
	for _, c := range cs {
		dev, ino, err := netnsID(c.NetNS)
		if err != nil || dev != c.NSDev || ino != c.NSIno || c.VPort > config.MaxVPort {
			d.log.Info("claim of the last run ended: its namespace is gone", zap.Uint8("vnic", c.VPort),
				zap.String("owner", c.Owner), zap.String("netns", c.NetNS))
			continue
		}
		d.claims.put(c, true)
		kept++
	}
	if len(cs) > 0 {
		d.log.Info("claims of the last run", zap.Int("pending", kept), zap.Int("ended", len(cs)-kept))
		if err := d.claims.save(); err != nil {
			d.log.Warn("cannot save the claims", zap.Error(err))
		}
	}
}

// reconcileClaims follows the EM's changes to claimed ports (after every
// VESWPortInfo Set): a port off its vesw (DeleteVESW) stays in its
// container, down; a port the EM put on another vesw goes back to vnicd.
func (d *Daemon) reconcileClaims() {
	d.rt.op.Lock()
	defer d.rt.op.Unlock()
	changed := false
	for _, c := range d.claims.list() {
		if c.State != ctl.ClaimActive {
			continue
		}
		p := d.engine.Port(c.VPort)
		if p == nil {
			continue
		}
		vesw := uint16(p.Config().VESW.VESWID & encap.VESWIDMask)
		switch {
		case vesw == c.VESW:
			if d.claims.noteOffVESW(c.VPort, false) {
				d.log.Info("claimed port is on its vesw again", zap.Uint8("vnic", c.VPort), zap.Uint16("vesw", vesw), zap.String("owner", c.Owner))
			}
		case vesw == 0:
			if d.claims.noteOffVESW(c.VPort, true) {
				d.log.Info("the EM took a claimed port off its vesw; it stays in its container, down, until the EM puts it back",
					zap.Uint8("vnic", c.VPort), zap.Uint16("vesw", c.VESW), zap.String("owner", c.Owner))
			}
		default:
			d.log.Warn("the EM moved a claimed port to another vesw; the claim ends and the port leaves its container",
				zap.Uint8("vnic", c.VPort), zap.Uint16("vesw", c.VESW), zap.Uint16("new_vesw", vesw), zap.String("owner", c.Owner))
			d.endClaim(c, "moved to another vesw")
			changed = true
		}
	}
	if changed {
		if err := d.claims.save(); err != nil {
			d.log.Warn("cannot save the claims", zap.Error(err))
		}
	}
}

// persister is a netdev that can outlive its device (the TAP).
type persister interface {
	SetPersist(on bool, tag string) error
}
