package readiness_test

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/readiness"
)

// readable polls the signal's fd without waiting.
func readable(t *testing.T, s *readiness.Signal) bool {
	t.Helper()
	var n int
	err := s.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		var err error
		n, err = unix.Poll(fds, 0)
		if err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestSignal(t *testing.T) {
	s := readiness.Must()
	if readable(t, s) {
		t.Fatal("a new signal is readable")
	}
	s.Notify()
	s.Notify()
	if !readable(t, s) {
		t.Fatal("not readable after Notify")
	}
	s.Clear()
	if readable(t, s) {
		t.Fatal("readable after Clear")
	}
	s.Clear() // clearing a clear signal does not block
	s.Notify()

	var fd uintptr
	if err := s.Control(func(f uintptr) { fd = f }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Clear() // a closed signal stays readable
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 0); err != nil || n != 1 {
		t.Fatalf("a closed signal's fd: poll %d, %v; want readable", n, err)
	}
	if err := s.Control(func(uintptr) { t.Error("Control ran f after Close") }); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Control after Close: %v, want os.ErrClosed", err)
	}
	s.Close() // twice is fine
}
