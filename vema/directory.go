package vema

import (
	"errors"
	"net/netip"
)

// The directory class (docs/management.md §3, emulation: no kernel counterpart).
// The FM tells each node the LID -> UDP endpoint of every member and the
// members of every multicast group with Sets of class 0x3F; the MAD has
// VEMA's 40-byte vendor header (OUI 00 06 6A) and 2048 bytes.
const (
	ClassDirectory        Class  = 0x3F
	DirectoryClassVersion uint8  = 0x80
	AttrDirectoryBlock    uint16 = 0xFF10
	AttrMulticastBlock    uint16 = 0xFF11

	DirBlockHeaderLen    = 16
	DirEntryLen          = 24
	MaxDirEntriesPerMAD  = (VEMADataLen - DirBlockHeaderLen) / DirEntryLen // 83
	MaxDirEntries        = 4096                                            // unicast entries in a generation
	MaxDirGroups         = 256                                             // groups in a generation
	dirGroupHeaderLen    = 8
	maxDirGroupDataBytes = VEMADataLen - DirBlockHeaderLen
	// MaxDirGroupMembers bounds the members of one group: a group does not
	// span blocks, so it is what one block holds, (2008-16-8)/4 = 496.
	MaxDirGroupMembers = (maxDirGroupDataBytes - dirGroupHeaderLen) / 4
)

// Directory errors.
var (
	ErrDirBlock  = errors.New("vema: bad directory block")
	ErrDirBounds = errors.New("vema: directory beyond its bounds")
)

// DirBlockHeader starts the data of a DirectoryBlock and of a MulticastBlock:
//
//	off size field
//	  0    4 generation
//	  4    2 block        (0-based)
//	  6    2 num_blocks   (of this kind in the generation, >= 1)
//	  8    2 count        (num_entries or num_groups)
//	 10    4 fm_instance  (the FM run that made the generation; 0: none)
//	 14    2 reserved
//
// Generations are ordered within one fm_instance only: a restarted FM (a
// new instance) may count from below what its predecessor reached.
type DirBlockHeader struct {
	Generation uint32
	Block      uint16
	NumBlocks  uint16
	Count      uint16
	Instance   uint32
	Reserved   [2]byte
}

func (h *DirBlockHeader) appendTo(b []byte) []byte {
	b = be.AppendUint32(b, h.Generation) // 0
	b = be.AppendUint16(b, h.Block)      // 4
	b = be.AppendUint16(b, h.NumBlocks)  // 6
	b = be.AppendUint16(b, h.Count)      // 8
	b = be.AppendUint32(b, h.Instance)   // 10
	return append(b, h.Reserved[:]...)   // 14
}

func (h *DirBlockHeader) decode(d *dec) {
	h.Generation = d.u32()
	h.Block = d.u16()
	h.NumBlocks = d.u16()
	h.Count = d.u16()
	h.Instance = d.u32()
	d.read(h.Reserved[:])
}

func (h *DirBlockHeader) check() error {
	if h.NumBlocks == 0 || h.Block >= h.NumBlocks {
		return ErrDirBlock
	}
	return nil
}

// DirEntry is one unicast directory entry (24 bytes):
//
//	off size field
//	  0    4 LID (16B form)
//	  4   16 address (IPv6; IPv4 as ::ffff:a.b.c.d)
//	 20    2 port
//	 22    2 flags (0)
type DirEntry struct {
	LID   uint32
	Addr  netip.AddrPort
	Flags uint16
}

// DirectoryBlock is the data of attribute 0xFF10.
type DirectoryBlock struct {
	DirBlockHeader
	Entries []DirEntry
}

// AppendBinary appends the block to b. Count is taken from len(Entries).
func (m *DirectoryBlock) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Entries) > MaxDirEntriesPerMAD {
		return b, ErrTooManyEntries
	}
	h := m.DirBlockHeader
	h.Count = uint16(len(m.Entries))
	b = h.appendTo(b)
	for _, e := range m.Entries {
		b = be.AppendUint32(b, e.LID)
		a := e.Addr.Addr().As16() // IPv4 comes out as ::ffff:a.b.c.d
		b = append(b, a[:]...)
		b = be.AppendUint16(b, e.Addr.Port())
		b = be.AppendUint16(b, e.Flags)
	}
	return b, nil
}

// MarshalBinary returns the encoded block.
func (m *DirectoryBlock) MarshalBinary() ([]byte, error) {
	return marshal(DirBlockHeaderLen+DirEntryLen*len(m.Entries), m.AppendBinary)
}

// UnmarshalBinary decodes a block from a data area. It checks the header
// (block < num_blocks, num_blocks >= 1) and the entry count (<= 83).
func (m *DirectoryBlock) UnmarshalBinary(b []byte) error {
	if len(b) < DirBlockHeaderLen {
		return errShort("DirectoryBlock", DirBlockHeaderLen, len(b))
	}
	d := dec{b}
	var h DirBlockHeader
	h.decode(&d)
	if err := h.check(); err != nil {
		return err
	}
	if h.Count > MaxDirEntriesPerMAD {
		return ErrTooManyEntries
	}
	if need := DirBlockHeaderLen + DirEntryLen*int(h.Count); len(b) < need {
		return errShort("DirectoryBlock", need, len(b))
	}
	ents := make([]DirEntry, h.Count)
	for i := range ents {
		ents[i].LID = d.u32()
		var a [16]byte
		d.read(a[:])
		port := d.u16()
		ents[i].Addr = netip.AddrPortFrom(netip.AddrFrom16(a).Unmap(), port)
		ents[i].Flags = d.u16()
	}
	m.DirBlockHeader, m.Entries = h, ents
	return nil
}

// DirGroup is one multicast group of a MulticastBlock:
//
//	off size field
//	  0    4 MLID (16B multicast)
//	  4    2 num_members
//	  6    2 reserved
//	  8  4*n members (16B unicast LIDs)
type DirGroup struct {
	MLID    uint32
	Members []uint32
}

// MulticastBlock is the data of attribute 0xFF11. Groups do not span blocks.
type MulticastBlock struct {
	DirBlockHeader
	Groups []DirGroup
}

// Len is the encoded size.
func (m *MulticastBlock) Len() int {
	n := DirBlockHeaderLen
	for _, g := range m.Groups {
		n += dirGroupHeaderLen + 4*len(g.Members)
	}
	return n
}

// AppendBinary appends the block to b; ErrTooLong when it does not fit a
// MAD's data area. Count is taken from len(Groups).
func (m *MulticastBlock) AppendBinary(b []byte) ([]byte, error) {
	if m.Len() > VEMADataLen {
		return b, ErrTooLong
	}
	h := m.DirBlockHeader
	h.Count = uint16(len(m.Groups))
	b = h.appendTo(b)
	for _, g := range m.Groups {
		b = be.AppendUint32(b, g.MLID)
		b = be.AppendUint16(b, uint16(len(g.Members)))
		b = append(b, 0, 0)
		for _, l := range g.Members {
			b = be.AppendUint32(b, l)
		}
	}
	return b, nil
}

// MarshalBinary returns the encoded block.
func (m *MulticastBlock) MarshalBinary() ([]byte, error) { return marshal(m.Len(), m.AppendBinary) }

// UnmarshalBinary decodes a block from a data area (at most 2008 bytes are
// read). It checks the header and that every group fits the data area.
func (m *MulticastBlock) UnmarshalBinary(b []byte) error {
	if len(b) < DirBlockHeaderLen {
		return errShort("MulticastBlock", DirBlockHeaderLen, len(b))
	}
	if len(b) > VEMADataLen {
		b = b[:VEMADataLen]
	}
	d := dec{b}
	var h DirBlockHeader
	h.decode(&d)
	if err := h.check(); err != nil {
		return err
	}
	if int(h.Count)*dirGroupHeaderLen > maxDirGroupDataBytes {
		return ErrTooManyEntries
	}
	groups := make([]DirGroup, 0, h.Count)
	for range h.Count {
		if len(d.b) < dirGroupHeaderLen {
			return errShort("MulticastBlock group", dirGroupHeaderLen, len(d.b))
		}
		g := DirGroup{MLID: d.u32()}
		n := int(d.u16())
		d.u16()
		if n > MaxDirGroupMembers {
			return ErrDirBounds
		}
		if len(d.b) < 4*n {
			return errShort("MulticastBlock members", 4*n, len(d.b))
		}
		g.Members = make([]uint32, n)
		for i := range g.Members {
			g.Members[i] = d.u32()
		}
		groups = append(groups, g)
	}
	m.DirBlockHeader, m.Groups = h, groups
	return nil
}
