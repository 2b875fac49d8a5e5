// Package enginetest is a fabric of engines in memory for tests: HFIs
// joined by hfitest, ports on taptest pairs, the test holding the kernel's
// end of each pair. Each engine's data plane is its poll loop, as in
// production: the fakes are pollable.
package enginetest

import (
	"context"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

// The fabric's two nodes and its multicast group.
const (
	LIDA  = 0x10
	LIDB  = 0xABCDE
	Mcast = 0xF00001
)

// The nodes' endpoints.
var (
	EPA = netip.MustParseAddrPort("10.0.0.1:4793")
	EPB = netip.MustParseAddrPort("10.0.0.2:4793")
)

// Node is one node of the fabric: an HFI on the in-memory network, its
// engine, and the kernel side of each port's netdev.
type Node struct {
	HFI    *hfi.HFI
	Tr     *hfitest.Transport
	Engine *engine.Engine
	Host   map[uint8]*taptest.Device // the kernel side of each port's netdev
}

// NewNode makes a node with LID lid listening at ep on n; its directory
// knows LIDA at EPA, LIDB at EPB and the group Mcast of both. Its data
// plane runs until cleanup, which stops it and closes the engine.
func NewNode(t testing.TB, n *hfitest.Network, lid uint32, ep netip.AddrPort) *Node {
	t.Helper()
	nd := NewStoppedNode(t, n, lid, ep)
	nd.Start(t)
	return nd
}

// NewStoppedNode is NewNode without the data plane running, for a test
// that sets the engine up first (EnableQueues) or runs it itself
// (Engine.RunDataPlane, or Start). The engine is closed on cleanup.
func NewStoppedNode(t testing.TB, n *hfitest.Network, lid uint32, ep netip.AddrPort) *Node {
	t.Helper()
	tr := n.Listen(ep)
	h := hfi.New(tr, hfi.Config{LID: lid, VerifyICRC: true})
	dir, err := hfi.NewDirectory(
		map[uint32]netip.AddrPort{LIDA: EPA, LIDB: EPB},
		map[uint32][]uint32{Mcast: {LIDA, LIDB}},
	)
	if err != nil {
		t.Fatal(err)
	}
	h.SetDirectory(dir)
	nd := &Node{HFI: h, Tr: tr, Host: map[uint8]*taptest.Device{}}
	e, err := engine.NewEngine(h, Fakes(nd.Host), nil)
	if err != nil {
		t.Fatal(err)
	}
	nd.Engine = e
	t.Cleanup(func() { nd.Engine.Close() })
	return nd
}

// Start runs the node's data plane until cleanup, when it is stopped and
// the test fails if it returned an error.
func (nd *Node) Start(t testing.TB) {
	t.Helper()
	Run(t, nd.Engine)
}

// Run runs e's data plane until cleanup, when it is stopped and the test
// fails if it returned an error or did not stop within 5 s.
func Run(t testing.TB, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunDataPlane(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("RunDataPlane: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("RunDataPlane did not return within 5 s of its context's end")
		}
	})
}

// StartEngine makes an engine on h with newDevice (nil: Fakes(nil)), runs
// its data plane until cleanup, and then closes the engine.
func StartEngine(t testing.TB, h *hfi.HFI, newDevice engine.DeviceFactory) *engine.Engine {
	t.Helper()
	if newDevice == nil {
		newDevice = Fakes(nil)
	}
	e, err := engine.NewEngine(h, newDevice, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	Run(t, e)
	return e
}

// Fakes is a DeviceFactory of taptest pairs with the spec's MTU and MAC;
// the kernel's end of each goes to host, by vport, when host is not nil.
// The factory may be called from any goroutine; host is the caller's to
// read only once the port exists.
func Fakes(host map[uint8]*taptest.Device) engine.DeviceFactory {
	var mu sync.Mutex
	return func(s engine.DeviceSpec) (tap.Netdev, error) {
		port, peer := taptest.Pair(taptest.Options{MTU: s.MTU, MAC: s.MAC})
		if host != nil {
			mu.Lock()
			host[s.VPort] = peer
			mu.Unlock()
		}
		return port, nil
	}
}

// PortConfig is a forwarding port of lid on vesw with pkey, its MAC the one
// the LID gives.
func PortConfig(lid uint32, vesw encap.VESWID, pkey encap.PKey) engine.PortConfig {
	return engine.PortConfig{
		VESW: engine.VESWConfig{VESWID: vesw, PKey: pkey, McastDLID: Mcast, EthMTU: 1500},
		Port: engine.VPortConfig{EncapSLID: lid, BaseMAC: encap.MACForLID(encap.LID(lid), vesw), ConfigState: engine.StateForwarding},
	}
}

// EthFrame builds an IPv4/UDP frame of n bytes from src to dst MAC.
func EthFrame(dst, src [6]byte, n int) []byte {
	f := make([]byte, n)
	copy(f, dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], encap.EtherTypeIPv4)
	f[14] = 0x45
	f[14+9] = 17
	for i := 14 + 20; i < n; i++ {
		f[i] = byte(i)
	}
	return f
}

// ReadFrame reads one frame from d; the test fails after 2 s without one.
func ReadFrame(t testing.TB, d *taptest.Device) []byte {
	t.Helper()
	bufs := [][]byte{make([]byte, 20000)}
	sizes := []int{0}
	done := make(chan int, 1)
	go func() {
		n, _ := d.Read(bufs, sizes, 0)
		done <- n
	}()
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("read %d frames", n)
		}
		return bufs[0][:sizes[0]]
	case <-time.After(2 * time.Second):
		t.Fatal("no frame within 2s")
	}
	return nil
}
