package vnicd_test

import (
	"bytes"
	"encoding/binary"
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
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// TestSlowSetDoesNotDelayFrames: a VEMA Set that creates a port whose
// netdev takes long to make (a netlink call held on purpose) is handled
// off the data plane: while it waits, frames keep crossing the same poll
// loop to the node's other port, and once it is let go the port exists
// and the manager has its answer. Were the MAD handled on the loop, no
// frame would come until the Set was done.
func TestSlowSetDoesNotDelayFrames(t *testing.T) {
	n := hfitest.NewNetwork()
	a := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)

	trB := n.Listen(enginetest.EPB)
	hB := hfi.New(trB, hfi.Config{LID: enginetest.LIDB, VerifyICRC: true})
	dir, err := hfi.NewDirectory(map[uint32]netip.AddrPort{enginetest.LIDA: enginetest.EPA, enginetest.LIDB: enginetest.EPB, fmLID: tEPFM}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hB.SetDirectory(dir)
	hostB := map[uint8]*taptest.Device{}
	fakes := enginetest.Fakes(hostB)
	entered, gate := make(chan struct{}), make(chan struct{})
	eB := enginetest.StartEngine(t, hB, func(s engine.DeviceSpec) (tap.Netdev, error) {
		if s.VPort == 1 {
			close(entered)
			<-gate
		}
		return fakes(s)
	})
	mB := vnicd.NewMgmt(eB, vnicd.MgmtConfig{Trusted: []netip.AddrPort{tEPFM}}, nil)
	t.Cleanup(mB.Wait)
	// Registered last, so run first: a failing test lets the factory go
	// before the engine and the management plane are waited for.
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})

	if err := a.Engine.SetPort(0, enginetest.PortConfig(enginetest.LIDA, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := eB.SetPort(0, enginetest.PortConfig(enginetest.LIDB, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}

	// The manager's Set of vport 1, arriving on B's transport.
	fm := n.Listen(tEPFM)
	set := vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 1, portInfo(2))
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: fmLID, DLID: enginetest.LIDB, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, set)
	if err != nil {
		t.Fatal(err)
	}
	if !trB.Inject(tEPFM, pkt) {
		t.Fatal("the Set was not queued")
	}
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the Set did not reach the netdev factory within 5 s")
	}

	// The Set now waits in its netlink call; frames to vport 0 cross the
	// same loop meanwhile.
	macA, macB := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
	for i := range 20 {
		f := enginetest.EthFrame(macB, macA, 100+i)
		if _, err := a.Host[0].Write([][]byte{f}, 0); err != nil {
			t.Fatal(err)
		}
		if got := enginetest.ReadFrame(t, hostB[0]); !bytes.Equal(got, f) {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(f))
		}
	}
	msgs := []hfi.Message{{Buf: make([]byte, encap.MaxPacketLen)}}
	if k, _ := fm.TryReadBatch(msgs); k != 0 {
		t.Fatal("the Set was answered while its netdev was still being made")
	}

	close(gate)
	for deadline := time.Now().Add(5 * time.Second); ; {
		k, err := fm.TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer to the Set within 5 s of the netdev being made")
		}
		time.Sleep(time.Millisecond) // polling the fake manager's queue
	}
	resp, err := encap.ParseMgmt(msgs[0].Buf[:msgs[0].N])
	if err != nil {
		t.Fatal(err)
	}
	if m, st := vema.Method(resp.MAD[3]), vema.Status(binary.BigEndian.Uint16(resp.MAD[4:])); m != vema.MethodGetResp || st != vema.StatusSuccess {
		t.Fatalf("answer: method %#x status %v, want GetResp success", m, st)
	}
	if eB.Port(1) == nil {
		t.Fatal("no vport 1 after the Set succeeded")
	}
}

// TestMADQueueBounded: while the management goroutine is held in a slow
// Set, the data plane hands over MADs until MaxQueuedMADs are in hand and
// drops the rest, counted (mgmt_dropped); none is lost once the Set is
// done.
func TestMADQueueBounded(t *testing.T) {
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(tEPNode), hfi.Config{LID: 0x10})
	entered, gate := make(chan struct{}), make(chan struct{})
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		close(entered)
		<-gate
		port, _ := taptest.Pair(taptest.Options{})
		return port, nil
	})
	m := vnicd.NewMgmt(e, vnicd.MgmtConfig{Trusted: []netip.AddrPort{tEPFM}}, nil)
	t.Cleanup(m.Wait)
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	mgmtPkt := func(mad []byte) []byte {
		pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: fmLID, DLID: 0x10, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
		if err != nil {
			t.Fatal(err)
		}
		return pkt
	}
	set := mgmtPkt(vemaMAD(vema.MethodSet, vema.AttrVESWPortInfo, 0, portInfo(1)))
	m.Receive(set, encap.Header16B(set), tEPFM)
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the Set did not reach the netdev factory within 5 s")
	}
	get := mgmtPkt(vemaMAD(vema.MethodGet, vema.AttrVESWPortInfo, 0, nil))
	const extra = 5
	// The Set holds one buffer; the others take as many Gets.
	for range vnicd.MaxQueuedMADs - 1 + extra {
		m.Receive(get, encap.Header16B(get), tEPFM)
	}
	if got := m.Dropped.Load(); got != extra {
		t.Errorf("mgmt_dropped %d, want %d", got, extra)
	}
	close(gate)
	m.Wait()
	if e.Port(0) == nil {
		t.Error("no vport 0 after the held Set was let go")
	}
	if bad, untrusted := m.Bad.Load(), m.Untrusted.Load(); bad != 0 || untrusted != 0 {
		t.Errorf("mgmt_bad %d, mgmt_untrusted %d; want 0", bad, untrusted)
	}
}
