package hfi

import (
	"sync"
	"sync/atomic"
	"time"
)

// PeerTraffic is what one port exchanged with one unicast LID of its
// directory: the packets and bytes (whole 16B packets) it received from the
// LID, those it sent to it, and when it last received
// from it. Received packets are counted once they passed every receive check
// (docs/wire.md §7) and went to their receiver. Sent ones are counted once the
// kernel took them: a datagram it refused (no route, a full device queue)
// counts in PortXmitDiscards instead. A multicast packet counts once
// for each member endpoint it went to (under the member's LID, or the first
// of the LIDs that share the endpoint).
type PeerTraffic struct {
	RxPkts, RxBytes atomic.Uint64
	TxPkts, TxBytes atomic.Uint64
	lastRx          atomic.Int64 // unix nanoseconds; 0: never
}

// LastRx returns when a packet from the LID last passed the receive checks,
// and false if none ever did.
func (t *PeerTraffic) LastRx() (time.Time, bool) {
	ns := t.lastRx.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// trafficTable is the HFI's PeerTraffic by LID. The data path reaches the
// entries through routes (no lookup of its own, no lock); the table itself
// is touched only when routes are rebuilt, so that a LID keeps its counts
// across directory and LID changes and loses them when it leaves the
// directory.
type trafficTable struct {
	mu sync.Mutex
	m  map[uint32]*PeerTraffic
}

// entries returns the entries of the unicast LIDs of d, made where missing;
// the entries of LIDs no longer in d are dropped.
func (tt *trafficTable) entries(d *Directory) map[uint32]*PeerTraffic {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	m := make(map[uint32]*PeerTraffic, len(d.endpoints))
	for lid := range d.endpoints {
		t := tt.m[lid]
		if t == nil {
			t = new(PeerTraffic)
		}
		m[lid] = t
	}
	tt.m = m
	return m
}

// get returns the entry of lid, nil if lid is not in the directory.
func (tt *trafficTable) get(lid uint32) *PeerTraffic {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.m[lid]
}

// PeerTraffic returns the traffic with a unicast LID of the directory, and
// false for a LID that is not in it.
func (h *HFI) PeerTraffic(lid uint32) (*PeerTraffic, bool) {
	t := h.traffic.get(lid)
	return t, t != nil
}

// tally adds up a batch's packets by peer, for one atomic add per run of
// packets of one peer instead of one per packet.
type tally struct {
	t           *PeerTraffic
	pkts, bytes uint64
	rx          bool
	now         int64 // set at the first flush of a batch
}

func (y *tally) add(t *PeerTraffic, n int) {
	if t == nil {
		return
	}
	if t != y.t {
		y.flush()
		y.t = t
	}
	y.pkts++
	y.bytes += uint64(n)
}

func (y *tally) flush() {
	t := y.t
	if t == nil || y.pkts == 0 {
		return
	}
	if y.rx {
		t.RxPkts.Add(y.pkts)
		t.RxBytes.Add(y.bytes)
		if y.now == 0 {
			y.now = time.Now().UnixNano()
		}
		t.lastRx.Store(y.now)
	} else {
		t.TxPkts.Add(y.pkts)
		t.TxBytes.Add(y.bytes)
	}
	y.pkts, y.bytes = 0, 0
}
