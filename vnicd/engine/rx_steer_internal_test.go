package engine

import (
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// BenchmarkQueueRxReceive runs the per-packet receive checks of a batch of
// 64 packets for one port (steering, state, P_Key, size, queueing), without
// the device write; the steering table holds four vesws.
func BenchmarkQueueRxReceive(b *testing.B) {
	e := &Engine{}
	t := &rxTable{byVESW: map[encap.VESWID]*Port{}}
	var ports []*Port
	for i := range 4 {
		cfg := PortConfig{VESW: VESWConfig{VESWID: encap.VESWID(i + 1), PKey: 0x8001, EthMTU: 1500}}
		p := &Port{vport: uint8(i)}
		p.st.Store(newPortState(cfg, nil))
		p.fwd.Store(true)
		p.mtu.Store(1500)
		t.byVESW[cfg.VESW.VESWID] = p
		ports = append(ports, p)
	}
	t.first = ports[0]
	e.rx.Store(t)
	r := &queueRx{e: e}
	buf := make([]byte, encap.Headroom+1500+encap.Tailroom)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, 1500, &encap.VNICParams{SLID: 1, DLID: 2, PKey: 0x8001, VESWID: 2})
	if err != nil {
		b.Fatal(err)
	}
	h := encap.Header16B(pkt)
	b.ReportAllocs()
	for b.Loop() {
		for range 64 {
			r.Receive(pkt, h, netip.AddrPort{})
		}
		r.pending[1] = r.pending[1][:0]
		r.dirty = r.dirty[:0]
	}
	if ports[1].Counters.RxDropState.Load()+ports[1].Counters.RxBadPKey.Load()+ports[1].Counters.RxOversize.Load() != 0 {
		b.Fatal("packets dropped")
	}
}
