package node

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/vema"
)

// The bounds of what the agent and the directory assembler keep (README
// "Limits"): each is filled to exactly its bound, then bound+1 is refused
// and what was there stays.

func status(t *testing.T, a *Agent, req []byte) (vema.Status, []byte) {
	t.Helper()
	resp, ok := a.Handle(req)
	if !ok || len(resp) != vema.MADSize {
		t.Fatalf("no 2048-byte response (ok %v, len %d)", ok, len(resp))
	}
	return vema.Status(binary.BigEndian.Uint16(resp[4:])), resp[vema.VendorHeaderLen:]
}

// macSet is a VESWPortMACEntries Set of num entries from offset, entry i
// carrying MAC 02:00:00:00:hi:lo of its absolute index.
func macSet(vport uint8, offset, num int, digest uint32) []byte {
	d := make([]byte, vema.VEMADataLen)
	binary.BigEndian.PutUint16(d[0:], uint16(offset))
	binary.BigEndian.PutUint16(d[2:], uint16(num))
	binary.BigEndian.PutUint32(d[4:], digest)
	for i := range num {
		idx := offset + i
		e := vema.MACTableEntry{MAC: [6]byte{0x02, 0, 0, 0, byte(idx >> 8), byte(idx)}, DLIDSD: vema.MakeDLIDSD(uint32(0x100+idx), false)}
		if off := vema.MACTableHeaderLen + vema.MACTableEntryLen*i; off+vema.MACTableEntryLen <= len(d) {
			_, _ = e.AppendBinary(d[off:off])
		}
	}
	return vemaReq(0x02, vema.AttrVESWPortMACEntries, uint32(vport), d)
}

// TestLimitMACTable fills a vport's MAC table to OPA_VNIC_MAC_TBL_MAX_ENTRIES
// (2048) in Sets of 125, then shows every request reaching past it is
// refused with 0x001C and leaves the table and its digest as they were.
func TestLimitMACTable(t *testing.T) {
	p := newFakePorts()
	a := NewAgent(p, nil)
	if st, _ := status(t, a, vemaReq(0x02, vema.AttrVESWPortInfo, 3, setInfoData())); st != vema.StatusSuccess {
		t.Fatalf("create vport 3: %v", st)
	}
	const digest = 0xD16E5700
	for off := 0; off < vema.MACTableMaxEntries; off += vema.MaxMACEntriesPerMAD {
		n := min(vema.MaxMACEntriesPerMAD, vema.MACTableMaxEntries-off)
		if st, _ := status(t, a, macSet(3, off, n, digest)); st != vema.StatusSuccess {
			t.Fatalf("Set [%d, %d): %v", off, off+n, st)
		}
	}
	full := func(what string) {
		t.Helper()
		tb := p.table[3]
		if len(tb.Entries) != vema.MACTableMaxEntries || tb.Digest != digest {
			t.Fatalf("%s: %d entries, digest %#x; want %d, %#x", what, len(tb.Entries), tb.Digest, vema.MACTableMaxEntries, uint32(digest))
		}
		for idx, e := range tb.Entries {
			if e.MAC != [6]byte{0x02, 0, 0, 0, byte(idx >> 8), byte(idx)} || e.DLID() != uint32(0x100+int(idx)) {
				t.Fatalf("%s: entry %d is %+v", what, idx, e)
			}
		}
	}
	full("filled")
	for _, tc := range []struct {
		name        string
		offset, num int
	}{
		{"index 2048", vema.MACTableMaxEntries, 1},
		{"2000+49", 2000, 49},
		{"126 in one Set", 0, vema.MaxMACEntriesPerMAD + 1},
		{"offset 0xFFFF", 0xFFFF, 1},
	} {
		st, data := status(t, a, macSet(3, tc.offset, tc.num, 0xBAD))
		if st != vema.StatusInvalidAttrValue {
			t.Errorf("%s: status %v, want 0x001C", tc.name, st)
		}
		if d := binary.BigEndian.Uint32(data[4:]); d != 0 {
			t.Errorf("%s: the refusal carries digest %#x, want none", tc.name, d)
		}
		full(tc.name)
	}
	// The last entries still read back, with the digest.
	st, data := status(t, a, vemaReq(0x01, vema.AttrVESWPortMACEntries, 3, []byte{0x07, 0xFF, 0x00, 0x01}))
	var got vema.VESWPortMACEntries
	if err := got.UnmarshalBinary(data); st != vema.StatusSuccess || err != nil || got.Digest != digest ||
		got.Entries[0].MAC != [6]byte{0x02, 0, 0, 0, 0x07, 0xFF} {
		t.Fatalf("Get of index 2047: %v %v %+v", st, err, got)
	}
}

// TestLimitVPorts creates the 255 vports the VEMA advertises
// (OPA_VNIC_MAX_NUM_VPORT: indices 0..254); a Set of index 255 creates
// nothing and answers 0x001C, and the others stay.
func TestLimitVPorts(t *testing.T) {
	p := newFakePorts()
	a := NewAgent(p, nil)
	for vp := 0; vp <= vema.MaxVPort; vp++ {
		if st, _ := status(t, a, vemaReq(0x02, vema.AttrVESWPortInfo, uint32(vp), setInfoData())); st != vema.StatusSuccess {
			t.Fatalf("vport %d: %v", vp, st)
		}
	}
	if len(p.info) != vema.VEMAMaxVPorts {
		t.Fatalf("%d vports, want %d", len(p.info), vema.VEMAMaxVPorts)
	}
	st, data := status(t, a, vemaReq(0x02, vema.AttrVESWPortInfo, 0xFF, setInfoData()))
	if st != vema.StatusInvalidAttrValue || data[148] != 0 {
		t.Fatalf("Set of vport 255: status %v, data % x", st, data[:8])
	}
	if _, made := p.info[0xFF]; made || len(p.info) != vema.VEMAMaxVPorts {
		t.Fatalf("vport 255 made (%v), %d vports", made, len(p.info))
	}
	// attr_mod bits above the vport index do not reach past it.
	if st, _ := status(t, a, vemaReq(0x02, vema.AttrVESWPortInfo, 0x1FF, setInfoData())); st != vema.StatusInvalidAttrValue {
		t.Fatalf("attr_mod 0x1FF: %v", st)
	}
	// Vport 255 reads as the power-on values (status 0), as a missing vport does.
	if st, data := status(t, a, vemaReq(0x01, vema.AttrVESWPortInfo, 0xFF, nil)); st != vema.StatusSuccess ||
		binary.BigEndian.Uint16(data[152+16:]) != vema.MACTableMaxEntries {
		t.Fatalf("Get of vport 255: %v", st)
	}
	for vp := range vema.VEMAMaxVPorts {
		if info, ok := p.VESWPortInfo(uint8(vp)); !ok || info.VESW.VESWID != 5 {
			t.Fatalf("vport %d lost", vp)
		}
	}
}

// directory builders: n unicast entries in blocks of 83, groups packed into
// blocks as the FM packs them (a group never spans blocks).
func uniBlocks(gen uint32, n int) []vema.DirectoryBlock {
	var bs []vema.DirectoryBlock
	for i := 0; i == 0 || i < n; i += vema.MaxDirEntriesPerMAD {
		b := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, Block: uint16(len(bs))}}
		for j := i; j < min(i+vema.MaxDirEntriesPerMAD, n); j++ {
			b.Entries = append(b.Entries, vema.DirEntry{LID: uint32(0x10 + j), Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(j >> 8), byte(j)}), 4793)})
		}
		bs = append(bs, b)
	}
	for i := range bs {
		bs[i].NumBlocks = uint16(len(bs))
	}
	return bs
}

func mcBlocks(gen uint32, groups []vema.DirGroup) []vema.MulticastBlock {
	var bs []vema.MulticastBlock
	cur := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen}}
	for _, g := range groups {
		next := cur
		next.Groups = append(append([]vema.DirGroup(nil), cur.Groups...), g)
		if next.Len() > vema.VEMADataLen && len(cur.Groups) > 0 {
			bs = append(bs, cur)
			next = vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: gen, Block: uint16(len(bs))}, Groups: []vema.DirGroup{g}}
		}
		cur = next
	}
	bs = append(bs, cur)
	for i := range bs {
		bs[i].NumBlocks = uint16(len(bs))
	}
	return bs
}

// groupsOf returns n groups, the first with first members, the others with one.
func groupsOf(n, first int) []vema.DirGroup {
	gs := make([]vema.DirGroup, n)
	for i := range gs {
		gs[i].MLID = uint32(0xF00001 + i)
		k := 1
		if i == 0 {
			k = first
		}
		for j := range k {
			gs[i].Members = append(gs[i].Members, uint32(0x10+j))
		}
	}
	return gs
}

// feed adds every block (each through its wire form, as a node gets it);
// it returns the first error and what the last block completed.
func feed(t *testing.T, a *DirAssembler, ub []vema.DirectoryBlock, mb []vema.MulticastBlock) (map[uint32]netip.AddrPort, map[uint32][]uint32, bool, error) {
	t.Helper()
	var eps map[uint32]netip.AddrPort
	var groups map[uint32][]uint32
	var done bool
	var first error
	for i := range ub {
		w, err := ub[i].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var b vema.DirectoryBlock
		if err := b.UnmarshalBinary(w); err != nil {
			t.Fatal(err)
		}
		e, g, d, err := a.AddDirectoryBlock(&b)
		if err != nil && first == nil {
			first = err
		}
		if d {
			eps, groups, done = e, g, d
		}
	}
	for i := range mb {
		w, err := mb[i].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var b vema.MulticastBlock
		if err := b.UnmarshalBinary(w); err != nil {
			t.Fatal(err)
		}
		e, g, d, err := a.AddMulticastBlock(&b)
		if err != nil && first == nil {
			first = err
		}
		if d {
			eps, groups, done = e, g, d
		}
	}
	return eps, groups, done, first
}

// TestLimitDirectory installs a generation at every bound at once (4096
// unicast entries, 256 groups, a group of 496 members), then shows that a
// generation one past any of them is refused with ErrDirBounds (0x001C on the
// wire) and never replaces the installed one.
func TestLimitDirectory(t *testing.T) {
	if vema.MaxDirGroupMembers != 496 {
		t.Fatalf("MaxDirGroupMembers = %d: a block holds (2008-16-8)/4 = 496", vema.MaxDirGroupMembers)
	}
	var a DirAssembler
	eps, groups, done, err := feed(t, &a, uniBlocks(10, vema.MaxDirEntries), mcBlocks(10, groupsOf(vema.MaxDirGroups, vema.MaxDirGroupMembers)))
	if err != nil || !done || len(eps) != vema.MaxDirEntries || len(groups) != vema.MaxDirGroups || len(groups[0xF00001]) != vema.MaxDirGroupMembers {
		t.Fatalf("full generation: err %v done %v, %d entries, %d groups, %d members", err, done, len(eps), len(groups), len(groups[0xF00001]))
	}
	// One block holds exactly the largest group.
	if b := mcBlocks(10, groupsOf(1, vema.MaxDirGroupMembers))[0]; b.Len() != vema.VEMADataLen {
		t.Fatalf("a %d-member group takes %d bytes, want %d", vema.MaxDirGroupMembers, b.Len(), vema.VEMADataLen)
	}
	over := groupsOf(2, vema.MaxDirGroupMembers)
	over[1].MLID, over[1].Members = over[0].MLID, []uint32{0xFFF} // the same group again, in the next block
	for i, tc := range []struct {
		name string
		ub   []vema.DirectoryBlock
		mb   []vema.MulticastBlock
	}{
		{"4097 entries", uniBlocks(0, vema.MaxDirEntries+1), mcBlocks(0, nil)},
		{"257 groups", uniBlocks(0, 1), mcBlocks(0, groupsOf(vema.MaxDirGroups+1, 1))},
		{"497 members (a group in two blocks)", uniBlocks(0, 1), mcBlocks(0, over)},
	} {
		gen := uint32(11 + i)
		for j := range tc.ub {
			tc.ub[j].Generation = gen
		}
		for j := range tc.mb {
			tc.mb[j].Generation = gen
		}
		_, _, done, err := feed(t, &a, tc.ub, tc.mb)
		if !errors.Is(err, vema.ErrDirBounds) || done {
			t.Errorf("%s: err %v, done %v; want ErrDirBounds and nothing installed", tc.name, err, done)
		}
		if g, ok := a.Installed(); !ok || g != 10 {
			t.Errorf("%s: installed generation %d, want 10", tc.name, g)
		}
	}
	// Too many blocks for 4096 entries is refused at the first block.
	big := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 20, NumBlocks: vema.MaxDirEntries/vema.MaxDirEntriesPerMAD + 2}}
	if _, _, _, err := a.AddDirectoryBlock(&big); !errors.Is(err, vema.ErrDirBounds) {
		t.Errorf("%d blocks: %v", big.NumBlocks, err)
	}
}

// TestLimitIfaceMACs: an interface MAC list answers at most 333 MACs per MAD
// ((2008-8)/6, vema_get_mac_list): asking for 334 gets 333, and the rest of a
// longer list is read from start_idx. (vnicd's lists are fixed: the netdev's
// own MAC and no secondary or multicast addresses.)
func TestLimitIfaceMACs(t *testing.T) {
	p := newFakePorts()
	a := NewAgent(p, nil)
	if st, _ := status(t, a, vemaReq(0x02, vema.AttrVESWPortInfo, 0, setInfoData())); st != vema.StatusSuccess {
		t.Fatal(st)
	}
	l := IfaceMACList{GenCount: 9}
	for i := range 400 {
		l.UC = append(l.UC, [6]byte{0x02, 0xCC, 0, 0, byte(i >> 8), byte(i)})
	}
	p.uc[0] = l
	for _, tc := range []struct{ start, ask, got int }{
		{0, vema.MaxIfaceMACsPerMAD, vema.MaxIfaceMACsPerMAD},
		{0, vema.MaxIfaceMACsPerMAD + 1, vema.MaxIfaceMACsPerMAD},
		{vema.MaxIfaceMACsPerMAD, 0, 400 - vema.MaxIfaceMACsPerMAD},
	} {
		req := []byte{byte(tc.start >> 8), byte(tc.start), byte(tc.ask >> 8), byte(tc.ask)}
		st, data := status(t, a, vemaReq(0x01, vema.AttrIfaceUcastMACs, 0, req))
		var m vema.IfaceMACs
		if err := m.UnmarshalBinary(data); st != vema.StatusSuccess || err != nil || len(m.MACs) != tc.got || m.TotMACsInLst != 400 ||
			m.MACs[0] != l.UC[tc.start] {
			t.Errorf("start %d ask %d: %v %v, %d MACs of %d", tc.start, tc.ask, st, err, len(m.MACs), m.TotMACsInLst)
		}
	}
}
