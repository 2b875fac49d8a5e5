package engine_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/race"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

func TestEngineUnicastAndBroadcast(t *testing.T) {
	n := hfitest.NewNetwork()
	a, b := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA), enginetest.NewNode(t, n, enginetest.LIDB, enginetest.EPB)
	for _, nd := range []*enginetest.Node{a, b} {
		if err := nd.Engine.SetPort(0, enginetest.PortConfig(nd.HFI.LID(), 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	macA, macB := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
	f := enginetest.EthFrame(macB, macA, 200)
	if _, err := a.Host[0].Write([][]byte{f}, 0); err != nil {
		t.Fatal(err)
	}
	if got := enginetest.ReadFrame(t, b.Host[0]); !bytes.Equal(got, f) {
		t.Fatalf("b got %d bytes, want the 200-byte frame", len(got))
	}
	bcast := enginetest.EthFrame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, macB, 42) // a runt: padded to 60
	if _, err := b.Host[0].Write([][]byte{bcast}, 0); err != nil {
		t.Fatal(err)
	}
	got := enginetest.ReadFrame(t, a.Host[0])
	if len(got) != 60 || !bytes.Equal(got[:42], bcast) || !bytes.Equal(got[42:], make([]byte, 18)) {
		t.Fatalf("a got % x, want the broadcast zero-padded to 60", got)
	}
	ca, cb := a.Engine.Port(0).Counters.Snapshot(), b.Engine.Port(0).Counters.Snapshot()
	want := map[string][2]uint64{ // a, b
		"tx_packets": {1, 1}, "rx_packets": {1, 1}, "tx_unicast": {1, 0}, "tx_mcastbcast": {0, 1},
		"rx_unicast": {0, 1}, "rx_mcastbcast": {1, 0}, "tx_bytes": {204, 64}, "rx_bytes": {64, 204},
		"tx_128_255": {1, 0}, "tx_64_size": {0, 1}, "rx_64_size": {1, 0}, "rx_128_255": {0, 1},
	}
	for i := range ca {
		if w, ok := want[ca[i].Name]; ok && (ca[i].Value != w[0] || cb[i].Value != w[1]) {
			t.Errorf("%s: a %d b %d, want %v", ca[i].Name, ca[i].Value, cb[i].Value, w)
		}
	}
	// opa_vnic_ethtool.c's vnic_gstrings_stats has 39 entries (8 netdev,
	// 22 summary, 9 error; docs/linux-compat.md §5 says 38, a miscount).
	if len(ca) != 41 {
		t.Errorf("%d counters, want the kernel's 39 plus rx_bad_veswid and rx_bad_pkey", len(ca))
	}
}

func TestEngineDropStateAndDLIDZero(t *testing.T) {
	n := hfitest.NewNetwork()
	a := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	cfg := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	cfg.Port.ConfigState = engine.StateDropAll
	if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	p := a.Engine.Port(0)
	buf := make([]byte, engine.TxBufLen)
	f := enginetest.EthFrame(encap.MACForLID(enginetest.LIDB, 1), encap.MACForLID(enginetest.LIDA, 1), 100)
	copy(buf[encap.Headroom:], f)
	if p.EncapOne(buf, len(f)) != nil || p.Counters.TxDropState.Load() != 1 {
		t.Fatal("a DROP_ALL port must drop and count tx_drop_state")
	}
	cfg.Port.ConfigState = engine.StateForwarding
	if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	// A globally administered unicast MAC, no MAC table, no default port.
	g := enginetest.EthFrame([6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, encap.MACForLID(enginetest.LIDA, 1), 100)
	copy(buf[encap.Headroom:], g)
	if p.EncapOne(buf, len(g)) != nil || p.Counters.TxDLIDZero.Load() != 1 {
		t.Fatal("unknown unicast with no default port must drop as tx_dlid_zero")
	}
	// The MAC table and the default port both give a DLID.
	if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, []engine.MACEntry{{MAC: [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, DLID: enginetest.LIDB}}); err != nil {
		t.Fatal(err)
	}
	if pkt := p.EncapOne(buf, len(g)); pkt == nil || encap.Header16B(pkt).DLID() != enginetest.LIDB {
		t.Fatal("MAC table entry not used")
	}
	cfg.VESW.DefPortMask = 1 << 3
	cfg.VESW.UcastDLID[3] = 0x4242
	if err := a.Engine.SetPort(0, cfg, engine.NetdevConfig{}, []engine.MACEntry{}); err != nil {
		t.Fatal(err)
	}
	if pkt := p.EncapOne(buf, len(g)); pkt == nil || encap.Header16B(pkt).DLID() != 0x4242 {
		t.Fatal("default port's unknown-unicast DLID not used")
	}
}

func TestEngineRejectsDuplicateVESW(t *testing.T) {
	a := enginetest.NewNode(t, hfitest.NewNetwork(), enginetest.LIDA, enginetest.EPA)
	if err := a.Engine.SetPort(0, enginetest.PortConfig(enginetest.LIDA, 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Engine.SetPort(1, enginetest.PortConfig(enginetest.LIDA, 1, 0x8001), engine.NetdevConfig{}, nil); err == nil {
		t.Fatal("two ports on one vesw must be refused")
	}
}

// pipe moves one frame through both engines synchronously: port A's
// transmit decisions and encapsulation, A's HFI sender, the in-memory wire,
// B's HFI receive checks, B's port receive checks and B's TAP write. No
// goroutine is involved, so allocations are the path's own.
type pipe struct {
	a, b  *enginetest.Node
	pa    *engine.Port
	sa    *hfi.Sender
	buf   []byte
	pkts  [][]byte
	msgs  []hfi.Message
	frame []byte
	rbufs [][]byte
	sizes []int
}

func newPipe(t testing.TB, size int) *pipe {
	n := hfitest.NewNetwork()
	// The test drives both nodes' paths by hand (A's encap and send, B's
	// transport read and receive): their data planes must not run, or
	// B's loop would take the packet the test reads.
	p := &pipe{a: enginetest.NewStoppedNode(t, n, enginetest.LIDA, enginetest.EPA), b: enginetest.NewStoppedNode(t, n, enginetest.LIDB, enginetest.EPB)}
	for _, nd := range []*enginetest.Node{p.a, p.b} {
		cfg := enginetest.PortConfig(nd.HFI.LID(), 1, 0x8001)
		cfg.VESW.EthMTU = 9000 // jumbo, so that every benchmark size passes
		if err := nd.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	p.pa = p.a.Engine.Port(0)
	p.sa = p.a.HFI.NewSender()
	p.buf = make([]byte, engine.TxBufLen)
	p.frame = enginetest.EthFrame(encap.MACForLID(enginetest.LIDB, 1), encap.MACForLID(enginetest.LIDA, 1), size)
	p.pkts = make([][]byte, 1)
	p.msgs = make([]hfi.Message, 4)
	for i := range p.msgs {
		p.msgs[i].Buf = make([]byte, encap.MaxPacketLen)
	}
	p.rbufs = [][]byte{make([]byte, 20000)}
	p.sizes = []int{0}
	return p
}

func (p *pipe) once(t testing.TB) {
	copy(p.buf[encap.Headroom:], p.frame)
	pkt := p.pa.EncapOne(p.buf, len(p.frame))
	if pkt == nil {
		t.Fatal("encap dropped the frame")
	}
	p.pkts[0] = pkt
	p.sa.Send(p.pkts)
	k, err := p.b.Tr.ReadBatch(p.msgs)
	if err != nil || k != 1 {
		t.Fatalf("wire: %d, %v", k, err)
	}
	p.b.HFI.ReceiveBatch(p.msgs[:k])
	if q := p.b.Host[0].Queued(); q != 1 { // never block on a dropped frame
		t.Fatalf("%d frames reached b's TAP, want 1", q)
	}
	if n, err := p.b.Host[0].Read(p.rbufs, p.sizes, 0); err != nil || n != 1 || p.sizes[0] != len(p.frame) {
		t.Fatalf("host read: %d, %v, size %d", n, err, p.sizes[0])
	}
}

func TestInProcessPathAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector; scripts/test.sh checks them in its non-race pass")
	}
	p := newPipe(t, 1500)
	p.once(t) // warm up the fakes' buffer pools
	if allocs := testing.AllocsPerRun(200, func() { p.once(t) }); allocs != 0 {
		t.Fatalf("one frame through encode, HFI and decode allocates %v times", allocs)
	}
	if !bytes.Equal(p.rbufs[0][:p.sizes[0]], p.frame) {
		t.Fatal("frame changed on the way")
	}
}

func BenchmarkInProcessPath(b *testing.B) {
	for _, size := range []int{64, 512, 1500, 9000} {
		b.Run(sizeName(size), func(b *testing.B) {
			p := newPipe(b, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				p.once(b)
			}
		})
	}
}

func sizeName(n int) string {
	return map[int]string{64: "64", 512: "512", 1500: "1500", 9000: "9000"}[n]
}

// TestEngineNoPortAfterClose: once Close has begun, SetPort creates no port
// (a VESWPortInfo Set handled during shutdown), so none outlives Close; the
// device factory is not called.
func TestEngineNoPortAfterClose(t *testing.T) {
	n := hfitest.NewNetwork()
	nd := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	cfg := enginetest.PortConfig(enginetest.LIDA, 1, 0x8001)
	if err := nd.Engine.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := nd.Engine.Close(); err != nil {
		t.Fatal(err)
	}
	made := len(nd.Host)
	err := nd.Engine.SetPort(1, enginetest.PortConfig(enginetest.LIDA, 2, 0x8001), engine.NetdevConfig{}, nil)
	if !errors.Is(err, engine.ErrEngineClosed) {
		t.Errorf("SetPort after Close: %v, want ErrEngineClosed", err)
	}
	if ps := nd.Engine.Ports(); len(ps) != 0 || len(nd.Host) != made {
		t.Errorf("after Close: %d ports, %d devices made (want 0, %d)", len(ps), len(nd.Host), made)
	}
}

// TestEthMTUBelowMinimum: an EM may set an eth_mtu below 68, where the
// kernel's max_mtu = max(eth_mtu, min_mtu) left the netdev at 68; frames up
// to 68 + 18 bytes still pass both ways, and a longer one is oversize.
func TestEthMTUBelowMinimum(t *testing.T) {
	n := hfitest.NewNetwork()
	a, b := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA), enginetest.NewNode(t, n, enginetest.LIDB, enginetest.EPB)
	for _, nd := range []*enginetest.Node{a, b} {
		pc := enginetest.PortConfig(nd.HFI.LID(), 1, 0x8001)
		pc.VESW.EthMTU = 40
		if err := nd.Engine.SetPort(0, pc, engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	macA, macB := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
	f := enginetest.EthFrame(macB, macA, 68+18)
	if _, err := a.Host[0].Write([][]byte{f}, 0); err != nil {
		t.Fatal(err)
	}
	if got := enginetest.ReadFrame(t, b.Host[0]); !bytes.Equal(got, f) {
		t.Fatalf("b got %d bytes, want the %d-byte frame", len(got), len(f))
	}
	if _, err := a.Host[0].Write([][]byte{enginetest.EthFrame(macB, macA, 68+18+1)}, 0); err != nil {
		t.Fatal(err)
	}
	c := &a.Engine.Port(0).Counters
	waitfor.Poll(2*time.Second, func() bool { return c.TxFifoErrors.Load() != 0 })
	if got := c.TxFifoErrors.Load(); got != 1 {
		t.Errorf("a %d-byte frame: tx_fifo_errors %d, want 1 (longer than min_mtu + 18)", 68+18+1, got)
	}
}

// TestEngineRefusedFrameNotReceived: a frame the device refuses counts in
// rx_fifo_errors only, as the kernel counts a frame it drops for want of
// room (docs/linux-compat.md §3, step 4): not in rx_packets, rx_bytes, the
// histogram or the unicast count. The frames around it are counted.
func TestEngineRefusedFrameNotReceived(t *testing.T) {
	n := hfitest.NewNetwork()
	a := enginetest.NewNode(t, n, enginetest.LIDA, enginetest.EPA)
	b := enginetest.NewStoppedNode(t, n, enginetest.LIDB, enginetest.EPB)
	var host *taptest.Device
	b.Engine = enginetest.StartEngine(t, b.HFI, func(engine.DeviceSpec) (tap.Netdev, error) {
		port, h := taptest.Pair(taptest.Options{MaxFrame: 300}) // refuses longer frames
		host = h
		return port, nil
	})
	for _, nd := range []*enginetest.Node{a, b} {
		if err := nd.Engine.SetPort(0, enginetest.PortConfig(nd.HFI.LID(), 1, 0x8001), engine.NetdevConfig{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	macA, macB := encap.MACForLID(enginetest.LIDA, 1), encap.MACForLID(enginetest.LIDB, 1)
	for _, size := range []int{200, 400, 260} {
		if _, err := a.Host[0].Write([][]byte{enginetest.EthFrame(macB, macA, size)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(enginetest.ReadFrame(t, host)); got != 200 {
		t.Fatalf("b's first frame has %d bytes, want 200", got)
	}
	if got := len(enginetest.ReadFrame(t, host)); got != 260 {
		t.Fatalf("b's second frame has %d bytes, want 260 (the 400-byte one refused)", got)
	}
	c := &b.Engine.Port(0).Counters
	waitfor.Poll(2*time.Second, func() bool { return c.RxFifoErrors.Load() != 0 })
	got := map[string]uint64{}
	for _, v := range c.Snapshot() {
		got[v.Name] = v.Value
	}
	want := map[string]uint64{"rx_packets": 2, "rx_bytes": 204 + 264, "rx_unicast": 2, "rx_untagged": 2,
		"rx_128_255": 1, "rx_256_511": 1, "rx_fifo_errors": 1}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %d, want %d", k, got[k], w)
		}
	}
}
