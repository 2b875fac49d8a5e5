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
	})
}
