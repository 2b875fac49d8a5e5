package hfi

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUDPConcurrentWriterAfterPeerErrors: datagrams to a live peer are all
// sent while another goroutine's datagrams to a dead peer (over loopback,
// answered at once and without rate limit) keep setting the socket's
// pending error, which a send returns instead of sending: a single retry
// may meet a new one. Without IP_RECVERR none is refused.
func TestUDPConcurrentWriterAfterPeerErrors(t *testing.T) {
	u, live, dead := liveAndDead(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pkt := make([]byte, 64)
		for deadline := time.Now().Add(2 * time.Second); !stop.Load() && time.Now().Before(deadline); {
			u.WriteBatch([]Message{{Buf: pkt, N: len(pkt), Addr: dead}})
		}
	}()
	// a reader drains the error queue now and then, as vnicd's loop would
	wg.Add(1)
	go func() {
		defer wg.Done()
		msgs := newReadBatch(8)
		for deadline := time.Now().Add(2 * time.Second); !stop.Load() && time.Now().Before(deadline); {
			u.TryReadBatch(msgs)
			// A non-blocking reader's pause between reads, while the writers run.
			time.Sleep(time.Millisecond)
		}
	}()
	pkt := make([]byte, 64)
	refused, sent := 0, 0
	var lastErr error
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		n, err := u.WriteBatch([]Message{{Buf: pkt, N: len(pkt), Addr: live.LocalAddr()}})
		if n != 1 {
			refused++
			lastErr = err
		} else {
			sent++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("to the live peer: %d sent, %d refused (last error %v); peer errors recorded %d", sent, refused, lastErr, u.PeerErrorCount())
	if refused > 0 {
		t.Errorf("%d datagrams to a live peer refused: another peer's ICMP errors cost them", refused)
	}
}
