package vema

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

func dirBlockVector() ([]byte, DirectoryBlock) {
	w := make([]byte, 16+2*24)
	put(w, 0, 0x00, 0x00, 0x01, 0x02)                                         // generation 258
	put(w, 4, 0x00, 0x00, 0x00, 0x01)                                         // block 0 of 1
	put(w, 8, 0x00, 0x02)                                                     // num_entries 2
	put(w, 16, 0x00, 0x00, 0x00, 0x01)                                        // [0] LID 1
	put(w, 20+10, 0xFF, 0xFF, 10, 0, 0, 1)                                    // [0] ::ffff:10.0.0.1
	put(w, 36, 0x12, 0xB9)                                                    // [0] port 4793
	put(w, 40, 0x00, 0x01, 0x00, 0x05)                                        // [1] LID 0x10005
	put(w, 44, 0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07) // [1] 2001:db8::7
	put(w, 60, 0x04, 0x00)                                                    // [1] port 1024
	put(w, 62, 0x00, 0x00)                                                    // [1] flags
	v := DirectoryBlock{DirBlockHeader: DirBlockHeader{Generation: 258, NumBlocks: 1, Count: 2}, Entries: []DirEntry{
		{LID: 1, Addr: netip.MustParseAddrPort("10.0.0.1:4793")},
		{LID: 0x10005, Addr: netip.MustParseAddrPort("[2001:db8::7]:1024")},
	}}
	return w, v
}

func mcBlockVector() ([]byte, MulticastBlock) {
	w := make([]byte, 16+8+8+8+4)
	put(w, 0, 0x00, 0x00, 0x01, 0x02)              // generation
	put(w, 4, 0x00, 0x01, 0x00, 0x02)              // block 1 of 2
	put(w, 8, 0x00, 0x02)                          // num_groups
	put(w, 16, 0x00, 0xF0, 0x00, 0x01)             // [0] MLID
	put(w, 20, 0x00, 0x02)                         // [0] num_members
	put(w, 24, 0x00, 0x00, 0x00, 0x01)             // member 1
	put(w, 28, 0x00, 0x01, 0x00, 0x05)             // member 0x10005
	put(w, 32, 0x00, 0xF0, 0x00, 0x02, 0, 1, 0, 0) // [1] MLID, 1 member
	put(w, 40, 0x00, 0x00, 0x00, 0x01)
	v := MulticastBlock{DirBlockHeader: DirBlockHeader{Generation: 258, Block: 1, NumBlocks: 2, Count: 2}, Groups: []DirGroup{
		{MLID: 0xF00001, Members: []uint32{1, 0x10005}}, {MLID: 0xF00002, Members: []uint32{1}},
	}}
	return w, v
}

func TestDirectoryCodec(t *testing.T) {
	w, v := dirBlockVector()
	got, err := v.MarshalBinary()
	if err != nil || !bytes.Equal(got, w) {
		t.Fatalf("DirectoryBlock encode: %v\n% x\n% x", err, got, w)
	}
	var d DirectoryBlock
	if err := d.UnmarshalBinary(append(w, make([]byte, 100)...)); err != nil || d.Entries[0] != v.Entries[0] || d.Entries[1] != v.Entries[1] || d.DirBlockHeader != v.DirBlockHeader {
		t.Fatalf("DirectoryBlock decode: %v %+v", err, d)
	}
	mw, mv := mcBlockVector()
	got, err = mv.MarshalBinary()
	if err != nil || !bytes.Equal(got, mw) {
		t.Fatalf("MulticastBlock encode: %v\n% x\n% x", err, got, mw)
	}
	var m MulticastBlock
	if err := m.UnmarshalBinary(mw); err != nil || len(m.Groups) != 2 || m.Groups[0].Members[1] != 0x10005 {
		t.Fatalf("MulticastBlock decode: %v %+v", err, m)
	}
	// Bounds.
	bad := bytes.Clone(w)
	put(bad, 4, 0x00, 0x01, 0x00, 0x01) // block 1 of 1
	if err := d.UnmarshalBinary(bad); !errors.Is(err, ErrDirBlock) {
		t.Fatalf("block >= num_blocks: %v", err)
	}
	bad = bytes.Clone(w)
	put(bad, 8, 0x00, 0x54) // 84 entries
	if err := d.UnmarshalBinary(bad); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("84 entries: %v", err)
	}
	if err := d.UnmarshalBinary(w[:40]); !errors.Is(err, ErrShort) {
		t.Fatalf("short: %v", err)
	}
	bad = bytes.Clone(mw)
	put(bad, 20, 0x01, 0xF1) // 497 members: one more than a block holds
	if err := m.UnmarshalBinary(bad); !errors.Is(err, ErrDirBounds) {
		t.Fatalf("497 members: %v", err)
	}
	if err := m.UnmarshalBinary(mw[:30]); !errors.Is(err, ErrShort) {
		t.Fatalf("short group: %v", err)
	}
}

func TestDirAssembler(t *testing.T) {
	var a DirAssembler
	_, v := dirBlockVector()
	_, mv := mcBlockVector()
	if _, _, done, err := a.AddDirectoryBlock(&v); done || err != nil {
		t.Fatal("done without multicast blocks")
	}
	if _, _, done, _ := a.AddMulticastBlock(&mv); done {
		t.Fatal("done with 1 of 2 multicast blocks")
	}
	m0 := MulticastBlock{DirBlockHeader: DirBlockHeader{Generation: 258, NumBlocks: 2}}
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
	m1 := MulticastBlock{DirBlockHeader: DirBlockHeader{Generation: 301, NumBlocks: 1}}
	a.AddDirectoryBlock(&n)
	if _, _, done, _ := a.AddMulticastBlock(&m1); !done {
		t.Fatal("generation 301")
	}
	// Too many entries in a generation.
	big := DirectoryBlock{DirBlockHeader: DirBlockHeader{Generation: 400, NumBlocks: 60}}
	if _, _, _, err := a.AddDirectoryBlock(&big); !errors.Is(err, ErrDirBounds) {
		t.Fatalf("60 blocks: %v", err)
	}
}

func FuzzDirectoryBlock(f *testing.F) {
	w, _ := dirBlockVector()
	f.Add(w)
	f.Fuzz(func(t *testing.T, b []byte) {
		var d DirectoryBlock
		if d.UnmarshalBinary(b) != nil {
			return
		}
		out, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d2 DirectoryBlock
		if err := d2.UnmarshalBinary(out); err != nil || len(d2.Entries) != len(d.Entries) {
			t.Fatal("round trip", err)
		}
		var a DirAssembler
		a.AddDirectoryBlock(&d)
	})
}

func FuzzMulticastBlock(f *testing.F) {
	w, _ := mcBlockVector()
	f.Add(w)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m MulticastBlock
		if m.UnmarshalBinary(b) != nil {
			return
		}
		out, err := m.MarshalBinary()
		if err != nil {
			return // decodes from 2008 bytes always fit; longer input was cut
		}
		var m2 MulticastBlock
		if err := m2.UnmarshalBinary(out); err != nil || len(m2.Groups) != len(m.Groups) {
			t.Fatal("round trip", err)
		}
		var a DirAssembler
		a.AddMulticastBlock(&m)
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
		if r, ok := a.Handle(b); ok && len(r) != MADSize {
			if len(r) != MADHeaderLen || b[2] == VEMAClassVersion && OUI(b[37:40]) == IntelOUI {
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
	uni := func(gen, inst uint32) *DirectoryBlock {
		return &DirectoryBlock{DirBlockHeader: DirBlockHeader{Generation: gen, NumBlocks: 1, Instance: inst},
			Entries: []DirEntry{{LID: 0x10, Addr: ep}}}
	}
	mc := func(gen, inst uint32) *MulticastBlock {
		return &MulticastBlock{DirBlockHeader: DirBlockHeader{Generation: gen, NumBlocks: 1, Instance: inst}}
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
