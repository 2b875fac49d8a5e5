package fm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// The EM (docs/management.md §4): it configures every member (node, vport) of every
// vesw through the node's VEMA and keeps it right.
//
// Every push is a request tried f.tries times. One whose tries all go
// unanswered is pushed again from a later poll of the node, after
// emBackoff; emMaxFails such failures in a row declare the node lost, and
// it is configured afresh when it joins again. A push the node refuses (it
// answered) is not repeated until a reload or the node's next join.

// emMaxFails is how many unanswered pushes in a row (to one member, or one
// DeleteVESW) declare the node lost: with the backoff, some 15 polls.
const emMaxFails = 5

// emBackoff is how long after its fails-th unanswered push in a row a push
// is tried again: a poll interval, doubling, at most 8.
func (f *FM) emBackoff(fails int) time.Duration {
	return f.pollEvery << min(max(fails-1, 0), 3)
}

// emRetry paces one kind of push to a node: fails counts its unanswered
// sends in a row, at is when a poll may send it again (emBackoff).
type emRetry struct {
	fails int
	at    time.Time
}

// waiting reports whether the push must wait for its backoff at now.
func (r *emRetry) waiting(now time.Time) bool { return now.Before(r.at) }

// emFailed counts an unanswered push (what) to n: the poll tries again after
// the backoff, or, at emMaxFails, n is declared lost.
func (f *FM) emFailed(n *node, r *emRetry, what string) {
	if f.notSent { // never sent (maxPending): try again, without blame
		r.at = time.Now().Add(f.emBackoff(r.fails + 1))
		return
	}
	r.fails++
	if r.fails >= emMaxFails {
		r.fails = 0
		f.loseNode(n, what+" unanswered "+strconv.Itoa(emMaxFails)+" times in a row; node dropped")
		return
	}
	r.at = time.Now().Add(f.emBackoff(r.fails))
	f.log.Info(what+" unanswered; will retry", zap.String("node", n.name), zap.Int("fails", r.fails),
		zap.Duration("after", f.emBackoff(r.fails)))
}

// memberKeys returns the keys of the config members on node n, in config
// order (f.index: not a walk of every member per poll answer). The slice is
// the index's: callers must not change it.
func (f *FM) memberKeys(n *node) []memberKey {
	if n.cfgName == "" {
		return nil
	}
	ks := f.index().byNode[n.cfgName]
	for _, k := range ks {
		if f.members[k] == nil {
			f.members[k] = &memberState{}
		}
	}
	return ks
}

func (f *FM) vesw(id encap.VESWID) (*VESWConfig, bool) {
	if i, ok := f.index().vesws[id]; ok {
		return &f.cfg.VESWs[i], true
	}
	return nil, false
}

func (f *FM) member(k memberKey) (*VESWConfig, *Member, bool) {
	if p, ok := f.index().members[k]; ok {
		v := &f.cfg.VESWs[p[0]]
		return v, &v.Members[p[1]], true
	}
	return nil, nil, false
}

// configureNode sets the node's VEMA ClassPortInfo (trap_lid = FM LID) and
// pushes every member on it; force pushes even what looks unchanged.
func (f *FM) configureNode(n *node, force bool) {
	f.sendDeletes(n)
	keys := f.memberKeys(n)
	if force {
		for _, k := range keys { // a (re)join starts the counts afresh
			st := f.members[k]
			st.retry, st.infoRefused, st.tableRefused = emRetry{}, false, false
		}
	}
	if len(keys) == 0 {
		return
	}
	if force {
		n.cpiDone, n.cpiRetry = false, emRetry{}
	}
	f.setClassPortInfo(n)
	for _, k := range keys {
		f.adoptThenPush(n, k, force)
	}
}

// setClassPortInfo sets the node's VEMA ClassPortInfo: trap_lid = FM LID,
// where the node sends its traps. Sent again from a later poll when lost.
func (f *FM) setClassPortInfo(n *node) {
	if n.cpiOut {
		return
	}
	n.cpiOut = true
	cpi := vema.ClassPortInfo{BaseVersion: vema.BaseVersion, ClassVersion: vema.VEMAClassVersion,
		TrapLID: encap.LID(f.cfg.FM.LID), TrapHLQP: encap.QPNGSI, TrapPKey: 0xFFFF}
	data, _ := cpi.MarshalBinary()
	f.vendorMAD(n, vema.ClassVEMA, vema.MethodSet, vema.AttrClassPortInfo, 0, data, func(_ *inbound, s vema.Status) {
		n.cpiOut, n.cpiDone, n.cpiRetry.fails = false, true, 0
		if s != vema.StatusSuccess {
			f.log.Warn("ClassPortInfo Set refused", zap.String("node", n.name), zap.Stringer("status", s))
		}
	}, func() {
		n.cpiOut = false
		f.emFailed(n, &n.cpiRetry, "ClassPortInfo Set")
	})
}

// adoptThenPush, the first time this FM configures a member (after its
// start, or when a reload adds the member), first reads the port: one that
// already runs this vesw on this LID with a MAC other than the config's
// carries a MAC the EM learned before (an FM restart forgets it): the
// netdev's MAC (IfaceUcastMacs) when a user changed it since (its trap may
// be lost), else the port's base_mac_addr, which the EM sets to what it
// learns. The EM adopts it rather than reset the netdev's MAC. When the MAC
// file (state.go) knows the member, it says what was learned, and only a
// netdev MAC that differs from base_mac_addr is adopted: base_mac_addr
// alone cannot tell a learned MAC from a fixed `mac` changed while the FM
// was down. Later configures (a reload, a rejoin) never adopt: the EM heard
// every change, and the port's MAC may be an old fixed one that the push
// must replace. Then it pushes the member and the vesw's MAC tables.
func (f *FM) adoptThenPush(n *node, k memberKey, force bool) {
	push := func() {
		f.pushMember(n, k, force)
		if v, _, ok := f.member(k); ok {
			f.pushTable(n, k, force)
			f.pushVESWTables(v)
		}
	}
	st := f.members[k]
	if st == nil || st.adopted || st.learned != ([6]byte{}) || st.reading {
		push()
		return
	}
	known := false
	if _, m, ok := f.member(k); ok {
		st.learned, known = f.savedLearned(k, m)
	}
	st.reading = true
	done := func() { f.afterMACFile(func() { st.reading = false; push() }) }
	f.vendorMAD(n, vema.ClassVEMA, vema.MethodGet, vema.AttrVESWPortInfo, uint32(k.vport), nil,
		func(p *inbound, s vema.Status) {
			var pi vema.VESWPortInfo
			if s != vema.StatusSuccess || len(p.mad) < vema.VendorHeaderLen ||
				pi.UnmarshalBinary(p.mad[vema.VendorHeaderLen:]) != nil {
				st.adopted = s != vema.StatusSuccess // answered: no such port
				done()
				return
			}
			st.adopted = true
			if pi.VESW.VESWID != k.vesw || uint32(pi.VPort.EncapSLID) != n.lid {
				done()
				return
			}
			base := pi.VPort.BaseMACAddr
			req, _ := (&vema.IfaceMACsHeader{}).MarshalBinary()
			adopt := func(mac [6]byte) {
				v, m, ok := f.member(k)
				if !ok || mac == ([6]byte{}) || mac[0]&1 != 0 || known && mac == base {
					done()
					return
				}
				if mac == f.configMAC(v, m, n) {
					st.learned = [6]byte{} // set back to the config's MAC meanwhile
				} else if mac != st.learned {
					st.learned = mac
					f.log.Info("adopted the MAC a port already carries", zap.String("node", n.name),
						zap.Uint16("vesw", uint16(k.vesw)), zap.Uint8("vport", k.vport), zap.String("mac", net.HardwareAddr(mac[:]).String()))
				}
				done()
			}
			f.vendorMAD(n, vema.ClassVEMA, vema.MethodGet, vema.AttrIfaceUcastMACs, uint32(k.vport), req,
				func(p *inbound, s vema.Status) {
					var l vema.IfaceMACs
					if s == vema.StatusSuccess && len(p.mad) >= vema.VendorHeaderLen &&
						l.UnmarshalBinary(p.mad[vema.VendorHeaderLen:]) == nil && len(l.MACs) > 0 && l.MACs[0] != ([6]byte{}) {
						adopt(l.MACs[0])
						return
					}
					adopt(base)
				}, func() { adopt(base) })
		}, done)
}

// memberMAC is a member's MAC: learned from a trap, else fixed, else derived
// from its node's LID.
func (f *FM) memberMAC(v VESWConfig, m Member, n *node) [6]byte {
	if st := f.members[memberKey{v.ID, m.Node, m.VPort}]; st != nil && st.learned != [6]byte{} {
		return st.learned
	}
	return f.configMAC(&v, &m, n)
}

// configMAC is the MAC the config gives a member: fixed, else derived from
// its node's LID. It is the port's base_mac_addr.
func (f *FM) configMAC(v *VESWConfig, m *Member, n *node) [6]byte {
	if m.MAC != [6]byte{} {
		return m.MAC
	}
	return encap.MACForLID(encap.LID(n.lid), v.ID)
}

// portInfo is the VESWPortInfo the EM sets for member m of v on node n.
func (f *FM) portInfo(v *VESWConfig, m *Member, n *node) vema.VESWPortInfo {
	var pi vema.VESWPortInfo
	w := &pi.VESW
	w.FabricID = v.FabricID
	w.VESWID = v.ID
	w.PKey = v.PKey
	w.UMcastDLID = encap.LID(v.McastDLID)
	w.RC = v.RC
	w.EthMTU = v.EthMTU
	for _, d := range v.DefaultPorts {
		dlid := d.DLID
		if d.Node != "" {
			if o := f.activeNode(d.Node); o != nil {
				dlid = o.lid
			}
		}
		if dlid != 0 {
			w.DefPortMask |= 1 << d.Index
			w.UUcastDLID[d.Index] = encap.LID(dlid)
		}
	}
	p := &pi.VPort
	p.PortNum = uint32(m.VPort)
	p.BaseMACAddr = f.memberMAC(*v, *m, n)
	p.ConfigState = vema.StateForwarding
	if !v.AdminUp {
		p.ConfigState = vema.StateDropAll
	}
	p.EncapSLID = encap.LID(n.lid)
	p.PCPToSCUC, p.PCPToSCMC, p.NonVLANSCUC, p.NonVLANSCMC = v.SC.UC, v.SC.MC, v.SC.NonVLANUC, v.SC.NonVLANMC
	p.PCPToVLUC, p.PCPToVLMC, p.NonVLANVLUC, p.NonVLANVLMC = v.VL.UC, v.VL.MC, v.VL.NonVLANUC, v.VL.NonVLANMC
	return pi
}

// pushMember sets the member's VESWPortInfo when it differs from what the
// node acknowledged and from the Set in flight (or force).
func (f *FM) pushMember(n *node, k memberKey, force bool) {
	v, m, ok := f.member(k)
	st := f.members[k]
	if !ok || st == nil || st.reading {
		// While adoptThenPush reads the port, its MAC is not known yet:
		// the read's end pushes.
		return
	}
	pi := f.portInfo(v, m, n)
	data, _ := pi.MarshalBinary()
	if !force && (!st.infoOut && bytes.Equal(data, st.info) || st.infoOut && bytes.Equal(data, st.infoSent)) {
		return // a Set in flight with other data is replaced, even by the data last acknowledged
	}
	if st.infoOut {
		f.cancel(st.infoTID)
	}
	st.infoSeq++
	seq := st.infoSeq
	st.infoSent, st.infoOut, st.infoRefused = data, true, false
	f.log.Debug("VESWPortInfo Set", zap.String("node", n.name), zap.Uint16("vesw", uint16(k.vesw)), zap.Uint8("vport", k.vport))
	st.infoTID = f.vendorMAD(n, vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo, uint32(k.vport), data,
		func(p *inbound, s vema.Status) {
			if seq != st.infoSeq {
				return // a later Set's answer decides
			}
			st.infoOut = false
			if s != vema.StatusSuccess {
				f.log.Warn("VESWPortInfo Set refused", zap.String("node", n.name), zap.Uint16("vesw", uint16(k.vesw)),
					zap.Uint8("vport", k.vport), zap.Stringer("status", s))
				st.infoRefused = true
				return
			}
			st.info, st.retry.fails = data, 0
			st.infoAck = emFields(p, data)
			// The vesw's table may have changed while the port was being
			// made (pushVESWTables skips a member until then).
			f.pushTable(n, k, false)
		}, func() {
			if seq != st.infoSeq {
				return
			}
			st.infoOut = false
			f.emFailed(n, &st.retry, "VESWPortInfo Set")
		})
}

// emFields is the part of a VESWPortInfo Set's answer p that the EM sets
// (emFieldsOf), to compare with what later polls read back; when the answer
// cannot be decoded, that of the Set's own data.
func emFields(p *inbound, sent []byte) []byte {
	var pi vema.VESWPortInfo
	if p == nil || len(p.mad) < vema.VendorHeaderLen || pi.UnmarshalBinary(p.mad[vema.VendorHeaderLen:]) != nil {
		if pi.UnmarshalBinary(sent) != nil {
			return nil
		}
	}
	return emFieldsOf(pi)
}

// emFieldsOf encodes pi without the fields the node keeps itself: link and
// operational state, table sizes, the MAC table's digest (set by the table
// pushes) and the MAC list generation counts.
func emFieldsOf(pi vema.VESWPortInfo) []byte {
	v := &pi.VPort
	v.EthLinkStatus, v.OperState, v.MaxMACTblEnt, v.MaxSMACEnt, v.MACTblDigest = 0, 0, 0, 0, 0
	v.UCMACsGenCount, v.MCMACsGenCount = 0, 0
	b, _ := pi.MarshalBinary()
	return b
}

// macTable is the vesw's MAC table (the same for every member): one entry
// per active member whose MAC is not the derived one, sorted as the members
// are listed, and its digest.
func (f *FM) macTable(v *VESWConfig) ([]vema.MACTableEntry, uint32) {
	var ents []vema.MACTableEntry
	act := f.activeByName() // linear in the nodes, not once per member
	for _, m := range v.Members {
		n := act[m.Node]
		if n == nil {
			continue
		}
		mac := f.memberMAC(*v, m, n)
		if mac == encap.MACForLID(encap.LID(n.lid), v.ID) {
			continue
		}
		ents = append(ents, vema.MACTableEntry{MAC: mac, Mask: [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
			DLIDSD: vema.MakeDLIDSD(n.lid, false)})
	}
	return ents, macDigest(ents)
}

// macDigest is the CRC-32 (IEEE) of the encoded entries, never 0: a digest
// of 0 read back means the node lost its table (docs/management.md §4.3), so an
// empty table carries 1.
func macDigest(ents []vema.MACTableEntry) uint32 {
	var b []byte
	for i := range ents {
		b, _ = ents[i].AppendBinary(b)
	}
	if d := crc32.ChecksumIEEE(b); d != 0 {
		return d
	}
	return 1
}

// pushTable sets the member's MAC table when its digest differs from what
// the node acknowledged and from the push in flight (or force): 125 entries
// per MAD, and zero-MAC entries deleting what an older, longer table left
// behind. The digest counts as the node's only once every chunk is
// answered.
func (f *FM) pushTable(n *node, k memberKey, force bool) {
	v, _, ok := f.member(k)
	st := f.members[k]
	if !ok || st == nil {
		return
	}
	ents, digest := f.macTable(v)
	f.pushTableOf(n, k, st, force, ents, digest)
}

// pushTableOf is pushTable with the vesw's table (macTable) given: a push
// to every member of a vesw computes it once, not once per member (which
// made a trap or a join cost members² × nodes under f.mu).
func (f *FM) pushTableOf(n *node, k memberKey, st *memberState, force bool, ents []vema.MACTableEntry, digest uint32) {
	if !force && (st.tableOut == 0 && digest == st.digest && len(ents) == st.tableLen ||
		st.tableOut > 0 && digest == st.tableDigest) {
		return
	}
	all := ents
	for len(all) < st.tableLen {
		all = append(all, vema.MACTableEntry{})
	}
	for _, tid := range st.tableTIDs {
		f.cancel(tid) // an older push's chunks: never resent after this one's
	}
	st.tableTIDs = st.tableTIDs[:0]
	st.tableSeq++
	seq := st.tableSeq
	st.tableOut, st.tableDigest, st.tableRefused = 0, digest, false
	st.tableLen = max(st.tableLen, len(ents))
	for off := 0; off == 0 || off < len(all); off += vema.MaxMACEntriesPerMAD {
		chunk := all[off:min(off+vema.MaxMACEntriesPerMAD, len(all))]
		t := vema.VESWPortMACEntries{MACTableHeader: vema.MACTableHeader{Offset: uint16(off),
			NumEntries: uint16(len(chunk)), Digest: digest}, Entries: chunk}
		data, err := t.MarshalBinary()
		if err != nil {
			f.log.Error("MAC table", zap.Error(err))
			st.tableOut = 0
			return
		}
		st.tableOut++
		st.tableTIDs = append(st.tableTIDs, f.vendorMAD(n, vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortMACEntries, uint32(k.vport), data,
			func(_ *inbound, s vema.Status) {
				if seq != st.tableSeq || st.tableOut == 0 {
					return // a later push's answers decide, or this one failed already
				}
				if s != vema.StatusSuccess {
					f.log.Warn("MAC table Set refused", zap.String("node", n.name), zap.Uint16("vesw", uint16(k.vesw)),
						zap.Uint8("vport", k.vport), zap.Stringer("status", s))
					st.tableOut, st.digest, st.tableRefused = 0, 0, true
					return
				}
				if st.tableOut--; st.tableOut == 0 {
					st.digest, st.tableLen, st.retry.fails = digest, len(ents), 0
				}
			}, func() {
				if seq != st.tableSeq || st.tableOut == 0 {
					return
				}
				st.tableOut, st.digest = 0, 0 // not known to be there: the poll pushes it again
				f.emFailed(n, &st.retry, "MAC table Set")
			}))
	}
}

// pushVESWTables pushes v's MAC table to every active member whose port
// exists: a member whose VESWPortInfo Set has not been answered yet would
// refuse it (0x001C); it gets the table after that Set (pushMember).
func (f *FM) pushVESWTables(v *VESWConfig) {
	ents, digest := f.macTable(v)
	for _, m := range v.Members {
		if n := f.activeNode(m.Node); n != nil {
			k := memberKey{v.ID, m.Node, m.VPort}
			if f.members[k] == nil {
				f.members[k] = &memberState{}
			}
			if f.members[k].info == nil {
				continue
			}
			f.pushTableOf(n, k, f.members[k], false, ents, digest)
		}
	}
}

// repushDefaultPortsReferencing re-pushes the members of vesws whose default
// ports name n (its LID may be new), and every vesw's MAC table (entries
// point at LIDs).
func (f *FM) repushDefaultPortsReferencing(n *node) {
	for i := range f.cfg.VESWs {
		v := &f.cfg.VESWs[i]
		refers := false
		for _, d := range v.DefaultPorts {
			refers = refers || d.Node == n.cfgName && n.cfgName != ""
		}
		ents, digest := f.macTable(v)
		act := f.activeByName()
		for _, m := range v.Members {
			o := act[m.Node]
			if o == nil || o == n {
				continue
			}
			k := memberKey{v.ID, m.Node, m.VPort}
			if f.members[k] == nil {
				f.members[k] = &memberState{}
			}
			if refers {
				f.pushMember(o, k, false)
			}
			if f.members[k].info != nil { // else after its VESWPortInfo Set
				f.pushTableOf(o, k, f.members[k], false, ents, digest)
			}
		}
	}
}

// checkMembers runs on every poll answer of n: it sends the DeleteVESWs n
// is owed, pushes again what was not acknowledged (once its backoff is
// over), and reads each configured member's VESWPortInfo: an error, another
// SLID or a digest of 0 means the node lost its VNIC state (§4.3) and is
// configured again; another digest means a MAC table the node did not take,
// pushed again.
func (f *FM) checkMembers(n *node) {
	f.sendDeletes(n)
	if !f.settled {
		// Members are configured when the start-up sweep ends, each after
		// adoptThenPush has read its port: a push before that would reset a
		// MAC learned before an FM restart.
		return
	}
	now := time.Now()
	keys := f.memberKeys(n)
	if len(keys) > 0 && !n.cpiDone && !n.cpiRetry.waiting(now) {
		f.setClassPortInfo(n)
	}
	for _, k := range keys {
		st := f.members[k]
		v, m, ok := f.member(k)
		if !ok || st.infoOut || st.reading || st.retry.waiting(now) {
			continue
		}
		if st.learnPending {
			f.learnMAC(n, k, st)
		}
		pi := f.portInfo(v, m, n)
		if data, _ := pi.MarshalBinary(); !bytes.Equal(data, st.info) {
			if !st.infoRefused {
				f.pushMember(n, k, false)
			}
			continue
		}
		st.reading = true
		f.vendorMAD(n, vema.ClassVEMA, vema.MethodGet, vema.AttrVESWPortInfo, uint32(k.vport), nil,
			func(p *inbound, s vema.Status) {
				st.reading = false
				if n.state != NodeActive || st.info == nil {
					return
				}
				var pi vema.VESWPortInfo
				err := errors.New("short")
				if len(p.mad) >= vema.VendorHeaderLen {
					err = pi.UnmarshalBinary(p.mad[vema.VendorHeaderLen:])
				}
				lost := s != vema.StatusSuccess || err != nil || uint32(pi.VPort.EncapSLID) != n.lid
				if !lost && !st.infoOut && st.infoAck != nil && !bytes.Equal(emFieldsOf(pi), st.infoAck) {
					// Not what the node answered to the last Set: another
					// manager's Set, or an old one that arrived late.
					f.log.Info("VESWPortInfo not as pushed; pushing it again", zap.String("node", n.name),
						zap.Uint16("vesw", uint16(k.vesw)), zap.Uint8("vport", k.vport))
					f.pushMember(n, k, true)
					return
				}
				if !lost && (st.tableOut > 0 || st.tableRefused) {
					return // the table's answer is to come, or it was refused
				}
				switch got := pi.VPort.MACTblDigest; {
				case lost || got == 0 && st.digest != 0:
					f.log.Info("vport lost its state; configuring again", zap.String("node", n.name),
						zap.Uint16("vesw", uint16(k.vesw)), zap.Uint8("vport", k.vport), zap.Stringer("status", s))
					st.info = nil
					f.configureNode(n, true)
				case got != st.digest || st.digest == 0: // 0: never acknowledged
					f.log.Info("MAC table not as pushed; pushing it again", zap.String("node", n.name),
						zap.Uint16("vesw", uint16(k.vesw)), zap.Uint8("vport", k.vport))
					f.pushTable(n, k, true)
				}
			}, func() { st.reading = false })
	}
}

// sendDeletes sends n the DeleteVESWs it is owed and not waiting on, once
// their backoff is over. A vport the config now gives n again (another vesw)
// is deleted once, not retried, and a DeleteVESW of it still in flight is
// cancelled: the member's Set, sent after, makes it anew, and a late retry
// of the deletion would undo that.
func (f *FM) sendDeletes(n *node) {
	if n.state != NodeActive {
		return
	}
	if len(f.owed) > 0 {
		f.takeOwed(n)
	}
	dels := f.deletes[n.portGUID]
	if len(dels) == 0 {
		return
	}
	now := time.Now()
	changed := false
	used := map[uint8]bool{}
	for _, k := range f.memberKeys(n) {
		used[k.vport] = true
	}
	for vport, d := range dels {
		if used[vport] {
			if d.out {
				f.cancel(d.tid) // its retry would delete the port the Set makes
			}
			delete(dels, vport)
			changed = true
			f.log.Info("DeleteVESW", zap.String("node", n.name), zap.Uint16("vesw", uint16(d.vesw)), zap.Uint8("vport", vport))
			f.vendorMAD(n, vema.ClassVEMA, vema.MethodSet, vema.AttrDeleteVESW, uint32(vport), nil, nil, nil)
			continue
		}
		if d.out || d.retry.waiting(now) {
			continue
		}
		d.out = true
		f.log.Info("DeleteVESW", zap.String("node", n.name), zap.Uint16("vesw", uint16(d.vesw)), zap.Uint8("vport", vport))
		d.tid = f.vendorMAD(n, vema.ClassVEMA, vema.MethodSet, vema.AttrDeleteVESW, uint32(vport), nil,
			func(_ *inbound, s vema.Status) {
				// 0x001C: no such vport, which is as good.
				if dels[vport] == d {
					delete(dels, vport)
					f.saveMACs() // no longer owed
				}
			}, func() {
				d.out = false
				f.emFailed(n, &d.retry, "DeleteVESW")
			})
	}
	if len(dels) == 0 {
		delete(f.deletes, n.portGUID)
	}
	if changed {
		f.saveMACs()
	}
}

// oweDelete records a DeleteVESW of member k owed to its node, by name,
// until the node is active (takeOwed).
func (f *FM) oweDelete(k memberKey) {
	if f.owed == nil {
		f.owed = map[string]map[memberKey]bool{}
	}
	if f.owed[k.node] == nil {
		f.owed[k.node] = map[memberKey]bool{}
	}
	f.owed[k.node][k] = true
}

// vemaTrap handles a VEMA trap: on a unicast MAC change it reads the port's
// current MAC and pushes the vesw's MAC table to every member (§4.4).
func (f *FM) vemaTrap(p *inbound) {
	var t vema.TrapMAD
	if t.UnmarshalBinary(p.mad) != nil {
		f.BadMADs.Add(1)
		return
	}
	var n *node
	for _, o := range f.nodesWithLID(p.slid) {
		if o.state == NodeActive && o.lid == p.slid {
			n = o
		}
	}
	tr := t.Notice.Trap
	if n == nil {
		// Anyone may send one (the FM's HFI takes management packets from
		// any source): a counted drop, its warning rate-limited.
		f.BadMADs.Add(1)
		f.warn("trap", "VEMA trap from an unknown LID; dropped", zap.Stringer("lid", encap.LID(p.slid)), zap.Stringer("peer", p.src))
		return
	}
	if p.src != n.ep {
		// The node's LID from another endpoint: forged (a node's endpoint
		// is its port, as the fabric's SLID check would make it), or the
		// node moved and has not announced itself from there yet, which
		// it does within a poll round; a real trap is lost then.
		f.BadMADs.Add(1)
		f.warn("trap-source", "VEMA trap with a node's LID from another endpoint; dropped", zap.String("node", n.name),
			zap.Stringer("lid", encap.LID(p.slid)), zap.Stringer("peer", p.src), zap.Stringer("node_endpoint", n.ep))
		return
	}
	k := memberKey{tr.VESWID, n.cfgName, tr.VESWPortIndex}
	_, _, ok := f.member(k)
	f.log.Info("VEMA trap", zap.String("node", n.name), zap.Uint16("vesw", uint16(tr.VESWID)),
		zap.Uint8("vport", tr.VESWPortIndex), zap.Uint8("opcode", tr.Opcode))
	if !ok || tr.Opcode != vema.TrapIfaceUcastMACChange {
		return
	}
	st := f.members[k]
	if st == nil {
		st = &memberState{}
		f.members[k] = st
	}
	f.learnMAC(n, k, st)
}

// learnMAC reads the netdev MAC of member k (IfaceUcastMacs) after a trap
// said it changed, records it as the member's MAC and pushes it: the port's
// base_mac_addr and the vesw's MAC tables (§4.4). A Get whose tries are all
// lost is sent again from a later poll (learnPending, emFailed).
func (f *FM) learnMAC(n *node, k memberKey, st *memberState) {
	if st.learnOut {
		st.learnPending = true // read again once this one is answered
		return
	}
	st.learnOut, st.learnPending = true, false
	req := vema.IfaceMACsHeader{}
	data, _ := req.MarshalBinary()
	f.vendorMAD(n, vema.ClassVEMA, vema.MethodGet, vema.AttrIfaceUcastMACs, uint32(k.vport), data,
		func(p *inbound, s vema.Status) {
			st.learnOut = false
			if f.members[k] != st {
				return // removed by a reload meanwhile: keep no state for it
			}
			var l vema.IfaceMACs
			if s != vema.StatusSuccess || len(p.mad) < vema.VendorHeaderLen ||
				l.UnmarshalBinary(p.mad[vema.VendorHeaderLen:]) != nil || len(l.MACs) == 0 {
				f.log.Warn("IfaceUcastMacs Get failed", zap.String("node", n.name), zap.Stringer("status", s))
				return
			}
			// The netdev's MAC, read now, is what adoptThenPush would read:
			// the member needs no adopting, and the MAC file's entry from
			// the FM's start no longer stands for it (saveMACs).
			st.learned, st.adopted = l.MACs[0], true
			if v, m, ok := f.member(k); ok {
				if st.learned == f.configMAC(v, m, n) {
					st.learned = [6]byte{} // back to the config's MAC
				} else {
					f.warnSharedMAC(v, k, n, st.learned)
				}
				f.saveMACs()
				// base_mac_addr follows, so that a restarted FM finds the
				// MAC on the port (adoptThenPush) and a restarted node gets
				// it back.
				f.pushMember(n, k, false)
				f.pushVESWTables(v)
			}
			if st.learnPending { // another trap came meanwhile
				f.learnMAC(n, k, st)
			}
		}, func() {
			st.learnOut, st.learnPending = false, true
			f.emFailed(n, &st.retry, "IfaceUcastMacs Get")
		})
}

// warnSharedMAC warns when mac, which a user set on member k's netdev, is
// another active member's of the same vesw: every member's MAC table then
// holds it twice, and its frames go to whichever entry a lookup finds
// first. The EM learns it as the kernel's would; the warning says why
// traffic to one of the two ports goes astray.
func (f *FM) warnSharedMAC(v *VESWConfig, k memberKey, n *node, mac [6]byte) {
	for _, o := range v.Members {
		if o.Node == k.node && o.VPort == k.vport {
			continue
		}
		if on := f.activeNode(o.Node); on != nil && f.memberMAC(*v, o, on) == mac {
			f.warn("mac-shared", "a MAC set on a VNIC is another port's of the same vesw; frames to it reach only one of them",
				zap.String("node", n.name), zap.Uint8("vport", k.vport), zap.Uint16("vesw", uint16(k.vesw)),
				zap.String("mac", net.HardwareAddr(mac[:]).String()), zap.String("other_node", o.Node), zap.Uint8("other_vport", o.VPort))
			return
		}
	}
}

// Reload applies a new config (§4.5): removed members and the members of
// removed vesws get DeleteVESW, changed fields are pushed again, and the
// directory follows. The fm section's identity (name, LID, GUID, listen
// address, subnet prefix) cannot change without a restart; such a config is
// refused and the old one stays. (The name is in every log line and, as the
// node label, in the FM's HFI metrics, both fixed at start.)
func (f *FM) Reload(cfg *Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.cfg.FM
	switch {
	case cfg.FM.Name != o.Name:
		return fmt.Errorf("fm: reload: fm.name changed (%q -> %q); restart the FM to change it", o.Name, cfg.FM.Name)
	case cfg.FM.LID != o.LID:
		return fmt.Errorf("fm: reload: fm.lid changed (0x%X -> 0x%X); restart the FM to change it", o.LID, cfg.FM.LID)
	case cfg.FM.GUID != o.GUID:
		return errors.New("fm: reload: fm.guid changed; restart the FM to change it")
	case cfg.FM.Listen != o.Listen:
		return errors.New("fm: reload: fm.listen changed; restart the FM to change it")
	case cfg.FM.SubnetPrefix != o.SubnetPrefix:
		return errors.New("fm: reload: fm.subnet_prefix changed; restart the FM to change it")
	}
	old, oldIdx := f.cfg, f.index()
	f.cfg, f.idx = cfg, indexConfig(cfg)
	var relid []*node
	// A config node is one host: when the new config makes two active (or
	// joining) nodes match one entry (an entry added for a name two
	// unlisted hosts share, or a GUID changed), the one that matched it
	// before keeps it, else the lowest LID; the other stays an unlisted
	// node, as a join would leave it (§2.3).
	live := func(n *node) bool { return n.state == NodeActive || n.joining }
	match := make(map[*node]string, len(f.nodes))
	order := make([]*node, 0, len(f.nodes))
	for _, n := range f.nodes {
		match[n] = f.matchConfig(n)
		order = append(order, n)
	}
	kept := func(n *node) int { // 0: it matched this entry before the reload
		if live(n) && n.cfgName != "" && match[n] == n.cfgName {
			return 0
		}
		return 1
	}
	slices.SortFunc(order, func(a, b *node) int {
		return cmp.Or(cmp.Compare(kept(a), kept(b)), cmp.Compare(a.lid, b.lid), cmp.Compare(a.portGUID, b.portGUID))
	})
	taken := map[string]*node{}
	for _, n := range order {
		name := match[n]
		if o := taken[name]; o != nil && live(n) {
			f.warn("dup", "a second node matches a config node after the reload; it stays unlisted", zap.String("node", name),
				zap.Uint64("guid", n.portGUID), zap.Stringer("peer", n.ep),
				zap.Uint64("active_guid", o.portGUID), zap.Stringer("active_peer", o.ep))
			name = ""
		}
		if name != "" && live(n) {
			taken[name] = n
		}
		n.cfgName = name
	}
	f.renamed()
	for _, n := range f.nodes {
		if c, ok := f.idx.node(n.cfgName); ok && n.cfgName != "" && c.LID != 0 && c.LID != n.lid && n.state == NodeActive {
			relid = append(relid, n) // given a fixed LID it does not hold
		}
	}
	// Removed members: the node is owed a DeleteVESW, sent now if it is
	// active, else when it is again.
	var was map[string]*node // nodesIn(oldIdx), made at the first removed member
	for _, v := range old.VESWs {
		for _, m := range v.Members {
			k := memberKey{v.ID, m.Node, m.VPort}
			if _, _, still := f.member(k); still {
				continue
			}
			if st := f.members[k]; st != nil {
				// Its pushes in flight end: a retry that came after the
				// DeleteVESW would make the port again, and no poll
				// looks at it any more.
				if st.infoOut {
					f.cancel(st.infoTID)
				}
				for _, tid := range st.tableTIDs {
					f.cancel(tid)
				}
			}
			delete(f.members, k)
			delete(f.saved, k) // its learned MAC goes with it, as in f.members
			if was == nil {
				was = f.nodesIn(oldIdx)
			}
			n := was[m.Node]
			if n == nil {
				// A node not seen since the FM started may still
				// carry the port: owed by name until it is back.
				f.oweDelete(k)
				continue
			}
			if f.deletes[n.portGUID] == nil {
				f.deletes[n.portGUID] = map[uint8]*pendingDelete{}
			}
			f.deletes[n.portGUID][m.VPort] = &pendingDelete{vesw: v.ID, node: m.Node}
		}
	}
	for k, st := range f.members {
		st.infoRefused, st.tableRefused = false, false // a new config is worth trying what was refused
		if _, m, ok := f.member(k); ok && st.learned != ([6]byte{}) {
			if p, ok := oldIdx.members[k]; ok && old.VESWs[p[0]].Members[p[1]].MAC != m.MAC {
				st.learned = [6]byte{} // the config's new MAC replaces the one learned
			}
		}
	}
	f.pruneLIDs() // a smaller pool, or a LID now fixed, is no record's
	f.saveMACs()
	for _, n := range f.nodes {
		if n.state == NodeActive {
			f.configureNode(n, false)
		}
	}
	for _, n := range relid {
		f.log.Info("fixed LID changed; joining the node again", zap.String("node", n.name),
			zap.Stringer("lid", encap.LID(n.lid)))
		f.join(n, n.lid) // chooseLID gives it the fixed LID, taking it from a node that holds it
	}
	f.markDirty()
	f.log.Info("config reloaded", zap.Int("vesws", len(cfg.VESWs)), zap.Int("nodes", len(cfg.Nodes)))
	return nil
}

// nodesIn maps each config node name of x's config (the config before a
// reload renamed or removed nodes) to the node, active or lost, that was
// that config node, preferring an active one: one walk of the nodes, not
// one per removed member (which, each matching every node, made a reload
// that removed a vesw of 2048 members at MaxNodes take minutes).
func (f *FM) nodesIn(x *cfgIndex) map[string]*node {
	was := make(map[string]*node, len(x.nodes))
	for _, n := range f.nodes {
		if n.lid == 0 {
			continue
		}
		if name := x.match(n); was[name] == nil || n.state == NodeActive {
			was[name] = n
		}
	}
	return was
}
