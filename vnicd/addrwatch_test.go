package vnicd_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd"
)

// fakeHostAddrs stands in for the kernel's route lookup toward the FM and
// the host's address list.
type fakeHostAddrs struct {
	mu    sync.Mutex
	src   netip.Addr // invalid: no route
	addrs map[netip.Addr]bool
}

func (h *fakeHostAddrs) route(netip.AddrPort) (netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.src.IsValid() {
		return netip.Addr{}, errors.New("network is unreachable")
	}
	return h.src, nil
}

func (h *fakeHostAddrs) local(a netip.Addr) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addrs[a]
}

func (h *fakeHostAddrs) set(src string, addrs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.src = netip.Addr{}
	if src != "" {
		h.src = netip.MustParseAddr(src)
	}
	h.addrs = map[netip.Addr]bool{}
	for _, a := range addrs {
		h.addrs[netip.MustParseAddr(a)] = true
	}
}

// TestAnnounceWhenUnderlayAddressGone: a joined node that listens on the
// wildcard address announces at once when the address its packets to the
// FM left from is no longer the host's, and not when only the route's
// preferred source changes or there is no route for a moment.
func TestAnnounceWhenUnderlayAddressGone(t *testing.T) {
	n := hfitest.NewNetwork()
	fm := newFakeFM(t, n)
	var host fakeHostAddrs
	host.set("10.0.0.5", "10.0.0.5")
	nd := newManagedNodeWith(t, n, func(m *vnicd.Mgmt) {
		m.WatchAddr(host.route, host.local)
		m.HeardFromSM(0x10005)
	})
	// quiet: nothing from the node for d (announces are what it could send).
	quiet := func(step string, d time.Duration) {
		t.Helper()
		select {
		case pkt := <-fm.in:
			t.Fatalf("%s: the node sent %d bytes (an announce) while joined", step, len(pkt))
		case <-time.After(d):
		}
	}
	announce := func(step string, within time.Duration) {
		t.Helper()
		start := time.Now()
		select {
		case pkt := <-fm.in:
			mp, err := encap.ParseMgmt(pkt)
			if err != nil {
				t.Fatal(err)
			}
			if mp.MAD[1] != 0x01 || mp.MAD[3] != 0x05 || binary.BigEndian.Uint16(mp.MAD[36:]) != 144 {
				t.Fatalf("%s: class %#x method %#x, want an announce (trap 144)", step, mp.MAD[1], mp.MAD[3])
			}
			t.Logf("%s: announce after %v", step, time.Since(start).Round(time.Millisecond))
		case <-time.After(within):
			t.Fatalf("%s: no announce within %v", step, within)
		}
	}

	quiet("address unchanged", 600*time.Millisecond)
	// Another address preferred, the first still the host's: the FM can
	// still reach the node where it knows it.
	nd.mgmt.HeardFromSM(0x10005)
	host.set("10.0.0.15", "10.0.0.5", "10.0.0.15")
	quiet("new source, old address kept", 600*time.Millisecond)
	// The address removed, no route for a moment, then the new one.
	nd.mgmt.HeardFromSM(0x10005)
	host.set("", "10.0.0.5")
	quiet("no route", 600*time.Millisecond)
	host.set("10.0.0.25", "10.0.0.5", "10.0.0.25")
	announce("source address gone", time.Second)
	// Until the SM is heard again the node announces every second.
	announce("next announce", 1500*time.Millisecond)
}
