package node

import (
	"net/netip"
	"slices"

	"github.com/opavnic/opavnic/vema"
)

// DirAssembler is the node side of the directory class: it collects the
// blocks of a generation and hands out the whole generation once it holds
// every DirectoryBlock and every MulticastBlock of it (each kind has at
// least one block; an empty one has count 0). Within one FM instance, a
// newer generation discards a partial older one, and a block of the
// installed generation or an older one (a late retry) is ignored, as is a
// block older than the partial generation. A block from another FM instance
// (a restarted FM) counts as newer whatever its generation. Not safe for
// concurrent use.
type DirAssembler struct {
	installed     uint32
	installedInst uint32
	have          bool // a generation was installed
	gen, inst     uint32
	uni           map[uint16][]vema.DirEntry
	uniN          uint16
	mc            map[uint16][]vema.DirGroup
	mcN           uint16
}

// Installed returns the generation last completed (0, false before any).
func (a *DirAssembler) Installed() (uint32, bool) { return a.installed, a.have }

func (a *DirAssembler) start(gen, inst uint32) {
	a.gen, a.inst, a.uni, a.mc, a.uniN, a.mcN = gen, inst, map[uint16][]vema.DirEntry{}, map[uint16][]vema.DirGroup{}, 0, 0
}

// AddDirectoryBlock adds a DirectoryBlock. done is true when it completed a
// generation; endpoints and groups are then that generation's whole
// directory. An error means the block is out of bounds (status 0x001C) and
// changes nothing the assembler holds; a stale block is ignored with no
// error.
func (a *DirAssembler) AddDirectoryBlock(b *vema.DirectoryBlock) (endpoints map[uint32]netip.AddrPort, groups map[uint32][]uint32, done bool, err error) {
	fresh, ok := a.accept(&b.DirBlockHeader)
	if !ok {
		return nil, nil, false, nil
	}
	held, heldN := a.uni, a.uniN
	if fresh {
		held, heldN = nil, 0
	}
	if heldN != 0 && heldN != b.NumBlocks {
		return nil, nil, false, vema.ErrDirBlock
	}
	if int(b.NumBlocks)*vema.MaxDirEntriesPerMAD > vema.MaxDirEntries+vema.MaxDirEntriesPerMAD-1 {
		return nil, nil, false, vema.ErrDirBounds
	}
	n := len(b.Entries)
	for blk, e := range held {
		if blk != b.Block { // a resent block replaces what it sent before
			n += len(e)
		}
	}
	if n > vema.MaxDirEntries {
		return nil, nil, false, vema.ErrDirBounds
	}
	if fresh {
		a.start(b.Generation, b.Instance)
	}
	a.uniN = b.NumBlocks
	a.uni[b.Block] = slices.Clone(b.Entries)
	return a.complete()
}

// AddMulticastBlock adds a MulticastBlock; as AddDirectoryBlock.
func (a *DirAssembler) AddMulticastBlock(b *vema.MulticastBlock) (endpoints map[uint32]netip.AddrPort, groups map[uint32][]uint32, done bool, err error) {
	fresh, ok := a.accept(&b.DirBlockHeader)
	if !ok {
		return nil, nil, false, nil
	}
	held, heldN := a.mc, a.mcN
	if fresh {
		held, heldN = nil, 0
	}
	if heldN != 0 && heldN != b.NumBlocks {
		return nil, nil, false, vema.ErrDirBlock
	}
	if int(b.NumBlocks) > vema.MaxDirGroups {
		return nil, nil, false, vema.ErrDirBounds
	}
	n := 0
	members := map[uint32]int{} // a group named in two blocks is merged: bound the sum
	count := func(gs []vema.DirGroup) bool {
		n += len(gs)
		for _, g := range gs {
			members[g.MLID] += len(g.Members)
			if members[g.MLID] > vema.MaxDirGroupMembers {
				return false
			}
		}
		return n <= vema.MaxDirGroups
	}
	if !count(b.Groups) {
		return nil, nil, false, vema.ErrDirBounds
	}
	for blk, gs := range held {
		if blk != b.Block && !count(gs) { // a resent block replaces what it sent before
			return nil, nil, false, vema.ErrDirBounds
		}
	}
	if fresh {
		a.start(b.Generation, b.Instance)
	}
	a.mcN = b.NumBlocks
	a.mc[b.Block] = b.Groups
	return a.complete()
}

// accept reports whether a block is to be kept (ok), and whether it starts a
// new partial generation (fresh: it is newer than the one being assembled,
// which the caller discards only once the block has passed its checks). A
// late retry of an older generation must not discard a newer partial one:
// that one would then never complete, every block of it having been
// answered.
func (a *DirAssembler) accept(h *vema.DirBlockHeader) (fresh, ok bool) {
	gen, inst := h.Generation, h.Instance
	if a.have && inst == a.installedInst && gen <= a.installed {
		return false, false
	}
	if a.uni != nil && inst == a.inst {
		if gen < a.gen {
			return false, false
		}
		if gen == a.gen {
			return false, true
		}
	}
	return true, true
}

func (a *DirAssembler) complete() (map[uint32]netip.AddrPort, map[uint32][]uint32, bool, error) {
	if a.uniN == 0 || a.mcN == 0 || len(a.uni) != int(a.uniN) || len(a.mc) != int(a.mcN) {
		return nil, nil, false, nil
	}
	eps := map[uint32]netip.AddrPort{}
	for _, es := range a.uni {
		for _, e := range es {
			eps[e.LID] = e.Addr
		}
	}
	groups := map[uint32][]uint32{}
	for _, gs := range a.mc {
		for _, g := range gs {
			groups[g.MLID] = append(groups[g.MLID], g.Members...)
		}
	}
	a.installed, a.installedInst, a.have = a.gen, a.inst, true
	a.uni, a.mc = nil, nil
	return eps, groups, true, nil
}
