package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Client calls the commands of the daemon (vnicd or opafm) at a control
// socket: one connection per call, bounded by Timeout and by the call's
// context. A failed answer is an *Error (errors.Is against ErrBusy,
// ErrLate, ErrNoFreePort...); not reaching the daemon is the dial's error,
// wrapped (errors.Is against syscall.ECONNREFUSED, os.ErrNotExist...).
type Client struct {
	path string
}

// NewClient returns a client of the socket at path ("@name" for an
// abstract one).
func NewClient(path string) *Client { return &Client{path: path} }

// Socket returns the socket's path.
func (c *Client) Socket() string { return c.path }

// Commands lists the commands the daemon answers (CmdCommands).
func (c *Client) Commands(ctx context.Context) ([]string, error) {
	return call[[]string](ctx, c, CmdCommands, nil)
}

// Version is the daemon's build (CmdVersion).
func (c *Client) Version(ctx context.Context) (BuildStatus, error) {
	return call[BuildStatus](ctx, c, CmdVersion, nil)
}

// VNICs lists vnicd's VNIC ports (CmdVNICs).
func (c *Client) VNICs(ctx context.Context) ([]VNICStatus, error) {
	return call[[]VNICStatus](ctx, c, CmdVNICs, nil)
}

// Claims lists a managed vnicd's claims (CmdClaims).
func (c *Client) Claims(ctx context.Context) ([]Claim, error) {
	return call[[]Claim](ctx, c, CmdClaims, nil)
}

// Counters is vnicd's counters of every port, or of a.VPort (CmdCounters).
func (c *Client) Counters(ctx context.Context, a CountersArgs) ([]PortCounterSet, error) {
	return call[[]PortCounterSet](ctx, c, CmdCounters, a)
}

// HFI is vnicd's fabric port (CmdHFI).
func (c *Client) HFI(ctx context.Context) (HFIStatus, error) {
	return call[HFIStatus](ctx, c, CmdHFI, nil)
}

// Fabric is vnicd's LID directory (CmdFabric; opafm answers it with
// another shape, which Call reads).
func (c *Client) Fabric(ctx context.Context) ([]FabricEntry, error) {
	return call[[]FabricEntry](ctx, c, CmdFabric, nil)
}

// VESWs is the vesw config of vnicd's ports (CmdVESWs; opafm answers it
// with another shape, which Call reads).
func (c *Client) VESWs(ctx context.Context) ([]VESWStatus, error) {
	return call[[]VESWStatus](ctx, c, CmdVESWs, nil)
}

// Path is the SA path record from vnicd's node to a.LID (CmdPath; opafm
// takes a.SLID and a.DLID and answers with another shape, which Call
// reads).
func (c *Client) Path(ctx context.Context, a PathArgs) (PathStatus, error) {
	return call[PathStatus](ctx, c, CmdPath, a)
}

// VNICAdd adds a VNIC (static vnicd) or claims a port (managed vnicd)
// (CmdVNICAdd).
func (c *Client) VNICAdd(ctx context.Context, a VNICAddArgs) (VNICStatus, error) {
	return call[VNICStatus](ctx, c, CmdVNICAdd, a)
}

// VNICDel deletes a runtime VNIC or ends a claim (CmdVNICDel).
func (c *Client) VNICDel(ctx context.Context, a VNICDelArgs) (VNICDeleted, error) {
	return call[VNICDeleted](ctx, c, CmdVNICDel, a)
}

// VNICGC deletes the runtime VNICs or ends the claims of a.Prefix's owners
// not in a.Keep (CmdVNICGC).
func (c *Client) VNICGC(ctx context.Context, a VNICGCArgs) (VNICDeleted, error) {
	return call[VNICDeleted](ctx, c, CmdVNICGC, a)
}

// Reload has opafm read its fabric config again (CmdReload).
func (c *Client) Reload(ctx context.Context) error {
	return c.Call(ctx, CmdReload, nil, nil)
}

// Call sends cmd with args (nil for none) and decodes the data of a
// successful answer into out (nil to drop it; a *json.RawMessage keeps it
// as the daemon wrote it). The typed methods are Call with their command's
// types; Call itself is for an answer whose shape the caller does not know.
func (c *Client) Call(ctx context.Context, cmd string, args, out any) error {
	req := Request{Cmd: cmd}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = raw
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(tctx, "unix", c.path)
	if err != nil {
		return fmt.Errorf("cannot reach the daemon at %s: %w", c.path, err)
	}
	defer conn.Close()
	deadline, _ := tctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// A cancelled call unblocks at once: the deadline moves to the past.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_, werr := conn.Write(append(b, '\n'))
	// Read even when the write failed: a daemon at its connection limit
	// answers ErrBusy and closes without reading the request.
	err = readAnswer(bufio.NewReader(conn), out)
	if werr != nil && errors.Is(err, errNoAnswer) {
		err = werr
	}
	if err != nil && CodeOf(err) == "" {
		// The call's context ended it: say so (the connection's deadline,
		// which is the context's, may fire before the context is marked).
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w: %w", cerr, err)
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
	}
	return err
}

// call is c.Call with the answer decoded into a T.
func call[T any](ctx context.Context, c *Client, cmd string, args any) (T, error) {
	var v T
	err := c.Call(ctx, cmd, args, &v)
	return v, err
}

// Call sends one request to the daemon at path and decodes the data of a
// successful answer into out (which may be nil): NewClient(path).Call
// without a context of its own.
func Call(path, cmd string, args any, out any) error {
	return NewClient(path).Call(context.Background(), cmd, args, out)
}

// maxAnswer bounds an answer line a client accepts.
const maxAnswer = 64 << 20

// errNoAnswer is wrapped when no answer line could be read.
var errNoAnswer = errors.New("reading the answer")

// readAnswer reads one answer line and decodes it as Call does: an answer
// with "ok": false is an *Error with the answer's code and message (no code
// from a daemon older than the codes).
func readAnswer(r *bufio.Reader, out any) error {
	line, err := readLine(r, maxAnswer)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("bad answer from the daemon: %w", err)
	}
	if !resp.OK {
		return &Error{Code: resp.Code, Message: resp.Error}
	}
	if out != nil && len(resp.Data) > 0 {
		return json.Unmarshal(resp.Data, out)
	}
	return nil
}
