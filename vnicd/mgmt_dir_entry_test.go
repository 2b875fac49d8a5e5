package vnicd_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// A directory block with an entry no directory may hold (port 0, a
// multicast LID given an endpoint, a link-local IPv6 endpoint, a group of a
// unicast LID) is refused itself, 0x001C, and the generation is not taken
// for installed: once the FM sends it again right, it installs. (Checked
// only when the generation was whole, the bad block was answered 0, the
// last block got the 0x001C, and the node held the generation for installed
// so that a corrected resend of it was ignored.)
func TestDirectoryBlockWithABadEntryIsRefused(t *testing.T) {
	const nodeLID, peerLID = 0x10005, 0x20
	good := []vema.DirEntry{{LID: fmLID, Addr: tEPFM}, {LID: nodeLID, Addr: tEPNode}}
	for _, tc := range []struct {
		name    string
		entries []vema.DirEntry
		groups  []vema.DirGroup
	}{
		{"port 0", []vema.DirEntry{{LID: peerLID, Addr: netip.MustParseAddrPort("10.0.0.6:0")}}, nil},
		{"multicast LID", []vema.DirEntry{{LID: 0xF00001, Addr: tEPPeer}}, nil},
		{"link-local", []vema.DirEntry{{LID: peerLID, Addr: netip.MustParseAddrPort("[fe80::1]:4793")}}, nil},
		{"unicast group", nil, []vema.DirGroup{{MLID: peerLID, Members: []uint32{nodeLID}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := hfitest.NewNetwork()
			fm := newFakeFM(t, n)
			nd := newManagedNode(t, n)
			nd.hfi.SetLID(nodeLID)
			set := func(attr uint16, b interface{ MarshalBinary() ([]byte, error) }) uint16 {
				data, _ := b.MarshalBinary()
				tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassDirectory, vema.MethodSet, attr, 0, data)
				return binary.BigEndian.Uint16(fm.recvResp(tid).MAD[4:])
			}
			hdr := vema.DirBlockHeader{Generation: 1, NumBlocks: 1, Instance: 5}
			db := vema.DirectoryBlock{DirBlockHeader: hdr, Entries: append(append([]vema.DirEntry(nil), good...), tc.entries...)}
			mb := vema.MulticastBlock{DirBlockHeader: hdr, Groups: tc.groups}
			first, second := set(vema.AttrDirectoryBlock, &db), set(vema.AttrMulticastBlock, &mb)
			if bad := map[bool]uint16{true: first, false: second}[tc.entries != nil]; bad != uint16(vema.StatusInvalidAttrValue) {
				t.Errorf("the block with the bad entry answered %#x, want 0x001C", bad)
			}
			if ok := map[bool]uint16{true: second, false: first}[tc.entries != nil]; ok != 0 {
				t.Errorf("the good block answered %#x, want 0", ok)
			}
			// The FM sends the generation again, right.
			db.Entries = append(append([]vema.DirEntry(nil), good...), vema.DirEntry{LID: peerLID, Addr: tEPPeer})
			mb.Groups = nil
			if s1, s2 := set(vema.AttrDirectoryBlock, &db), set(vema.AttrMulticastBlock, &mb); s1 != 0 || s2 != 0 {
				t.Fatalf("the corrected generation answered %#x, %#x", s1, s2)
			}
			if ep, ok := nd.hfi.Directory().Endpoint(peerLID); !ok || ep != tEPPeer {
				t.Errorf("the corrected generation is not installed: peer -> %v, %v", ep, ok)
			}
		})
	}
}
