package fm

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"

	"github.com/opavnic/opavnic/vema"
)

// The directory class (PROTOCOL.md §3, emulation): class 0x3F, class version
// 0x80, vendor header as VEMA's (OUI 00 06 6A at MAD bytes 37-39), Sets of
// DirectoryBlock and MulticastBlock with attr_mod = block index. This is the
// FM's own encoder (and a decoder for tests); the node side has its own.
const (
	classDirectory       vema.Class = 0x3F
	attrDirectoryBlock   uint16     = 0xFF10
	attrMulticastBlock   uint16     = 0xFF11
	dirBlockHeaderLen               = 16 // generation, block, num_blocks, count, 6 reserved
	dirEntryLen                     = 24 // LID BE32, address [16], port BE16, flags BE16
	dirEntriesPerBlock              = 83 // (2008 - 16) / 24
	dirGroupHeaderLen               = 8  // MLID BE32, num_members BE16, 2 reserved
	dirBlockDataCapacity            = vema.VEMADataLen - dirBlockHeaderLen
	maxDirectoryEntries             = 4096
	maxDirectoryGroups              = 256
	maxGroupMembers                 = 1024
)

var errDirectoryTooBig = errors.New("fm: directory exceeds the protocol's bounds (4096 LIDs, 256 groups, 1024 members)")

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

// appendData appends the block's data area (what goes at MAD byte 40).
func (b *dirBlock) appendData(dst []byte) []byte {
	be := binary.BigEndian
	dst = be.AppendUint32(dst, b.Generation)
	dst = be.AppendUint16(dst, b.Block)
	dst = be.AppendUint16(dst, b.NumBlocks)
	if b.Attr == attrDirectoryBlock {
		dst = be.AppendUint16(dst, uint16(len(b.Entries)))
	} else {
		dst = be.AppendUint16(dst, uint16(len(b.Groups)))
	}
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	for _, e := range b.Entries {
		dst = be.AppendUint32(dst, e.LID)
		a := e.EP.Addr().As16() // IPv4 as ::ffff:a.b.c.d
		dst = append(dst, a[:]...)
		dst = be.AppendUint16(dst, e.EP.Port())
		dst = be.AppendUint16(dst, 0)
	}
	for _, g := range b.Groups {
		dst = be.AppendUint32(dst, g.MLID)
		dst = be.AppendUint16(dst, uint16(len(g.Members)))
		dst = append(dst, 0, 0)
		for _, m := range g.Members {
			dst = be.AppendUint32(dst, m)
		}
	}
	return dst
}

// parseDirBlock decodes a block's data area for attribute attr.
func parseDirBlock(attr uint16, d []byte) (dirBlock, error) {
	be := binary.BigEndian
	if len(d) < dirBlockHeaderLen {
		return dirBlock{}, errShortBlock
	}
	b := dirBlock{Attr: attr, Generation: be.Uint32(d), Block: be.Uint16(d[4:]), NumBlocks: be.Uint16(d[6:])}
	n := int(be.Uint16(d[8:]))
	d = d[dirBlockHeaderLen:]
	switch attr {
	case attrDirectoryBlock:
		if len(d) < n*dirEntryLen {
			return b, errShortBlock
		}
		for i := range n {
			e := d[i*dirEntryLen:]
			a := netip.AddrFrom16([16]byte(e[4:20])).Unmap()
			b.Entries = append(b.Entries, dirEntry{LID: be.Uint32(e), EP: netip.AddrPortFrom(a, be.Uint16(e[20:]))})
		}
	case attrMulticastBlock:
		for range n {
			if len(d) < dirGroupHeaderLen {
				return b, errShortBlock
			}
			g := dirGroup{MLID: be.Uint32(d)}
			k := int(be.Uint16(d[4:]))
			d = d[dirGroupHeaderLen:]
			if len(d) < 4*k {
				return b, errShortBlock
			}
			for j := range k {
				g.Members = append(g.Members, be.Uint32(d[4*j:]))
			}
			d = d[4*k:]
			b.Groups = append(b.Groups, g)
		}
	default:
		return b, errors.New("fm: not a directory attribute")
	}
	return b, nil
}

var errShortBlock = errors.New("fm: short directory block")
