package node

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/vema"
)

func TestDirAssembler(t *testing.T) {
	var a DirAssembler
	v, mv := dirBlock(), mcBlock()
	if _, _, done, err := a.AddDirectoryBlock(&v); done || err != nil {
		t.Fatal("done without multicast blocks")
	}
	if _, _, done, _ := a.AddMulticastBlock(&mv); done {
		t.Fatal("done with 1 of 2 multicast blocks")
	}
	m0 := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 258, NumBlocks: 2}}
	eps, groups, done, err := a.AddMulticastBlock(&m0)
	if !done || err != nil || len(eps) != 2 || eps[0x10005].Port() != 1024 || len(groups[0xF00001]) != 2 {
		t.Fatalf("generation 258: %v %v %v %v", done, err, eps, groups)
	}
	if g, ok := a.Installed(); !ok || g != 258 {
		t.Fatal("installed")
	}
	// Older generation: ignored. A newer one discards a partial one.
	old := v
	old.Generation = 257
	if _, _, done, err := a.AddDirectoryBlock(&old); done || err != nil {
		t.Fatal("old generation")
	}
	p := mv
	p.Generation = 300
	a.AddMulticastBlock(&p)
	n := v
	n.Generation = 301
	m1 := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 301, NumBlocks: 1}}
	a.AddDirectoryBlock(&n)
	if _, _, done, _ := a.AddMulticastBlock(&m1); !done {
		t.Fatal("generation 301")
	}
	// Too many entries in a generation.
	big := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 400, NumBlocks: 60}}
	if _, _, _, err := a.AddDirectoryBlock(&big); !errors.Is(err, vema.ErrDirBounds) {
		t.Fatalf("60 blocks: %v", err)
	}
}

// FuzzDirAssembler feeds whatever decodes as a directory or multicast block
// to an assembler, as a node does with each block the FM sends.
func FuzzDirAssembler(f *testing.F) {
	d, m := dirBlock(), mcBlock()
	w, err := d.MarshalBinary()
	mw, merr := m.MarshalBinary()
	if err != nil || merr != nil {
		f.Fatal(err, merr)
	}
	f.Add(w)
	f.Add(mw)
	f.Fuzz(func(t *testing.T, b []byte) {
		var a DirAssembler
		var d vema.DirectoryBlock
		if d.UnmarshalBinary(b) == nil {
			a.AddDirectoryBlock(&d)
		}
		var m vema.MulticastBlock
		if m.UnmarshalBinary(b) == nil {
			a.AddMulticastBlock(&m)
		}
	})
}

func FuzzAgentSMA(f *testing.F) {
	f.Add(vemaReq(0x02, 0x0012, 1, []byte{0, 2, 0, 3}))
	f.Add(drSMP(0x02, 0x0015, 0x01000001, make([]byte, 242)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := NewAgent(newFakePorts(), nil)
		a.Handle(vemaReq(0x02, 0x0011, 1, setInfoData()))
		// 2048 bytes, but for a Get or Set no agent takes (another class
		// version or OUI), which the MAD core answers with the 24-byte
		// common header (generate_unmatched_resp).
		if r, ok := a.Handle(b); ok && len(r) != vema.MADSize {
			if len(r) != vema.MADHeaderLen || b[2] == vema.VEMAClassVersion && vema.OUI(b[37:40]) == vema.IntelOUI {
				t.Fatalf("VEMA response of %d bytes", len(r))
			}
		}
		s := NewSMA(1, 2, "x", SMAPort{}, nil)
		if r, ok := s.Handle(b); ok && len(r)%8 != 0 {
			t.Fatal("SMP response not a multiple of 8")
		}
	})
}

// A late retry of an older generation (the FM retries a block whose answer
// was lost) must not discard the newer generation being assembled; a block
// from another FM instance (a restarted FM) is taken whatever its
// generation.
func TestDirAssemblerGenerations(t *testing.T) {
	ep := netip.MustParseAddrPort("10.0.0.1:4793")
	uni := func(gen, inst uint32) *vema.DirectoryBlock {
		return &vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, NumBlocks: 1, Instance: inst},
			Entries: []vema.DirEntry{{LID: 0x10, Addr: ep}}}
	}
	mc := func(gen, inst uint32) *vema.MulticastBlock {
		return &vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, NumBlocks: 1, Instance: inst}}
	}
	type add struct {
		mc        bool
		gen, inst uint32
	}
	for _, tc := range []struct {
		name string
		adds []add // after generation 9 of instance 7 is installed
		want uint32
	}{
		{"a retry of the installed generation amid a newer one", []add{{false, 10, 7}, {true, 9, 7}, {true, 10, 7}}, 10},
		{"a retry of an older generation amid a newer one", []add{{false, 10, 7}, {true, 8, 7}, {true, 10, 7}}, 10},
		{"an older partial one amid a newer one", []add{{false, 11, 7}, {true, 10, 7}, {true, 11, 7}}, 11},
		{"a newer generation replaces a partial one", []add{{false, 10, 7}, {false, 11, 7}, {true, 11, 7}}, 11},
		{"an older generation alone", []add{{false, 8, 7}, {true, 8, 7}}, 9},
		{"a restarted FM counting from below", []add{{false, 5, 8}, {true, 5, 8}}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a DirAssembler
			a.AddDirectoryBlock(uni(9, 7))
			if _, _, done, _ := a.AddMulticastBlock(mc(9, 7)); !done {
				t.Fatal("generation 9 not installed")
			}
			for _, x := range tc.adds {
				var err error
				if x.mc {
					_, _, _, err = a.AddMulticastBlock(mc(x.gen, x.inst))
				} else {
					_, _, _, err = a.AddDirectoryBlock(uni(x.gen, x.inst))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if g, _ := a.Installed(); g != tc.want {
				t.Errorf("installed %d, want %d", g, tc.want)
			}
		})
	}
}
