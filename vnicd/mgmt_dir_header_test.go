package vnicd_test

import (
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// A directory-class MAD whose base version, class version or OUI is not
// the directory class's (docs/management.md §1, §3: 0x80, 0x80, 00 06 6A) is not
// the FM's directory: it installs nothing, gets no answer and counts in
// mgmt_bad, as a VEMA MAD with a wrong header does at the agent.
func TestDirectoryMADWithAnotherHeaderIsDropped(t *testing.T) {
	const nodeLID, peerLID = 0x10005, 0x20
	db := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1, Instance: 5},
		Entries: []vema.DirEntry{{LID: peerLID, Addr: tEPPeer}}}
	mb := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1, Instance: 5}}
	dbb, _ := db.MarshalBinary()
	mbb, _ := mb.MarshalBinary()
	for _, tc := range []struct {
		name string
		off  int
		val  byte
	}{{"base version 0x01", 0, 0x01}, {"class version 0x01", 2, 0x01}, {"OUI 00 00 00", 39, 0x00}} {
		t.Run(tc.name, func(t *testing.T) {
			n := hfitest.NewNetwork()
			h := hfi.New(n.Listen(tEPNode), hfi.Config{LID: nodeLID})
			dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM}, nil)
			h.SetDirectory(dir)
			e := enginetest.StartEngine(t, h, nil)
			m := vnicd.NewMgmt(e, vnicd.MgmtConfig{FM: tEPFM, FMLID: fmLID}, nil)
			for _, b := range []struct {
				attr uint16
				data []byte
			}{{vema.AttrDirectoryBlock, dbb}, {vema.AttrMulticastBlock, mbb}} {
				var mad vema.MAD
				mad.BaseVersion, mad.MgmtClass, mad.ClassVersion, mad.Method = 0x80, vema.ClassDirectory, 0x80, vema.MethodSet
				mad.AttrID, mad.OUI, mad.TID = b.attr, vema.IntelOUI, 1
				copy(mad.Data[:], b.data)
				raw, _ := mad.MarshalBinary()
				raw[tc.off] = tc.val
				pkt, _ := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: fmLID, DLID: nodeLID, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, raw)
				m.Receive(pkt, encap.Header16B(pkt), tEPFM)
			}
			m.Wait()
			if _, ok := h.Directory().Endpoint(peerLID); ok {
				t.Error("the directory was installed")
			}
			if got := m.Bad.Load(); got != 2 {
				t.Errorf("mgmt_bad %d, want 2", got)
			}
		})
	}
}
