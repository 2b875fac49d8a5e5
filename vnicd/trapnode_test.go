package vnicd_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// trapNodeLID is the LID of newTrapNode's node.
const trapNodeLID = 0x10

// newTrapNode starts a node (LID trapNodeLID) whose VNICs are made by
// newDev, with its agent's trap_lid set to a fake FM's LID; the fake FM
// receives the node's traps.
func newTrapNode(t *testing.T, newDev func(engine.DeviceSpec) tap.Netdev) (*vnicd.Mgmt, *fakeFM) {
	t.Helper()
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	h := hfi.New(n.Listen(tEPNode), hfi.Config{LID: trapNodeLID})
	dir, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{fmLID: tEPFM, trapNodeLID: tEPNode}, nil)
	h.SetDirectory(dir)
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) { return newDev(s), nil })
	m := vnicd.NewMgmt(e, vnicd.MgmtConfig{}, nil)
	cb, _ := (&vema.ClassPortInfo{TrapLID: fmLID}).MarshalBinary()
	if st := handle(t, m.Agent, vemaMAD(vema.MethodSet, vema.AttrClassPortInfo, 0, cb)); st != vema.StatusSuccess {
		t.Fatalf("Set ClassPortInfo: %v", st)
	}
	return m, fm
}

// trapOps collects the opcodes of the traps (of vesw, when not 0) that reach
// the fake FM within d, or until one with opcode stopAt (when not 0).
func (f *fakeFM) trapOps(d time.Duration, vesw encap.VESWID, stopAt uint8) []uint8 {
	f.t.Helper()
	var ops []uint8
	deadline := time.After(d)
	for {
		select {
		case pkt := <-f.in:
			mp, err := encap.ParseMgmt(pkt)
			if err != nil || vema.Method(mp.MAD[3]) != vema.MethodTrap {
				continue
			}
			var tr vema.TrapMAD
			if err := tr.UnmarshalBinary(mp.MAD); err != nil {
				f.t.Fatal(err)
			}
			if len(mp.MAD) != 272 || mp.Header.DLID() != fmLID || vesw != 0 && tr.Notice.Trap.VESWID != vesw {
				f.t.Fatalf("trap: %d bytes to %#x, vesw %d", len(mp.MAD), mp.Header.DLID(), tr.Notice.Trap.VESWID)
			}
			ops = append(ops, tr.Notice.Trap.Opcode)
			if stopAt != 0 && tr.Notice.Trap.Opcode == stopAt {
				return ops
			}
		case <-deadline:
			return ops
		}
	}
}
