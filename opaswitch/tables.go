package opaswitch

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Forwarding-table geometry, as the SMA's LinearForwardingTable and
// MulticastForwardingTable attributes address it (docs/fabric.md).
const (
	// LFTBlock is the number of one-byte entries in an LFT block: entry i
	// of block b is the egress port of DLID 64*b + i.
	LFTBlock = 64
	// MFTBlock is the number of multicast LIDs in an MFT block.
	MFTBlock = 8
	// Drop is the LFT entry of a DLID with no route; any entry above the
	// switch's port count drops too.
	Drop uint8 = 0xFF
	// SMAPort is the LFT entry (and MFT bit) that delivers to the
	// switch's own management port, port 0.
	SMAPort uint8 = 0

	// MaxUnicastLID is the highest unicast DLID an LFT covers: above it
	// starts the 16B multicast range (the fabric manager never assigns
	// more, docs/fabric.md).
	MaxUnicastLID = 0xEFFFFF
	// MulticastBase is the first 16B multicast DLID; MFT entry i is the
	// group DLID MulticastBase + i.
	MulticastBase = 0xF00000
	// MulticastCap is how many multicast LIDs the MFT holds
	// (SwitchInfo MulticastFDBCap): the 16K groups of the 16B range the
	// fabric manager uses.
	MulticastCap = 0x4000
	// Permissive is the DLID of directed-route SMPs.
	Permissive = 0xFFFFFF
)

// PortMask is the set of ports an MFT entry sends a group's packets to:
// port p is bit p%64 of word p/64 (the MFT's positions).
type PortMask [4]uint64

// Has reports whether port p is in the mask.
func (m *PortMask) Has(p int) bool { return p >= 0 && p < 256 && m[p>>6]&(1<<(p&63)) != 0 }

// Set adds port p (0..255) to the mask.
func (m *PortMask) Set(p int) {
	if p >= 0 && p < 256 {
		m[p>>6] |= 1 << (p & 63)
	}
}

// IsZero reports whether the mask is empty.
func (m *PortMask) IsZero() bool { return *m == PortMask{} }

// Errors of the table setters: a Set the SMA answers with an invalid-field
// status.
var (
	ErrLFTRange = errors.New("opaswitch: LFT block beyond the unicast LID range")
	ErrMFTRange = errors.New("opaswitch: MFT block beyond MulticastFDBCap")
)

// tables is a switch's forwarding state, read by the data plane without a
// lock: a snapshot that a Set replaces whole (the blocks it did not touch
// are shared with the old snapshot, and never written once published).
type tables struct {
	top uint32             // LinearFDBTop: the highest DLID the LFT routes
	lft []*[LFTBlock]uint8 // by block number; nil means every entry drops
	mft []*[MFTBlock]PortMask
}

// unicast returns the LFT entry for dlid: a port number, SMAPort, or Drop
// (also for a DLID above LinearFDBTop or in a block never set).
func (t *tables) unicast(dlid uint32) uint8 {
	if dlid > t.top {
		return Drop
	}
	b := dlid / LFTBlock
	if int(b) >= len(t.lft) || t.lft[b] == nil {
		return Drop
	}
	return t.lft[b][dlid%LFTBlock]
}

// multicast returns the MFT entry of the group DLID dlid (MulticastBase and
// up), or nil when the switch has none.
func (t *tables) multicast(dlid uint32) *PortMask {
	i := dlid - MulticastBase
	if dlid < MulticastBase || i >= MulticastCap {
		return nil
	}
	b := i / MFTBlock
	if int(b) >= len(t.mft) || t.mft[b] == nil {
		return nil
	}
	return &t.mft[b][i%MFTBlock]
}

// Tables holds a switch's LFT and MFT: the SMA sets them, block by block,
// and the data plane reads the current snapshot. The zero value routes
// nothing.
type Tables struct {
	mu  sync.Mutex // one Set at a time
	cur atomic.Pointer[tables]
}

func (t *Tables) load() *tables {
	if c := t.cur.Load(); c != nil {
		return c
	}
	return &tables{}
}

// Unicast returns the egress of dlid (see tables.unicast).
func (t *Tables) Unicast(dlid uint32) uint8 { return t.load().unicast(dlid) }

// Multicast returns the ports of group dlid (a copy), and whether the
// switch has an entry for it.
func (t *Tables) Multicast(dlid uint32) (PortMask, bool) {
	if m := t.load().multicast(dlid); m != nil {
		return *m, true
	}
	return PortMask{}, false
}

// LinearFDBTop returns the highest DLID the LFT routes.
func (t *Tables) LinearFDBTop() uint32 { return t.load().top }

// SetLinearFDBTop sets the highest DLID the LFT routes (SwitchInfo's
// LinearFDBTop); entries above it are kept but not used.
func (t *Tables) SetLinearFDBTop(top uint32) error {
	if top > MaxUnicastLID {
		return fmt.Errorf("%w: LinearFDBTop %#x", ErrLFTRange, top)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := *t.load()
	n.top = top
	t.cur.Store(&n)
	return nil
}

// LFTBlocks returns copies of n blocks from block first (all Drop where
// never set).
func (t *Tables) LFTBlocks(first, n int) ([][LFTBlock]uint8, error) {
	if first < 0 || n < 0 || (first+n)*LFTBlock > MaxUnicastLID+1 {
		return nil, fmt.Errorf("%w: blocks %d..%d", ErrLFTRange, first, first+n-1)
	}
	c := t.load()
	out := make([][LFTBlock]uint8, n)
	for i := range out {
		b := first + i
		if b < len(c.lft) && c.lft[b] != nil {
			out[i] = *c.lft[b]
		} else {
			out[i] = dropBlock
		}
	}
	return out, nil
}

var dropBlock = func() (b [LFTBlock]uint8) {
	for i := range b {
		b[i] = Drop
	}
	return b
}()

// SetLFTBlocks replaces the blocks from block first with blocks.
func (t *Tables) SetLFTBlocks(first int, blocks [][LFTBlock]uint8) error {
	if first < 0 || (first+len(blocks))*LFTBlock > MaxUnicastLID+1 {
		return fmt.Errorf("%w: blocks %d..%d", ErrLFTRange, first, first+len(blocks)-1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := *t.load()
	if need := first + len(blocks); need > len(n.lft) {
		n.lft = append(make([]*[LFTBlock]uint8, 0, need), n.lft...)
		n.lft = n.lft[:need]
	} else {
		n.lft = append([]*[LFTBlock]uint8(nil), n.lft...)
	}
	for i := range blocks {
		b := blocks[i]
		n.lft[first+i] = &b
	}
	t.cur.Store(&n)
	return nil
}

// MFTBlock returns a copy of the entries of block b (8 groups from group
// 8*b), the zero mask where never set.
func (t *Tables) MFTBlock(b int) ([MFTBlock]PortMask, error) {
	if b < 0 || b >= MulticastCap/MFTBlock {
		return [MFTBlock]PortMask{}, fmt.Errorf("%w: block %d", ErrMFTRange, b)
	}
	c := t.load()
	if b < len(c.mft) && c.mft[b] != nil {
		return *c.mft[b], nil
	}
	return [MFTBlock]PortMask{}, nil
}

// SetMFTBlock replaces the position-th 64-port word of the 8 entries of
// block b with words: the MFT attribute sets one position (ports
// 64*position .. 64*position+63) of a block at a time.
func (t *Tables) SetMFTBlock(b, position int, words [MFTBlock]uint64) error {
	if b < 0 || b >= MulticastCap/MFTBlock || position < 0 || position >= len(PortMask{}) {
		return fmt.Errorf("%w: block %d position %d", ErrMFTRange, b, position)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := *t.load()
	if b >= len(n.mft) {
		grown := make([]*[MFTBlock]PortMask, b+1)
		copy(grown, n.mft)
		n.mft = grown
	} else {
		n.mft = append([]*[MFTBlock]PortMask(nil), n.mft...)
	}
	var blk [MFTBlock]PortMask
	if old := n.mft[b]; old != nil {
		blk = *old
	}
	for j, w := range words {
		blk[j][position] = w
	}
	n.mft[b] = &blk
	t.cur.Store(&n)
	return nil
}
