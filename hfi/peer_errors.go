package hfi

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// PeerErrorQuiet is how long an endpoint goes without errors before its
// next error starts a new run: PeerError's Count and First are its run's.
const PeerErrorQuiet = 2 * time.Minute

// PeerError is what the kernel last reported for datagrams sent to one
// endpoint, and how often it did in the current run of errors (no gap of
// PeerErrorQuiet between them).
type PeerError struct {
	Endpoint netip.AddrPort `json:"endpoint"` // where the datagrams went
	Errno    syscall.Errno  `json:"-"`
	Error    string         `json:"error"`         // the errno's text: "connection refused"
	Reason   string         `json:"reason"`        // "ICMP port unreachable", "local error"
	From     netip.Addr     `json:"from,omitzero"` // who reported it: the peer's host, a router, or none (local)
	MTU      uint32         `json:"mtu,omitempty"` // for "fragmentation needed" and "packet too big"
	Count    uint64         `json:"count"`         // errors reported for the endpoint in the run
	First    time.Time      `json:"first"`         // the run's first
	Last     time.Time      `json:"last"`          // the last of them
}

// String is the error for a log or a table: "connection refused (ICMP port
// unreachable from 10.0.0.2)".
func (e PeerError) String() string {
	s := e.Error + " (" + e.Reason
	if e.From.IsValid() {
		s += " from " + e.From.String()
	}
	if e.MTU > 0 {
		s += fmt.Sprintf(", MTU %d", e.MTU)
	}
	return s + ")"
}

// Describe is String with the run's count and age at now: "connection
// refused (ICMP port unreachable from 10.0.0.2), 12 times since 40s ago,
// last 1s ago".
func (e PeerError) Describe(now time.Time) string {
	age := func(t time.Time) string { return now.Sub(t).Truncate(time.Second).String() + " ago" }
	if e.Count == 1 {
		return fmt.Sprintf("%s, once, %s", e, age(e.Last))
	}
	return fmt.Sprintf("%s, %d times since %s, last %s", e, e.Count, age(e.First), age(e.Last))
}

// RecentPeerErrors returns the errors of errs whose last came in the
// PeerErrorQuiet before now, by endpoint.
func RecentPeerErrors(errs []PeerError, now time.Time) map[netip.AddrPort]PeerError {
	out := map[netip.AddrPort]PeerError{}
	for _, e := range errs {
		if now.Sub(e.Last) < PeerErrorQuiet {
			out[e.Endpoint] = e
		}
	}
	return out
}

// maxPeerErrors bounds the endpoints a transport keeps errors for (the
// directory has at most 4095 unicast LIDs, but the errors matter for the
// few peers that are down); past it, the endpoint whose last error is the
// oldest makes room. maxErrDrain bounds the entries one drain takes, and
// maxErrRetries how often one read drains and reads again before it
// returns what it has; maxSendErrRetries how often WriteBatch sends a
// datagram again that a pending error kept from going (onlyPendingErr).
const (
	maxPeerErrors     = 256
	maxErrDrain       = 64
	maxErrRetries     = 4
	maxSendErrRetries = 64
)

// A flood of errors, which anyone who can reach the host can forge (ICMP
// port unreachable quoting a datagram of ours), would starve the data path:
// the kernel hands the pending error to the next read or send instead of
// its datagram. More than maxErrsPerWindow errors in errWindow (10000 a
// second; hosts send a peer at most about one a second each) trip a
// breaker: the transport asks the kernel for no more errors
// (IP_RECVERR off) for errorsOffFor, then again.
const (
	errWindow        = 100 * time.Millisecond
	maxErrsPerWindow = 1000
	errorsOffFor     = 10 * time.Second
)

// peerErrors is the record of a transport, shared by the sockets of a queue
// group (ListenUDPQueues). Only the error path takes its lock; reads of
// datagrams never do.
type peerErrors struct {
	mu     sync.Mutex
	byEP   map[netip.AddrPort]*PeerError
	total  atomic.Uint64
	floods atomic.Uint64                 // breaker trips
	sink   atomic.Pointer[atomic.Uint64] // also counted there (HFI.Counters.XmitPeerErrors)
	fsink  atomic.Pointer[atomic.Uint64] // trips also counted there (HFI.Counters.PeerErrorFloods)
	now    func() time.Time              // tests
	offFor time.Duration                 // tests

	// The breaker, under mu: the current window, whether errors are off,
	// and how to turn them on or off on every socket of the group.
	winStart time.Time
	winCount int
	off      bool
	toggle   func(on bool)
}

func newPeerErrors() *peerErrors {
	return &peerErrors{byEP: map[netip.AddrPort]*PeerError{}, now: time.Now, offFor: errorsOffFor}
}

func (p *peerErrors) record(e PeerError) {
	p.total.Add(1)
	if s := p.sink.Load(); s != nil {
		s.Add(1)
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkFlood(now)
	if !e.Endpoint.IsValid() {
		return // counted only: the kernel said nothing of where it went
	}
	r, ok := p.byEP[e.Endpoint]
	if !ok {
		if len(p.byEP) >= maxPeerErrors {
			var oldest *PeerError
			for _, x := range p.byEP {
				if oldest == nil || x.Last.Before(oldest.Last) {
					oldest = x
				}
			}
			delete(p.byEP, oldest.Endpoint)
		}
		r = &PeerError{Endpoint: e.Endpoint, First: now}
		p.byEP[e.Endpoint] = r
	}
	count, first := r.Count+1, r.First
	if ok && now.Sub(r.Last) >= PeerErrorQuiet {
		count, first = 1, now // a new run of errors
	}
	*r = e
	r.Count, r.First, r.Last = count, first, now
}

// checkFlood counts an error in the current window and trips the breaker
// when the window has too many. Under p.mu.
func (p *peerErrors) checkFlood(now time.Time) {
	if now.Sub(p.winStart) >= errWindow {
		p.winStart, p.winCount = now, 0
	}
	if p.winCount++; p.winCount <= maxErrsPerWindow || p.off || p.toggle == nil {
		return
	}
	p.off = true
	p.floods.Add(1)
	if s := p.fsink.Load(); s != nil {
		s.Add(1)
	}
	p.toggle(false)
	time.AfterFunc(p.offFor, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.toggle(true)
		p.off, p.winCount = false, 0
	})
}

func (p *peerErrors) snapshot() []PeerError {
	p.mu.Lock()
	out := make([]PeerError, 0, len(p.byEP))
	for _, r := range p.byEP {
		out = append(out, *r)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b PeerError) int { return b.Last.Compare(a.Last) })
	return out
}
