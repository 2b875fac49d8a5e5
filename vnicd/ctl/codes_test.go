package ctl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/ctl/ctltest"
)

// serve runs a control server with handlers for the test's length.
func serve(t *testing.T, handlers map[string]ctl.Handler) *ctl.Client {
	t.Helper()
	return ctl.NewClient(ctltest.Serve(t, handlers))
}

// TestErrorCodesRoundTrip: the code a handler's error carries (ctl.Errorf,
// ctl.WithCode, a sentinel wrapped with %w, the sentinel itself) reaches the
// client, whose error matches that code's sentinel and no other, with the
// handler's message unchanged. An error without a code is answered without
// one and matches no sentinel.
func TestErrorCodesRoundTrip(t *testing.T) {
	sentinels := map[ctl.Code]error{
		ctl.CodeBusy: ctl.ErrBusy, ctl.CodeLate: ctl.ErrLate, ctl.CodeNoFreePort: ctl.ErrNoFreePort,
		ctl.CodeBadRequest: ctl.ErrBadRequest, ctl.CodeUnknownCommand: ctl.ErrUnknownCommand,
		ctl.CodeInvalidArgument: ctl.ErrInvalidArgument, ctl.CodeNotFound: ctl.ErrNotFound, ctl.CodeInternal: ctl.ErrInternal,
	}
	cause := errors.New("the cause")
	cases := []struct {
		name string
		err  error
		code ctl.Code
	}{
		{"Errorf", ctl.Errorf(ctl.CodeNotFound, "no vport %d", 9), ctl.CodeNotFound},
		{"WithCode", ctl.WithCode(ctl.CodeInvalidArgument, cause), ctl.CodeInvalidArgument},
		{"wrapped sentinel", fmt.Errorf("%w: vesw 1 has no port on node a", ctl.ErrNoFreePort), ctl.CodeNoFreePort},
		{"joined", errors.Join(fmt.Errorf("adding: %w", ctl.ErrLate), errors.New("and more")), ctl.CodeLate},
		{"no code", errors.New("vport 3 is from the config file"), ""},
	}
	for code, s := range sentinels {
		cases = append(cases, struct {
			name string
			err  error
			code ctl.Code
		}{"sentinel " + string(code), s, code})
	}
	handlers := map[string]ctl.Handler{}
	for i, tc := range cases {
		handlers[fmt.Sprint("c", i)] = func(json.RawMessage) (any, error) { return nil, tc.err }
	}
	c := serve(t, handlers)
	for i, tc := range cases {
		err := c.Call(t.Context(), fmt.Sprint("c", i), nil, nil)
		var e *ctl.Error
		if !errors.As(err, &e) || e.Code != tc.code || err.Error() != tc.err.Error() || ctl.CodeOf(err) != tc.code {
			t.Errorf("%s: %v (%#v); want code %q, message %q", tc.name, err, e, tc.code, tc.err)
			continue
		}
		for code, s := range sentinels {
			if got := errors.Is(err, s); got != (code == tc.code) {
				t.Errorf("%s: errors.Is(err, the %s sentinel) = %v", tc.name, code, got)
			}
		}
	}
}

// TestServerCodes: the codes the server sets itself: unknown_command for a
// command it has no handler for, bad_request for a line that is no
// request, internal for an answer it cannot encode.
func TestServerCodes(t *testing.T) {
	c := serve(t, map[string]ctl.Handler{
		"nan": func(json.RawMessage) (any, error) { return math.NaN(), nil },
	})
	if err := c.Call(t.Context(), "nope", nil, nil); !errors.Is(err, ctl.ErrUnknownCommand) ||
		err.Error() != `unknown command "nope" (try "commands")` {
		t.Errorf("unknown command: %v", err)
	}
	if err := c.Call(t.Context(), "nan", nil, nil); !errors.Is(err, ctl.ErrInternal) {
		t.Errorf("an answer JSON cannot encode: %v", err)
	}
	conn, err := net.Dial("unix", c.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("not json\n")); err != nil {
		t.Fatal(err)
	}
	var r ctl.Response
	if err := json.NewDecoder(conn).Decode(&r); err != nil || r.OK || r.Code != ctl.CodeBadRequest {
		t.Errorf("a line that is no request: %+v, %v", r, err)
	}
}

// TestAnswerWithoutCode: a daemon older than the codes answers an error
// with its text alone; the client's error is an *ctl.Error with that text
// and no code, which no sentinel matches (even when the text is one's).
func TestAnswerWithoutCode(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "old.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Write([]byte(`{"ok":false,"error":"` + ctl.ErrBusy.Error() + `"}` + "\n"))
			conn.Close()
		}
	}()
	_, err = ctl.NewClient(sock).VNICs(t.Context())
	var e *ctl.Error
	if !errors.As(err, &e) || e.Code != "" || err.Error() != ctl.ErrBusy.Error() || errors.Is(err, ctl.ErrBusy) {
		t.Errorf("an old daemon's busy answer: %v (%#v); want its text, no code, not ErrBusy", err, e)
	}
}

// TestClientMethods: each typed method sends its command with its
// arguments and decodes its answer.
func TestClientMethods(t *testing.T) {
	var mu sync.Mutex // the handlers run on the server's goroutines
	seen := map[string]string{}
	echo := func(cmd string, answer any) ctl.Handler {
		return func(args json.RawMessage) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			seen[cmd] = string(args)
			return answer, nil
		}
	}
	vport := 3
	c := serve(t, map[string]ctl.Handler{
		ctl.CmdVNICs:    echo(ctl.CmdVNICs, []ctl.VNICStatus{{VPort: 1, IfName: "vnic1"}}),
		ctl.CmdClaims:   echo(ctl.CmdClaims, []ctl.Claim{{VPort: 2, Owner: "o"}}),
		ctl.CmdCounters: echo(ctl.CmdCounters, []ctl.PortCounterSet{{VPort: 3}}),
		ctl.CmdHFI:      echo(ctl.CmdHFI, ctl.HFIStatus{Node: "a"}),
		ctl.CmdFabric:   echo(ctl.CmdFabric, []ctl.FabricEntry{{LID: "0x10"}}),
		ctl.CmdVESWs:    echo(ctl.CmdVESWs, []ctl.VESWStatus{{VESWID: 5}}),
		ctl.CmdPath:     echo(ctl.CmdPath, ctl.PathStatus{DLID: "0x20"}),
		ctl.CmdVNICAdd:  echo(ctl.CmdVNICAdd, ctl.VNICStatus{VPort: 4}),
		ctl.CmdVNICDel:  echo(ctl.CmdVNICDel, ctl.VNICDeleted{Deleted: []ctl.VNICStatus{{VPort: 4}}}),
		ctl.CmdVNICGC:   echo(ctl.CmdVNICGC, ctl.VNICDeleted{Deleted: []ctl.VNICStatus{}}),
		ctl.CmdReload:   echo(ctl.CmdReload, "reloaded"),
	})
	ctx := t.Context()
	check := func(cmd string, ok bool, err error, args string) {
		t.Helper()
		mu.Lock()
		got := seen[cmd]
		mu.Unlock()
		if err != nil || !ok || got != args {
			t.Errorf("%s: ok %v, %v, args %s; want args %s", cmd, ok, err, got, args)
		}
	}
	vs, err := c.VNICs(ctx)
	check(ctl.CmdVNICs, len(vs) == 1 && vs[0].IfName == "vnic1", err, "")
	cs, err := c.Claims(ctx)
	check(ctl.CmdClaims, len(cs) == 1 && cs[0].Owner == "o", err, "")
	ps, err := c.Counters(ctx, ctl.CountersArgs{VPort: &vport})
	check(ctl.CmdCounters, len(ps) == 1 && ps[0].VPort == 3, err, `{"vport":3}`)
	h, err := c.HFI(ctx)
	check(ctl.CmdHFI, h.Node == "a", err, "")
	fs, err := c.Fabric(ctx)
	check(ctl.CmdFabric, len(fs) == 1 && fs[0].LID == "0x10", err, "")
	ws, err := c.VESWs(ctx)
	check(ctl.CmdVESWs, len(ws) == 1 && ws[0].VESWID == 5, err, "")
	p, err := c.Path(ctx, ctl.PathArgs{LID: "0x20"})
	check(ctl.CmdPath, p.DLID == "0x20", err, `{"lid":"0x20"}`)
	st, err := c.VNICAdd(ctx, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", Owner: "o"})
	check(ctl.CmdVNICAdd, st.VPort == 4, err, `{"vesw":1,"pkey":"0x8001","owner":"o"}`)
	d, err := c.VNICDel(ctx, ctl.VNICDelArgs{Owner: "o"})
	check(ctl.CmdVNICDel, len(d.Deleted) == 1, err, `{"owner":"o"}`)
	d, err = c.VNICGC(ctx, ctl.VNICGCArgs{Prefix: "cni:", Keep: []string{"k"}})
	check(ctl.CmdVNICGC, d.Deleted != nil, err, `{"prefix":"cni:","keep":["k"]}`)
	check(ctl.CmdReload, true, c.Reload(ctx), "")
	cmds, err := c.Commands(ctx)
	want := []string{ctl.CmdClaims, ctl.CmdCommands, ctl.CmdCounters, ctl.CmdFabric, ctl.CmdHFI, ctl.CmdPath, ctl.CmdReload,
		ctl.CmdVESWs, ctl.CmdVNICAdd, ctl.CmdVNICDel, ctl.CmdVNICGC, ctl.CmdVNICs, ctl.CmdVersion}
	slices.Sort(want)
	if err != nil || !slices.Equal(cmds, want) {
		t.Errorf("commands: %v, %v; want %v", cmds, err, want)
	}
	if v, err := c.Version(ctx); err != nil || v.GoVersion == "" {
		t.Errorf("version: %+v, %v", v, err)
	}
}

// TestClientContext: a call returns when its context is done, with the
// context's error, though the daemon has not answered.
func TestClientContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c := serve(t, map[string]ctl.Handler{
		"slow": func(json.RawMessage) (any, error) { <-release; return nil, nil },
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := c.Call(ctx, "slow", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 2*time.Second {
		t.Errorf("a call whose context ended after 100ms: %v after %v", err, time.Since(t0))
	}
}
