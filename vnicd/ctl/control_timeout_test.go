package ctl

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveTestControl serves a control socket with one command, "echo".
func serveTestControl(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "c.sock")
	s, err := Listen(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("echo", func(args json.RawMessage) (any, error) { return len(args), nil })
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() { s.Close(); <-done })
	return sock
}

// TestControlRequestLimits: README, Limits: "control socket: 64
// connections, 1 MiB request, 5 s". A request of 1 MiB is served, one a
// byte longer is refused with a clear error (through Call, whose write the
// daemon stops reading), and a client that sends half a line gets an error
// answer within the 5 s, not a hang.
func TestControlRequestLimits(t *testing.T) {
	sock := serveTestControl(t)
	pad := func(n int) string { // a request line of n bytes with its '\n'
		head := `{"cmd":"echo","args":"`
		return head + strings.Repeat("x", n-len(head)-3) + `"}` + "\n"
	}
	for _, tc := range []struct {
		n   int
		err string
	}{{maxRequest, ""}, {maxRequest + 1, "request longer than 1048576 bytes"}} {
		resp, err := rawRoundTrip(sock, []byte(pad(tc.n)), false)
		if err != nil {
			t.Fatalf("%d bytes: %v", tc.n, err)
		}
		var r Response
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("%d bytes: answer %q", tc.n, resp)
		}
		if tc.err == "" && !r.OK || tc.err != "" && !strings.Contains(r.Error, tc.err) {
			t.Errorf("%d bytes: answer %+v; want error %q", tc.n, r, tc.err)
		}
	}
	// Through Call, 2 MiB of arguments.
	if err := Call(sock, "echo", strings.Repeat("y", 2<<20), nil); err == nil || !strings.Contains(err.Error(), "request longer than") {
		t.Errorf("Call with 2 MiB: %v; want the daemon's refusal", err)
	}
	// Half a line, the connection left open.
	t0 := time.Now()
	resp, err := rawRoundTrip(sock, []byte(`{"cmd":"ech`), true)
	if err != nil || !bytes.Contains(resp, []byte("bad request: no complete request line within 5s")) || time.Since(t0) > Timeout+2*time.Second {
		t.Errorf("half a request: %q, %v after %v", resp, err, time.Since(t0))
	}
}

// rawRoundTrip writes req on a new connection (keeping the write side open
// if keepOpen) and reads what comes back until the daemon closes.
func rawRoundTrip(sock string, req []byte, keepOpen bool) ([]byte, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Timeout + 5*time.Second))
	go func() {
		_, _ = c.Write(req)
		if !keepOpen {
			_ = c.(*net.UnixConn).CloseWrite()
		}
	}()
	return io.ReadAll(c)
}

// One request per connection: what a client sends after its request line
// is not read as a request, and the answer still comes whole and ends in an
// orderly close. Closing a Unix socket with unread data resets it, so a
// client that reads to EOF (socat, nc -U) saw ECONNRESET after the answer
// when more than the server's read buffer followed the line.
func TestControlTrailingDataAfterRequest(t *testing.T) {
	sock := serveTestControl(t)
	for _, trail := range []int{1, 4 << 10, 64 << 10} {
		req := append([]byte(`{"cmd":"echo"}`+"\n"), bytes.Repeat([]byte(`{"cmd":"nope"}`+"\n"), trail/15+1)...)
		resp, err := rawRoundTrip(sock, req, false)
		if err != nil {
			t.Fatalf("%d bytes after the request: %v (answer %q)", trail, err, resp)
		}
		var r Response
		if err := json.Unmarshal(resp, &r); err != nil || !r.OK || bytes.Count(resp, []byte("\n")) != 1 {
			t.Errorf("%d bytes after the request: answer %q", trail, resp)
		}
	}
}
