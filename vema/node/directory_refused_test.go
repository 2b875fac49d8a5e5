package node

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/vema"
)

// A block the assembler refuses (0x001C) changes nothing it holds
// (README "Limits": past a bound the input is refused and nothing already
// held changes): not the generation being assembled, even when the refused
// block names a newer generation or another FM instance, and not a block of
// that generation it already holds.
func TestDirAssemblerRefusedBlockKeepsPartial(t *testing.T) {
	ep := netip.MustParseAddrPort("10.0.0.1:4793")
	uni := func(gen, inst uint32, block, n uint16, lid uint32) *vema.DirectoryBlock {
		return &vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, Block: block, NumBlocks: n, Instance: inst},
			Entries: []vema.DirEntry{{LID: lid, Addr: ep}}}
	}
	mc := func(gen, inst uint32, block, n uint16, gs ...vema.DirGroup) *vema.MulticastBlock {
		return &vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, Block: block, NumBlocks: n, Instance: inst}, Groups: gs}
	}
	big := make([]uint32, 300) // two of these in one group: 600 > 496 members
	for i := range big {
		big[i] = uint32(0x100 + i)
	}
	for _, tc := range []struct {
		name string
		bad  func(a *DirAssembler) error
	}{
		{"a newer generation with too many blocks", func(a *DirAssembler) error {
			_, _, _, err := a.AddDirectoryBlock(uni(11, 7, 0, 60, 0x30))
			return err
		}},
		{"another FM instance with too many blocks", func(a *DirAssembler) error {
			_, _, _, err := a.AddDirectoryBlock(uni(3, 8, 0, 60, 0x30))
			return err
		}},
		{"a newer generation with too many multicast blocks", func(a *DirAssembler) error {
			_, _, _, err := a.AddMulticastBlock(mc(11, 7, 0, 300))
			return err
		}},
		{"the same generation, another num_blocks", func(a *DirAssembler) error {
			_, _, _, err := a.AddDirectoryBlock(uni(10, 7, 0, 3, 0x30))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a DirAssembler
			// Generation 10 of instance 7: two DirectoryBlocks, one MulticastBlock.
			if _, _, done, err := a.AddDirectoryBlock(uni(10, 7, 0, 2, 0x10)); done || err != nil {
				t.Fatal(done, err)
			}
			if err := tc.bad(&a); !errors.Is(err, vema.ErrDirBounds) && !errors.Is(err, vema.ErrDirBlock) {
				t.Fatalf("bad block: %v, want it refused", err)
			}
			if _, _, done, err := a.AddDirectoryBlock(uni(10, 7, 1, 2, 0x11)); done || err != nil {
				t.Fatal(done, err)
			}
			eps, _, done, err := a.AddMulticastBlock(mc(10, 7, 0, 1))
			if !done || err != nil || len(eps) != 2 {
				t.Fatalf("generation 10 after a refused block: done %v err %v endpoints %v", done, err, eps)
			}
		})
	}
	t.Run("a resent block over the member bound", func(t *testing.T) {
		var a DirAssembler
		a.AddDirectoryBlock(uni(10, 7, 0, 1, 0x10))
		g1 := vema.DirGroup{MLID: 0xF00001, Members: big[:10]}
		if _, _, _, err := a.AddMulticastBlock(mc(10, 7, 0, 3, g1)); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := a.AddMulticastBlock(mc(10, 7, 1, 3, vema.DirGroup{MLID: 0xF00002, Members: big})); err != nil {
			t.Fatal(err)
		}
		// Block 0 again, now naming group 2 with 250 more: 550 in all.
		g2 := vema.DirGroup{MLID: 0xF00002, Members: big[:250]}
		if _, _, _, err := a.AddMulticastBlock(mc(10, 7, 0, 3, g1, g2)); !errors.Is(err, vema.ErrDirBounds) {
			t.Fatalf("550 members: %v", err)
		}
		// Block 0 as first sent still counts.
		_, groups, done, err := a.AddMulticastBlock(mc(10, 7, 2, 3))
		if !done || err != nil || len(groups[0xF00001]) != 10 || len(groups[0xF00002]) != 300 {
			t.Fatalf("generation 10: done %v err %v groups %d/%d members", done, err, len(groups[0xF00001]), len(groups[0xF00002]))
		}
	})
}
