package engine

import (
	"sync"
	"testing"

	"github.com/opavnic/opavnic/internal/race"
	"github.com/opavnic/opavnic/vnicd/taptest"
	"go.uber.org/zap"
)

// TestOperStateAfterConcurrentLinkAndConfig: oper_state is FORWARDING iff
// config_state is FORWARDING and the netdev is up (opa_vnic_update_state,
// docs/linux-compat.md §6), also when the link watcher's up/down and a
// VESWPortInfo Set's config_state land at the same time: neither may store
// a state computed from the other's old value.
func TestOperStateAfterConcurrentLinkAndConfig(t *testing.T) {
	e := &Engine{log: zap.NewNop()}
	fwd := newPortState(PortConfig{VESW: VESWConfig{EthMTU: 1500}, Port: VPortConfig{ConfigState: StateForwarding}}, nil)
	drop := newPortState(PortConfig{VESW: VESWConfig{EthMTU: 1500}, Port: VPortConfig{ConfigState: StateDropAll}}, nil)
	dev, _ := taptest.Pair(taptest.Options{})
	p := &Port{dev: dev}
	rounds := 1000000
	if testing.Short() || race.Enabled {
		rounds = 100000
	}
	bad := 0
	for i := range rounds {
		up := i%2 == 0
		st := fwd
		if i%4 < 2 {
			st = drop
		}
		// The state before: the opposite of what the round sets.
		p.st.Store(map[bool]*portState{true: drop, false: fwd}[st == fwd])
		p.linkUp.Store(!up)
		p.updateOper()
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; e.setLinkUp(p, up) }()
		go func() { defer wg.Done(); <-start; p.st.Store(st); e.applyState(p) }()
		close(start)
		wg.Wait()
		if want := st == fwd && up; p.fwd.Load() != want {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rounds left oper_state not FORWARDING iff config_state FORWARDING and link up", bad, rounds)
	}
}
