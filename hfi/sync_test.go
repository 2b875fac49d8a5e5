package hfi_test

import (
	"net/netip"
	"sync"

	"github.com/opavnic/opavnic/encap"
)

type syncRecorder struct {
	mu sync.Mutex
	n  int
}

func (r *syncRecorder) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}
func (r *syncRecorder) Flush() {}
func (r *syncRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
