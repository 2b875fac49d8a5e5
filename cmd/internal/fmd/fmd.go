// Package fmd runs a fabric manager as a daemon: the FM on its own HFI, its
// control socket and config reloads. cmd/opafm is this alone; cmd/vnicd runs
// it beside a node with --fabric-manager.
package fmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/statefile"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// ErrConfig wraps a config that cannot be loaded at start (exit code 2).
var ErrConfig = errors.New("bad fabric config")

// Serve runs the fabric manager of the config at path, with its control
// socket, until ctx is done. Each value from hup reloads the config (a bad
// one is logged and the old one kept).
func Serve(ctx context.Context, path string, log *zap.Logger, hup <-chan os.Signal, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := fm.LoadConfig(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	f, err := fm.Open(cfg, log)
	if err != nil {
		return err
	}
	if err := RegisterMetrics(o.reg, f, log); err != nil {
		f.HFI().Transport().Close()
		return fmt.Errorf("fmd: metrics: %w", err)
	}
	srv, err := ctl.Listen(cfg.FM.ControlSocket, log)
	if err != nil {
		f.HFI().Transport().Close()
		return err
	}
	// The socket is this FM's now, and so is the MAC file beside it: only
	// now may an unreadable one be set aside (SetMACFile) and what an
	// interrupted write left be removed. Before, a second opafm started
	// on the socket of a running one would move the live FM's file.
	macFile := fm.MACFilePath(cfg.FM.ControlSocket)
	if macFile != "" {
		if removed, err := statefile.RemoveTemps(macFile); len(removed) > 0 || err != nil {
			log.Info("what an interrupted MAC file write left", zap.Strings("removed", removed), zap.Error(err))
		}
	}
	if err := f.SetMACFile(macFile); err != nil {
		log.Warn("cannot read the MAC file; learned MACs are guessed from the ports this time", zap.Error(err))
	} else if macFile != "" {
		log.Info("learned MACs kept in the MAC file", zap.String("path", macFile))
	}
	reload := func() error {
		c, err := fm.LoadConfig(path)
		if err != nil {
			log.Error("reload: bad config; keeping the old one", zap.Error(err))
			return err
		}
		// The control socket (and the MAC file beside it) is this
		// daemon's, opened once: a reload cannot move it, so a changed
		// one is refused as the FM refuses a changed identity, rather
		// than reported applied while the old socket stays.
		if c.FM.ControlSocket != cfg.FM.ControlSocket {
			err := fmt.Errorf("fmd: reload: fm.control_socket changed (%s -> %s); restart the FM to change it",
				cfg.FM.ControlSocket, c.FM.ControlSocket)
			log.Error("reload refused; keeping the old config", zap.Error(err))
			return err
		}
		if err := f.Reload(c); err != nil {
			log.Error("reload refused; keeping the old config", zap.Error(err))
			return err
		}
		log.Info("config reloaded")
		return nil
	}
	register(srv, f, reload)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading the config")
				reload() //nolint:errcheck // logged
			}
		}
	}()
	go srv.Serve(ctx) //nolint:errcheck // stops with ctx
	err = f.Run(ctx)
	srv.Close()
	return err
}

// fabricStatus is the answer to `fabric`.
type fabricStatus struct {
	FM    fmStatus        `json:"fm"`
	Nodes []fm.NodeStatus `json:"nodes"`
}

type fmStatus struct {
	Name     string     `json:"name"`
	LID      encap.LID  `json:"lid"`
	GUID     encap.GUID `json:"guid"`
	Listen   string     `json:"listen"`
	PoolFrom encap.LID  `json:"lid_pool_start"`
	PoolTo   encap.LID  `json:"lid_pool_end"`
}

// pathArgs name the two ends of a path: LIDs or node names, in slid/dlid
// (ctl.PathArgs, as vnicctl sends them) or src/dst.
type pathArgs struct {
	ctl.PathArgs
	Src string `json:"src"`
	Dst string `json:"dst"`
}

func register(srv *ctl.Server, f *fm.FM, reload func() error) {
	srv.Handle(ctl.CmdFabric, func(json.RawMessage) (any, error) {
		c := f.Config()
		return fabricStatus{
			FM: fmStatus{Name: c.FM.Name, LID: encap.LID(c.FM.LID), GUID: encap.GUID(c.FM.GUID),
				Listen:   f.HFI().Transport().LocalAddr().String(),
				PoolFrom: encap.LID(c.Pool.Start), PoolTo: encap.LID(c.Pool.End)},
			Nodes: f.Nodes(),
		}, nil
	})
	srv.Handle(ctl.CmdVESWs, func(json.RawMessage) (any, error) { return f.VESWs(), nil })
	srv.Handle(ctl.CmdReload, func(json.RawMessage) (any, error) {
		if err := reload(); err != nil {
			return nil, err
		}
		return "reloaded", nil
	})
	srv.Handle(ctl.CmdPath, func(raw json.RawMessage) (any, error) {
		var a pathArgs
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, ctl.Errorf(ctl.CodeInvalidArgument, "path: %w", err)
			}
		}
		resolve := func(s, what string) (encap.LID, error) {
			if s == "" {
				return 0, ctl.Errorf(ctl.CodeInvalidArgument, "path: give the %s as a LID or a node name", what)
			}
			if lid, err := encap.ParseLID(s); err == nil {
				return lid, nil
			}
			n, ok := f.Node(s)
			if !ok {
				return 0, ctl.Errorf(ctl.CodeNotFound, "path: %q is neither a LID nor a node", s)
			}
			return n.LID, nil
		}
		slid, err := resolve(cmp.Or(a.SLID, a.Src), "source")
		if err != nil {
			return nil, err
		}
		dlid, err := resolve(cmp.Or(a.DLID, a.Dst), "destination")
		if err != nil {
			return nil, err
		}
		r, err := f.PathRecord(slid, dlid)
		if errors.Is(err, fm.ErrUnknownLID) {
			return nil, ctl.Errorf(ctl.CodeNotFound, "path %v -> %v: %w", slid, dlid, err)
		}
		return map[string]any{
			"slid": r.SLID, "dlid": r.DLID, "sgid": r.SGID.String(), "dgid": r.DGID.String(),
			"hop_limit": r.HopLimit, "extended": slid.IsExtended() || dlid.IsExtended(),
			"pkey": r.PKey.String(), "mtu": r.MTU, "rate": r.Rate, "sl": r.SL, "l2_9b": r.L2_9B, "l2_16b": r.L2_16B,
		}, err
	})
}
