package vnicd

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
)

// TestLimitSAQueries: with MaxSAQueries SA queries in flight, Path fails at
// once with ErrSABusy; an answer frees a slot. Announces take no slot: a
// TrapRepress to one of the recent ones is still a response asked for.
func TestLimitSAQueries(t *testing.T) {
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.5:4793")), hfi.Config{LID: 5})
	m := NewMgmt(enginetest.StartEngine(t, h, nil), MgmtConfig{FM: netip.MustParseAddrPort("10.0.0.100:4793")}, nil)
	for i := range MaxSAQueries {
		if m.expect(uint64(1000+i)) == nil {
			t.Fatalf("query %d refused", i)
		}
	}
	if _, err := m.Path(context.Background(), 7); !errors.Is(err, ErrSABusy) {
		t.Fatalf("query %d: %v, want ErrSABusy", MaxSAQueries+1, err)
	}
	if !m.deliver(1000, make([]byte, 256)) || m.expect(2000) == nil {
		t.Fatal("an answered query did not free its slot")
	}
	m.announced[0] = 77
	if !m.deliver(77, make([]byte, 256)) || len(m.pending) != MaxSAQueries {
		t.Fatalf("the TrapRepress of an announce: %d pending", len(m.pending))
	}
}
