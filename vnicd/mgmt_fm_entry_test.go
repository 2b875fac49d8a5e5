package vnicd_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// The FM's directory names the FM by the endpoint it listens on, which is
// not always the one the node reaches it at (an FM behind a port mapping:
// it binds its container's address, the node is configured with the host's,
// and the FM's datagrams reach the node from the host's). The node takes
// management MADs only from its configured FM endpoint (docs/management.md §6), so
// its directory must map the FM LID to that endpoint whatever the FM's
// directory says; otherwise the HFI's source check drops everything the FM
// sends once the first directory is installed, and the node loses its FM.
func TestFMReachableWhenItsDirectoryEntryDiffers(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	nd := newManagedNode(t, n)
	const nodeLID = 0x10005
	nd.hfi.SetLID(nodeLID)
	fmListen := netip.MustParseAddrPort("172.17.0.2:4793") // the FM's own listen address
	db := vema.DirectoryBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1, Instance: 5},
		Entries: []vema.DirEntry{{LID: fmLID, Addr: fmListen}, {LID: nodeLID, Addr: tEPNode}}}
	mb := vema.MulticastBlock{DirBlockHeader: vema.DirBlockHeader{Generation: 1, NumBlocks: 1, Instance: 5}}
	dbb, _ := db.MarshalBinary()
	mbb, _ := mb.MarshalBinary()
	for _, b := range []struct {
		attr uint16
		data []byte
	}{{vema.AttrDirectoryBlock, dbb}, {vema.AttrMulticastBlock, mbb}} {
		tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassDirectory, vema.MethodSet, b.attr, 0, b.data)
		if mp := fm.recvResp(tid); binary.BigEndian.Uint16(mp.MAD[4:]) != 0 {
			t.Fatalf("directory attr %#x refused", b.attr)
		}
	}
	if ep, _ := nd.hfi.Directory().Endpoint(fmLID); ep != tEPFM {
		t.Errorf("FM LID maps to %v in the node's directory, want the configured %v", ep, tEPFM)
	}
	// The FM still gets answers.
	before := nd.hfi.Counters.RcvBadSource.Load()
	tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassVEMA, vema.MethodGet, vema.AttrClassPortInfo, 0, nil)
	deadline := time.After(2 * time.Second)
	for {
		select {
		case raw := <-fm.in:
			mp, err := encap.ParseMgmt(raw)
			if err == nil && binary.BigEndian.Uint64(mp.MAD[8:]) == tid && mp.MAD[3] == byte(vema.MethodGetResp) {
				return
			}
		case <-deadline:
			t.Fatalf("no answer to the FM after the directory (rcv_bad_source %d -> %d)",
				before, nd.hfi.Counters.RcvBadSource.Load())
		}
	}
}
