// Package enginetest is a fabric of engines in memory for tests: HFIs
// joined by hfitest, ports on taptest pairs, the test holding the kernel's
// end of each pair.
package enginetest

import (
	"encoding/binary"
	"net/netip"
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
// knows LIDA at EPA, LIDB at EPB and the group Mcast of both. The engine
// is closed on cleanup.
func NewNode(t testing.TB, n *hfitest.Network, lid uint32, ep netip.AddrPort) *Node {
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
	nd.Engine = engine.NewEngine(h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		port, host := taptest.Pair(taptest.Options{})
		nd.Host[s.VPort] = host
		return port, nil
	}, nil)
	t.Cleanup(func() { nd.Engine.Close() })
	return nd
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
