package fm

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/opavnic/opavnic/vema"
)

// The directory class (docs/management.md §3, emulation): class 0x3F, class version
// 0x80, vendor header as VEMA's (OUI 00 06 6A at MAD bytes 37-39), Sets of
// DirectoryBlock and MulticastBlock with attr_mod = block index. This is the
// FM's own encoder; the node side is vema/node's DirAssembler.
// The directory class's wire format is package vema's (DirectoryBlock,
// MulticastBlock); here the FM splits a generation into blocks.
const (
	classDirectory       = vema.ClassDirectory
	attrDirectoryBlock   = vema.AttrDirectoryBlock
	attrMulticastBlock   = vema.AttrMulticastBlock
	dirEntriesPerBlock   = vema.MaxDirEntriesPerMAD
	dirGroupHeaderLen    = 8 // MLID BE32, num_members BE16, 2 reserved
	dirBlockDataCapacity = vema.VEMADataLen - vema.DirBlockHeaderLen
	maxDirectoryEntries  = vema.MaxDirEntries
	maxDirectoryGroups   = vema.MaxDirGroups
	maxGroupMembers      = vema.MaxDirGroupMembers
)

var errDirectoryTooBig = errors.New("fm: directory exceeds the protocol's bounds (4096 LIDs, 256 groups, 496 members per group)")

// dirEntry is one LID -> endpoint entry (16B LID).
type dirEntry struct {
	LID uint32
	EP  netip.AddrPort
}

// dirGroup is one multicast group (16B LIDs).
type dirGroup struct {
	MLID    uint32
	Members []uint32
}

// dirBlock is the data of one DirectoryBlock or MulticastBlock Set.
type dirBlock struct {
	Attr       uint16
	Generation uint32
	Instance   uint32 // the FM run's fm_instance
	Block      uint16
	NumBlocks  uint16
	Entries    []dirEntry // DirectoryBlock
	Groups     []dirGroup // MulticastBlock
}

// directoryBlocks splits a directory generation into its blocks: the
// DirectoryBlocks (83 entries each, at least one so an empty fabric still
// installs) and the MulticastBlocks (groups never span blocks; at least one).
// Entries and groups are sorted by LID so equal directories encode equally.
func directoryBlocks(gen uint32, entries []dirEntry, groups []dirGroup) ([]dirBlock, error) {
	if len(entries) > maxDirectoryEntries || len(groups) > maxDirectoryGroups {
		return nil, errDirectoryTooBig
	}
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b dirEntry) int { return int(a.LID) - int(b.LID) })
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(a, b dirGroup) int { return int(a.MLID) - int(b.MLID) })
	var ub []dirBlock
	for i := 0; i == 0 || i < len(entries); i += dirEntriesPerBlock {
		end := min(i+dirEntriesPerBlock, len(entries))
		ub = append(ub, dirBlock{Attr: attrDirectoryBlock, Generation: gen, Block: uint16(len(ub)), Entries: entries[i:end]})
	}
	var mb []dirBlock
	cur := dirBlock{Attr: attrMulticastBlock, Generation: gen}
	used := 0
	for _, g := range groups {
		if len(g.Members) > maxGroupMembers {
			return nil, errDirectoryTooBig
		}
		need := dirGroupHeaderLen + 4*len(g.Members)
		if used+need > dirBlockDataCapacity && len(cur.Groups) > 0 {
			mb = append(mb, cur)
			cur = dirBlock{Attr: attrMulticastBlock, Generation: gen, Block: uint16(len(mb))}
			used = 0
		}
		cur.Groups = append(cur.Groups, g)
		used += need
	}
	mb = append(mb, cur)
	for i := range ub {
		ub[i].NumBlocks = uint16(len(ub))
	}
	for i := range mb {
		mb[i].NumBlocks = uint16(len(mb))
	}
	return append(ub, mb...), nil
}

// appendData appends the block's MAD data area (vema's codecs).
func (b *dirBlock) appendData(dst []byte) ([]byte, error) {
	h := vema.DirBlockHeader{Generation: b.Generation, Block: b.Block, NumBlocks: b.NumBlocks, Instance: b.Instance}
	var err error
	if b.Attr == attrDirectoryBlock {
		m := vema.DirectoryBlock{DirBlockHeader: h, Entries: make([]vema.DirEntry, len(b.Entries))}
		for i, e := range b.Entries {
			m.Entries[i] = vema.DirEntry{LID: e.LID, Addr: e.EP}
		}
		dst, err = m.AppendBinary(dst)
	} else {
		m := vema.MulticastBlock{DirBlockHeader: h, Groups: make([]vema.DirGroup, len(b.Groups))}
		for i, g := range b.Groups {
			m.Groups[i] = vema.DirGroup{MLID: g.MLID, Members: g.Members}
		}
		dst, err = m.AppendBinary(dst)
	}
	return dst, err
}
