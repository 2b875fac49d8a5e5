package fm

import (
	"cmp"
	"slices"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
)

// Saved LIDs (docs/management.md §2.3), as OpenSM's guid2lid file: the pool LID
// the FM last gave each port GUID, kept in the state file (state.go) so
// that a node that comes back without a LID after the FM restarted (a rack
// power cycle) gets the LID, and so the LID-derived MACs, it had.
//
// A record is made when a node joins with a pool LID (one its config entry
// does not fix), and holds one LID per GUID and one GUID per LID. used
// orders the records for reuse: it is raised when the node joins and when
// it is lost, so the smallest is the LID whose node was seen longest ago.

// savedLID is one record: the LID and when it was last used.
type savedLID struct {
	lid  uint32
	used uint64
}

// lidBound is how many records the FM keeps: one per node it can hold, and
// no more than the pool has LIDs.
func (f *FM) lidBound() int {
	if size := uint64(f.cfg.Pool.End) - uint64(f.cfg.Pool.Start) + 1; size < MaxNodes {
		return int(size)
	}
	return MaxNodes
}

// fixedLIDConfig reports whether n matches a config entry with a fixed LID.
func (f *FM) fixedLIDConfig(n *node) bool {
	c, ok := f.index().node(n.cfgName)
	return ok && n.cfgName != "" && c.LID != 0
}

// recordLID records that n joined with its LID (f.mu held): a pool LID
// becomes n's record, taken from any other GUID; a fixed LID, or one
// outside the pool, ends n's record.
func (f *FM) recordLID(n *node) {
	if f.fixedLIDConfig(n) || !f.cfg.Pool.Contains(n.lid) || n.lid == f.cfg.FM.LID {
		f.forgetLID(n.portGUID)
		return
	}
	if old, ok := f.lidRecs[n.portGUID]; ok && old.lid != n.lid {
		delete(f.lidOwner, old.lid)
	}
	if g, ok := f.lidOwner[n.lid]; ok && g != n.portGUID {
		delete(f.lidRecs, g)
	}
	f.lidSeq++
	f.lidRecs[n.portGUID] = savedLID{lid: n.lid, used: f.lidSeq}
	f.lidOwner[n.lid] = n.portGUID
	f.lidsDirty = true
	for len(f.lidRecs) > f.lidBound() {
		if !f.dropLRU(n.portGUID) {
			break // only n's own record is left
		}
	}
}

// touchLID marks n's record used now (n is lost: the last time it was
// seen), f.mu held.
func (f *FM) touchLID(n *node) {
	if r, ok := f.lidRecs[n.portGUID]; ok && r.lid == n.lid {
		f.lidSeq++
		r.used = f.lidSeq
		f.lidRecs[n.portGUID] = r
		f.lidsDirty = true
	}
}

// forgetLID ends guid's record, if any (f.mu held).
func (f *FM) forgetLID(guid uint64) {
	if r, ok := f.lidRecs[guid]; ok {
		delete(f.lidRecs, guid)
		if f.lidOwner[r.lid] == guid {
			delete(f.lidOwner, r.lid)
		}
		f.lidsDirty = true
	}
}

// dropLRU ends the least recently used record other than keep's, preferring one
// whose node does not hold its LID now (f.mu held); false when there is none.
func (f *FM) dropLRU(keep uint64) bool {
	var victim uint64
	var best savedLID
	bestHeld, found := false, false
	for g, r := range f.lidRecs {
		if g == keep {
			continue
		}
		o := f.nodes[g]
		held := o != nil && o.lid == r.lid && (o.state == NodeActive || o.joining)
		if !found || (!held && bestHeld) || (held == bestHeld && (r.used < best.used || r.used == best.used && g < victim)) {
			victim, best, bestHeld, found = g, r, held, true
		}
	}
	if found {
		f.forgetLID(victim)
	}
	return found
}

// savedLIDFree returns the LID saved for n if it may have it now: in the
// pool and not in taken.
func (f *FM) savedLIDFree(n *node, taken map[uint32]bool) (uint32, bool) {
	r, ok := f.lidRecs[n.portGUID]
	if !ok || !f.cfg.Pool.Contains(r.lid) || !encap.Is16BUnicast(r.lid) || taken[r.lid] {
		return 0, false
	}
	return r.lid, true
}

// reuseLRU returns, when the pool has no LID left that no record holds,
// the free LID of the least recently used record, and ends that record:
// its node, absent, gets another LID when it is back (f.mu held).
func (f *FM) reuseLRU(n *node, taken map[uint32]bool) (uint32, bool) {
	var victim uint64
	var best savedLID
	found := false
	for g, r := range f.lidRecs {
		if g == n.portGUID || taken[r.lid] || !f.cfg.Pool.Contains(r.lid) || !encap.Is16BUnicast(r.lid) {
			continue
		}
		if !found || r.used < best.used || r.used == best.used && g < victim {
			victim, best, found = g, r, true
		}
	}
	if !found {
		return 0, false
	}
	f.log.Info("LID pool exhausted; reusing the saved LID of the node seen longest ago",
		zap.Stringer("lid", encap.LID(best.lid)), zap.Uint64("guid", victim), zap.Uint64("new_guid", n.portGUID))
	f.forgetLID(victim)
	return best.lid, true
}

// pruneLIDs makes the records fit the config (f.mu held), at start and
// after a reload: a LID out of the pool, the FM's, or fixed for a config
// entry is no one's record; neither is a GUID whose config entry fixes its
// LID; and no more than lidBound records are kept, the most recently used.
func (f *FM) pruneLIDs() {
	fixed := make(map[uint32]bool, len(f.cfg.Nodes))
	fixedGUID := make(map[uint64]bool, len(f.cfg.Nodes))
	for _, c := range f.cfg.Nodes {
		if c.LID != 0 {
			fixed[c.LID] = true
			if c.GUID != 0 {
				fixedGUID[c.GUID] = true
			}
		}
	}
	for g, r := range f.lidRecs {
		n := f.nodes[g]
		if !f.cfg.Pool.Contains(r.lid) || r.lid == f.cfg.FM.LID || fixed[r.lid] || fixedGUID[g] ||
			(n != nil && n.nodeGUID != 0 && fixedGUID[n.nodeGUID]) || (n != nil && f.fixedLIDConfig(n)) {
			f.forgetLID(g)
		}
	}
	if extra := len(f.lidRecs) - f.lidBound(); extra > 0 {
		for _, x := range byUse(f.lidRecs)[:extra] {
			f.forgetLID(x.guid)
		}
	}
}

// guidLID is a record with its GUID.
type guidLID struct {
	guid uint64
	rec  savedLID
}

// byUse returns the records least recently used first (by GUID among
// equals).
func byUse(recs map[uint64]savedLID) []guidLID {
	all := make([]guidLID, 0, len(recs))
	for g, r := range recs {
		all = append(all, guidLID{g, r})
	}
	slices.SortFunc(all, func(a, b guidLID) int {
		return cmp.Or(cmp.Compare(a.rec.used, b.rec.used), cmp.Compare(a.guid, b.guid))
	})
	return all
}

// setLIDRecords replaces the records with recs (read from the state file)
// and fits them to the config (f.mu held). used is renumbered 1..len in
// its order, so the counter never starts near its end.
func (f *FM) setLIDRecords(recs map[uint64]savedLID) {
	all := byUse(recs)
	f.lidRecs = make(map[uint64]savedLID, len(all))
	f.lidOwner = make(map[uint32]uint64, len(all))
	f.lidSeq = 0
	for _, x := range all {
		f.lidSeq++
		f.lidRecs[x.guid] = savedLID{lid: x.rec.lid, used: f.lidSeq}
		f.lidOwner[x.rec.lid] = x.guid
	}
	f.pruneLIDs() // what it drops is written at the first tick
}
