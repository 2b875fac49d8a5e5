// Package handoff moves work off a data-plane loop that must not wait: the
// loop copies a packet's bytes into a pooled buffer and goes on, and a
// goroutine handles the copies one at a time, in order. vnicd's management
// plane takes its MADs this way, and an emulated switch its SMPs, so that a
// handler that makes netlink calls or answers slowly never holds up the
// packets of the loop.
//
// The buffers are allocated once: Put allocates nothing, and when every
// buffer is in use (the handler is that far behind) it refuses the work,
// which the caller counts as a drop.
package handoff

import (
	"sync"
	"sync/atomic"
)

// Queue hands byte slices with metadata of type T to one handler
// goroutine, started when work arrives and ended when none is left.
type Queue[T any] struct {
	handle func(data []byte, meta T)
	work   chan item[T]
	free   chan []byte
	queued atomic.Int32 // put and not yet handled; a goroutine runs while > 0
	wg     sync.WaitGroup
}

type item[T any] struct {
	buf  []byte
	n    int
	meta T
}

// New returns a queue of at most n pieces of work of at most size bytes
// each, handled by handle. handle must not keep data after it returns.
func New[T any](n, size int, handle func(data []byte, meta T)) *Queue[T] {
	q := &Queue[T]{handle: handle, work: make(chan item[T], n), free: make(chan []byte, n)}
	backing := make([]byte, n*size)
	for i := range n {
		q.free <- backing[i*size : (i+1)*size : (i+1)*size]
	}
	return q
}

// Put copies data (which must fit the queue's size) and queues it with
// meta. It reports false, queuing nothing, when data is too long or no
// buffer is free. It never waits.
func (q *Queue[T]) Put(data []byte, meta T) bool {
	var buf []byte
	select {
	case buf = <-q.free:
	default:
		return false
	}
	if len(data) > len(buf) {
		q.free <- buf
		return false
	}
	q.work <- item[T]{buf: buf, n: copy(buf, data), meta: meta}
	// Queued before counted: a goroutine that sees the count above zero
	// finds work to take. The count leaving zero starts one.
	if q.queued.Add(1) == 1 {
		q.wg.Add(1)
		go q.drain()
	}
	return true
}

// drain handles queued work until none is left.
func (q *Queue[T]) drain() {
	defer q.wg.Done()
	for {
		it := <-q.work
		q.handle(it.buf[:it.n], it.meta)
		q.free <- it.buf
		if q.queued.Add(-1) == 0 {
			return
		}
	}
}

// Wait returns once all work put so far has been handled.
func (q *Queue[T]) Wait() { q.wg.Wait() }
