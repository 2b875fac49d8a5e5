package node

import (
	"net/netip"

	"github.com/opavnic/opavnic/vema"
)

// put writes v at b[off:], the way wire vectors are written out by hand: one
// call per kernel field, at the kernel's offset.
func put(b []byte, off int, v ...byte) { copy(b[off:], v) }

// seq returns n bytes start, start+1, ... so that every byte of a field is
// distinct and a shifted field shows up.
func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// dirBlock is a one-block generation 258 of two unicast entries.
func dirBlock() vema.DirectoryBlock {
	return vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 258, NumBlocks: 1, Count: 2}, Entries: []vema.DirEntry{
		{LID: 1, Addr: netip.MustParseAddrPort("10.0.0.1:4793")},
		{LID: 0x10005, Addr: netip.MustParseAddrPort("[2001:db8::7]:1024")},
	}}
}

// mcBlock is block 1 of 2 of generation 258's multicast groups.
func mcBlock() vema.MulticastBlock {
	return vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 258, Block: 1, NumBlocks: 2, Count: 2}, Groups: []vema.DirGroup{
		{MLID: 0xF00001, Members: []uint32{1, 0x10005}}, {MLID: 0xF00002, Members: []uint32{1}},
	}}
}
