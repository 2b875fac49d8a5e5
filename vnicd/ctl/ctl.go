package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/internal/buildinfo"
)

// Request is one control request.
type Request struct {
	Cmd  string          `json:"cmd"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response is the answer to a Request: OK with Data, or Error, the message,
// with Code, its class (none for a failure the protocol does not classify).
type Response struct {
	OK    bool            `json:"ok"`
	Error string          `json:"error,omitempty"`
	Code  Code            `json:"code,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// Limits of the control protocol.
const (
	maxRequest = 1 << 20
	// Timeout bounds a control connection: the request, its handling and
	// the answer (Call dials with it too).
	Timeout = 5 * time.Second
	// MaxConns bounds the connections served at once (each may
	// buffer a request of up to maxRequest bytes for up to Timeout);
	// one more is answered ErrBusy at once and closed.
	MaxConns      = 64
	busyWarnEvery = 10 * time.Second
	// timeoutAnswerGrace is how long the error answer to a request that
	// did not arrive within Timeout may take to write.
	timeoutAnswerGrace = 100 * time.Millisecond
	// drainTimeout bounds how long a connection stays open after its
	// answer, for the client to close it (serveConn).
	drainTimeout = 200 * time.Millisecond
)

// Handler answers one command; args may be empty.
type Handler func(args json.RawMessage) (any, error)

// DeadlineHandler is a Handler told when the request's connection times
// out (its client, which set the same timeout when it dialled, has given
// up by then).
type DeadlineHandler func(deadline time.Time, args json.RawMessage) (any, error)

// Server serves the control socket.
type Server struct {
	log      *zap.Logger
	path     string
	ln       *net.UnixListener
	mu       sync.RWMutex
	handlers map[string]DeadlineHandler
	wg       sync.WaitGroup
	slots    chan struct{} // one per connection being served

	// Busy counts connections refused because MaxControlConns were open.
	Busy     atomic.Uint64
	busyMu   sync.Mutex
	busyWarn time.Time
}

// LateMargin is the time a state-changing request must have left when its
// turn comes (ErrLate); such a request takes tens of milliseconds.
const LateMargin = 1500 * time.Millisecond

// StartBy returns ErrLate when less than LateMargin is left before deadline.
func StartBy(deadline time.Time) error {
	if time.Until(deadline) < LateMargin {
		return ErrLate
	}
	return nil
}

// DefaultDir is where vnicd's and opafm's control sockets live when their
// configs name none (vnicd-NODE.sock, opafm-NAME.sock).
const DefaultDir = "/run/opavnic"

// ErrSocketInUse is returned when another live daemon serves the socket path.
var ErrSocketInUse = errors.New("control socket is in use by a running daemon")

// Listen creates the control socket at path (making its directory),
// replacing a stale socket file that nobody serves. A path that starts with
// "@" names a Linux abstract socket: it has no file, so there is no
// directory to make, no stale file to replace and no mode to set; the
// kernel frees the name when the listener is closed, and a name still bound
// by a live daemon gives ErrSocketInUse. The server answers two commands of
// its own: "commands" (the commands it answers) and "version" (the
// program's BuildStatus).
func Listen(path string, log *zap.Logger) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	abstract := strings.HasPrefix(path, "@")
	if !abstract {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("control socket directory: %w", err)
		}
		if _, err := os.Stat(path); err == nil {
			if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
				c.Close()
				return nil, fmt.Errorf("%w: %s", ErrSocketInUse, path)
			}
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("vnicd: removing stale control socket: %w", err)
			}
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if abstract && errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w: %s", ErrSocketInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true) // net never unlinks an abstract name
	if !abstract {
		if err := os.Chmod(path, 0o660); err != nil {
			ln.Close()
			return nil, fmt.Errorf("control socket: %w", err)
		}
	}
	s := &Server{log: log.Named("control"), path: path, ln: ln, handlers: map[string]DeadlineHandler{},
		slots: make(chan struct{}, MaxConns)}
	s.Handle(CmdCommands, func(json.RawMessage) (any, error) { return s.commands(), nil })
	s.Handle(CmdVersion, func(json.RawMessage) (any, error) { return ReadBuildStatus(), nil })
	return s, nil
}

// BuildStatus is the answer to the control command CmdVersion: which
// program serves the socket and which build it is (internal/buildinfo).
type BuildStatus struct {
	Program   string `json:"program"` // the executable's name: vnicd, opafm
	Build     string `json:"build"`   // the line --version prints after the name
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"` // the commit; absent when not stamped
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// ReadBuildStatus returns the running program's BuildStatus.
func ReadBuildStatus() BuildStatus {
	in := buildinfo.Read()
	return BuildStatus{Program: filepath.Base(os.Args[0]), Build: in.String(), Version: in.Version, Revision: in.Revision,
		Modified: in.Modified, GoVersion: in.GoVersion, Platform: in.Platform}
}

// Path returns the socket path.
func (s *Server) Path() string { return s.path }

// Handle registers h for cmd.
func (s *Server) Handle(cmd string, h Handler) {
	s.HandleDeadline(cmd, func(_ time.Time, args json.RawMessage) (any, error) { return h(args) })
}

// HandleDeadline registers h for cmd; h is told the request's deadline.
func (s *Server) HandleDeadline(cmd string, h DeadlineHandler) {
	s.mu.Lock()
	s.handlers[cmd] = h
	s.mu.Unlock()
}

func (s *Server) commands() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.handlers))
	for k := range s.handlers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Serve accepts connections until ctx is done or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			s.wg.Wait()
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("control socket: %w", err)
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.refuse(c)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.serveConn(c)
		}()
	}
}

// refuse answers a connection beyond MaxControlConns with ErrBusy, without
// reading its request, and closes it; it is counted and warned about at most
// every busyWarnEvery.
func (s *Server) refuse(c *net.UnixConn) {
	n := s.Busy.Add(1)
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	out, _ := json.Marshal(answer(ErrBusy))
	_, _ = c.Write(append(out, '\n'))
	c.Close()
	s.busyMu.Lock()
	warn := time.Since(s.busyWarn) >= busyWarnEvery
	if warn {
		s.busyWarn = time.Now()
	}
	s.busyMu.Unlock()
	if warn {
		s.log.Warn("control connection refused: too many open", zap.Int("max", MaxConns), zap.Uint64("refused_total", n))
	}
}

// Close stops the server and removes the socket file.
func (s *Server) Close() error { return s.ln.Close() }

func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	deadline := time.Now().Add(Timeout)
	_ = c.SetDeadline(deadline)
	r := bufio.NewReaderSize(c, 4096)
	line, err := readLine(r, maxRequest)
	var resp Response
	var req Request
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline has passed for the answer too: give it a moment, so
		// that the client learns why rather than seeing the socket close.
		_ = c.SetWriteDeadline(time.Now().Add(timeoutAnswerGrace))
		resp = answer(Errorf(CodeBadRequest, "bad request: no complete request line within %v", Timeout))
	case err != nil:
		resp = answer(Errorf(CodeBadRequest, "bad request: %w", err))
	case json.Unmarshal(line, &req) != nil:
		resp = answer(Errorf(CodeBadRequest, "bad request: not a JSON object with a cmd"))
	default:
		s.mu.RLock()
		h := s.handlers[req.Cmd]
		s.mu.RUnlock()
		if h == nil {
			resp = answer(Errorf(CodeUnknownCommand, "unknown command %q (try %q)", req.Cmd, CmdCommands))
			break
		}
		data, err := h(deadline, req.Args)
		if err != nil {
			resp = answer(err)
			break
		}
		raw, err := json.Marshal(data)
		if err != nil {
			resp = answer(Errorf(CodeInternal, "internal: %w", err))
			break
		}
		resp.OK, resp.Data = true, raw
	}
	out, _ := json.Marshal(resp)
	if _, err := c.Write(append(out, '\n')); err != nil {
		return
	}
	// One request per connection: what the client sent after its line is
	// read and dropped before the close (at most maxRequest bytes, for at
	// most drainTimeout). Closing a Unix socket with unread data resets it,
	// and a client reading to EOF would see ECONNRESET after the answer.
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(r, maxRequest))
}

// answer is the Response that reports err, with err's code (CodeOf).
func answer(err error) Response {
	return Response{Error: err.Error(), Code: CodeOf(err)}
}

// readLine reads one newline-terminated line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return nil, fmt.Errorf("request longer than %d bytes", limit)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0 && errors.Is(err, io.EOF):
			return line, nil
		default:
			return nil, err
		}
	}
}
