package engine_test

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// TestRxSteeringRuns checks receive steering, which reuses its last lookup
// while the vesw_id and the steering table stay the same: packets for two
// ports' vesws in runs and alternating, one for a vesw no port is on
// between them, then a port moved to another vesw (a new table), after
// which its old vesw must find no port and its new one the port.
func TestRxSteeringRuns(t *testing.T) {
	n := hfitest.NewNetwork()
	nd := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	for vport, vesw := range []encap.VESWID{1, 2} {
		if err := nd.Engine.SetPort(uint8(vport), enginetest.PortConfig(enginetest.LIDA, vesw, 0x8001), engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	frame := enginetest.EthFrame(bcast, [6]byte{2, 0, 0, 0, 0, 9}, 100)
	pkt := func(vesw encap.VESWID) []byte {
		buf := make([]byte, encap.Headroom+len(frame)+encap.Tailroom)
		copy(buf[encap.Headroom:], frame)
		p, err := encap.EncapVNIC(buf, encap.Headroom, len(frame), &encap.VNICParams{
			SLID: enginetest.LIDB, DLID: enginetest.LIDA, PKey: 0x8001, VESWID: vesw,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	deliver := func(vesws ...encap.VESWID) {
		t.Helper()
		for _, v := range vesws {
			p := pkt(v)
			nd.Engine.Receive(p, encap.Header16B(p), enginetest.EPB)
		}
		nd.Engine.Flush()
	}
	received := func(vport uint8) uint64 { return nd.Engine.Port(vport).Counters.RxPackets.Load() }
	expect := func(step string, p0, p1, noPort uint64) {
		t.Helper()
		if got0, got1, gotNo := received(0), received(1), nd.Engine.RxNoPort.Load(); got0 != p0 || got1 != p1 || gotNo != noPort {
			t.Fatalf("%s: port 0 got %d, port 1 %d, no port %d; want %d, %d, %d", step, got0, got1, gotNo, p0, p1, noPort)
		}
	}
	deliver(1, 1, 2, 2, 1, 3, 3, 2, 1)
	expect("first batch", 4, 3, 2)
	deliver(1)
	expect("second batch", 5, 3, 2)
	if err := nd.Engine.SetPort(0, enginetest.PortConfig(enginetest.LIDA, 3, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	deliver(1, 3, 2, 1)
	expect("port 0 moved to vesw 3", 6, 4, 4)
}
