package vnicd_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// newWarnNode is a joined managed node (LID 0x10005) on an in-memory
// network with its fake FM, logging warnings to the observer it returns.
// While refuse holds true (nil: never), its netdevs cannot be made.
func newWarnNode(t *testing.T, refuse *atomic.Bool) (*fakeFM, *engine.Engine, *observer.ObservedLogs) {
	t.Helper()
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	h := hfi.New(n.Listen(tEPNode), hfi.Config{VerifyICRC: true})
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM}, nil)
	h.SetDirectory(dir)
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		if refuse != nil && refuse.Load() {
			return nil, errors.New("netdev vnic0: the name is taken in namespace x")
		}
		port, _ := taptest.Pair(taptest.Options{})
		return port, nil
	})
	core, logs := observer.New(zap.WarnLevel)
	m := vnicd.NewMgmt(e, vnicd.MgmtConfig{NodeGUID: 0x1122, PortGUID: 0x1122, Description: "node",
		FM: tEPFM, FMLID: fmLID}, zap.New(core))
	m.HeardFromSM(0x10005)
	return fm, e, logs
}

// TestRefusedSetWarnedOnce: a VESWPortInfo Set of the EM that the node
// cannot carry out (its netdev cannot be made) is answered with an error
// status, as before, and warned about on the node with the reason, once
// however often the FM sends it again; after a Set of that vport succeeds,
// a new refusal is warned about again.
func TestRefusedSetWarnedOnce(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	fm, e, logs := newWarnNode(t, &refuse)

	const nodeLID, vesw = 0x10005, 7
	info := vema.PowerOnVESWPortInfo()
	info.VESW.VESWID, info.VESW.PKey = vesw, 0x8001
	info.VPort.EncapSLID, info.VPort.BaseMACAddr, info.VPort.ConfigState = nodeLID, encap.MACForLID(nodeLID, vesw), vema.StateForwarding
	ib, _ := info.MarshalBinary()
	set := func() vema.Status {
		t.Helper()
		tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassVEMA, vema.MethodSet, vema.AttrVESWPortInfo, 0, ib)
		return vema.Status(binary.BigEndian.Uint16(fm.recvResp(tid).MAD[4:]))
	}
	warnings := func() []observer.LoggedEntry {
		return logs.FilterMessageSnippet("refused").All()
	}
	for i := range 3 { // the FM retrying
		if st := set(); st == vema.StatusSuccess {
			t.Fatalf("Set %d: success, want a refusal", i)
		}
	}
	if w := warnings(); len(w) != 1 {
		t.Fatalf("%d warnings for three refused Sets, want 1: %v", len(w), w)
	} else if r := w[0].ContextMap()["reason"]; !strings.Contains(r.(string), "the name is taken") || w[0].ContextMap()["vport"] != uint8(0) {
		t.Errorf("warning's fields %v: want vport 0 and the engine's reason", w[0].ContextMap())
	}
	refuse.Store(false)
	if st := set(); st != vema.StatusSuccess {
		t.Fatalf("Set: %v", st)
	}
	if w := warnings(); len(w) != 1 {
		t.Fatalf("%d warnings after a Set that succeeded, want still 1", len(w))
	}
	// Another refusal after the success: warned again (a port whose netdev
	// went away is made anew; a taken name again refuses it).
	refuse.Store(true)
	if err := e.DeletePort(0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st := set(); st == vema.StatusSuccess {
			t.Fatal("Set after the port went: success, want a refusal")
		}
	}
	if w := warnings(); len(w) != 2 {
		t.Fatalf("%d warnings, want 2", len(w))
	}
}

// TestDeleteVESWOfAbsentVPortNotWarned: a DeleteVESW of a vport the node
// does not have is answered 0x001C, as the kernel answers it, and the FM
// takes that as done (no such vport, which is as good): the node has
// refused nothing and warns about nothing. The FM sends such deletes in
// normal operation (owed across a restart of the FM or the node, a vport
// deleted once before it is set anew).
func TestDeleteVESWOfAbsentVPortNotWarned(t *testing.T) {
	fm, _, logs := newWarnNode(t, nil)

	const nodeLID = 0x10005
	for range 2 {
		tid, _ := fm.vema(tEPNode, nodeLID, vema.ClassVEMA, vema.MethodSet, vema.AttrDeleteVESW, 3, nil)
		if st := vema.Status(binary.BigEndian.Uint16(fm.recvResp(tid).MAD[4:])); st != vema.StatusInvalidAttrValue {
			t.Fatalf("DeleteVESW of an absent vport: %v, want %v", st, vema.StatusInvalidAttrValue)
		}
	}
	if w := logs.FilterMessageSnippet("refused").All(); len(w) != 0 {
		t.Errorf("%d warnings for DeleteVESWs of an absent vport, want none: %v", len(w), w[0].ContextMap())
	}
}
