package vnicd_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// The FM answers a path query for a LID it does not know, or whose node is
// not active, with status 0x001C (docs/management.md §5: the emulation's "no
// record"). vnicctl path shows Path's error as it is, so the error says
// that there is no path to the LID, not only "invalid attribute value".
func TestPathNoRecordSaysSo(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	nd := newManagedNode(t, n)
	const nodeLID, peerLID = 0x10, 0xC005
	nd.hfi.SetLID(nodeLID)
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM, nodeLID: tEPNode}, nil)
	nd.hfi.SetDirectory(dir)

	done := make(chan error, 1)
	go func() {
		_, err := nd.mgmt.Path(context.Background(), peerLID)
		done <- err
	}()
	var query []byte
	for query == nil {
		if mp := fm.recv(); mp.MAD[1] == byte(vema.ClassSubnAdm) {
			query = bytes.Clone(mp.MAD)
		}
	}
	r := bytes.Clone(query)
	r[3] = byte(vema.MethodGetResp)
	binary.BigEndian.PutUint16(r[4:], uint16(vema.StatusInvalidAttrValue))
	clear(r[vema.SAHeaderLen:])
	fm.send(tEPNode, nodeLID, 0, 1, r)
	err := <-done
	if err == nil {
		t.Fatal("path to a LID the SA has no record of: no error")
	}
	for _, want := range []string{"no path", "0xC005", "0x001C"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
