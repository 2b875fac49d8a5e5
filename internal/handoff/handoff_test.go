package handoff_test

import (
	"bytes"
	"testing"

	"github.com/opavnic/opavnic/internal/handoff"
)

// TestQueue: work is handled in order, as copies; while the handler is
// held, Put takes as much as there are buffers and refuses the rest, and
// what it took is all handled once the handler goes on.
func TestQueue(t *testing.T) {
	gate := make(chan struct{})
	var got []string
	q := handoff.New(4, 8, func(data []byte, meta int) {
		if meta == 0 {
			<-gate
		}
		got = append(got, string(data))
	})
	buf := []byte("first")
	if !q.Put(buf, 0) {
		t.Fatal("Put refused the first piece")
	}
	copy(buf, "XXXXX") // the queue holds its own copy
	if q.Put([]byte("too long for 8"), 1) {
		t.Error("Put took more than a buffer holds")
	}
	taken := 1
	for i := 1; i <= 5; i++ {
		if q.Put([]byte{'0' + byte(i)}, i) {
			taken++
		}
	}
	if taken != 4 {
		t.Errorf("took %d pieces with 4 buffers", taken)
	}
	close(gate)
	q.Wait()
	if want := []string{"first", "1", "2", "3"}; len(got) != len(want) || !bytes.Equal([]byte(got[0]), []byte(want[0])) || got[3] != "3" {
		t.Fatalf("handled %q, want %q", got, want)
	}
	// A drained queue takes work again.
	if !q.Put([]byte("again"), 9) {
		t.Fatal("Put refused after the queue drained")
	}
	q.Wait()
	if got[len(got)-1] != "again" {
		t.Fatalf("last handled %q", got[len(got)-1])
	}
}

func TestPutAllocatesNothing(t *testing.T) {
	q := handoff.New(2, 64, func([]byte, struct{}) {})
	data := make([]byte, 40)
	if n := testing.AllocsPerRun(100, func() {
		q.Put(data, struct{}{})
		q.Wait()
	}); n > 1 {
		// Starting the handler goroutine is the one allocation, when the
		// queue was idle.
		t.Errorf("Put allocates %.1f times", n)
	}
}
