// Command opafm is the opavnic fabric manager: SM, SA and EM on one software
// HFI (vema/fm), with a control socket for vnicctl.
//
// Usage:
//
//	opafm --config /etc/opavnic/fabric.yaml [--log-level info] [--log-format console]
//
// SIGHUP reloads the config (a bad one is logged and the old one kept);
// SIGINT and SIGTERM stop it. Control commands: fabric, vesws, path
// ({"slid":..,"dlid":..} or {"src":"host-a","dst":"host-b"}), reload.
//
// Exit codes: 0 clean stop, 1 runtime failure, 2 bad config or flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("opafm", flag.ContinueOnError)
	configPath := fs.String("config", "", "path of the fabric YAML config (required)")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	format := fs.String("log-format", "console", "log format: console or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "opafm: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "opafm: --config is required")
		return 2
	}
	log, err := newLogger(*level, *format)
	if err != nil {
		fmt.Fprintf(os.Stderr, "opafm: %v\n", err)
		return 2
	}
	defer log.Sync() //nolint:errcheck
	cfg, err := fm.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "opafm: %v\n", err)
		return 2
	}
	f, err := fm.Open(cfg, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	ctl, err := vnicd.ListenControl(cfg.FM.ControlSocket, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	reload := func() error {
		c, err := fm.LoadConfig(*configPath)
		if err != nil {
			log.Error("reload: bad config; keeping the old one", zap.Error(err))
			return err
		}
		if err := f.Reload(c); err != nil {
			log.Error("reload refused; keeping the old config", zap.Error(err))
			return err
		}
		return nil
	}
	register(ctl, f, reload)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
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
	go ctl.Serve(ctx) //nolint:errcheck // stops with ctx
	err = f.Run(ctx)
	ctl.Close()
	if err != nil {
		log.Error("stopped with an error", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
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

type pathArgs struct {
	SLID json.Number `json:"slid"`
	DLID json.Number `json:"dlid"`
	Src  string      `json:"src"`
	Dst  string      `json:"dst"`
}

func register(ctl *vnicd.ControlServer, f *fm.FM, reload func() error) {
	ctl.Handle("fabric", func(json.RawMessage) (any, error) {
		c := f.Config()
		return fabricStatus{
			FM: fmStatus{Name: c.FM.Name, LID: encap.LID(c.FM.LID), GUID: encap.GUID(c.FM.GUID),
				Listen:   f.HFI().Transport().LocalAddr().String(),
				PoolFrom: encap.LID(c.Pool.Start), PoolTo: encap.LID(c.Pool.End)},
			Nodes: f.Nodes(),
		}, nil
	})
	ctl.Handle("vesws", func(json.RawMessage) (any, error) { return f.VESWs(), nil })
	ctl.Handle("reload", func(json.RawMessage) (any, error) {
		if err := reload(); err != nil {
			return nil, err
		}
		return "reloaded", nil
	})
	ctl.Handle("path", func(raw json.RawMessage) (any, error) {
		var a pathArgs
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, fmt.Errorf("path: %w", err)
			}
		}
		resolve := func(num json.Number, name, what string) (encap.LID, error) {
			if name != "" {
				n, ok := f.Node(name)
				if !ok {
					return 0, fmt.Errorf("path: no node %q", name)
				}
				return n.LID, nil
			}
			if num == "" {
				return 0, fmt.Errorf("path: give %s or its node name", what)
			}
			return encap.ParseLID(num.String())
		}
		slid, err := resolve(a.SLID, a.Src, "slid")
		if err != nil {
			return nil, err
		}
		dlid, err := resolve(a.DLID, a.Dst, "dlid")
		if err != nil {
			return nil, err
		}
		r, err := f.PathRecord(slid, dlid)
		if errors.Is(err, fm.ErrUnknownLID) {
			return nil, fmt.Errorf("path %v -> %v: %w", slid, dlid, err)
		}
		return map[string]any{
			"slid": r.SLID, "dlid": r.DLID, "sgid": r.SGID.String(), "dgid": r.DGID.String(),
			"hop_limit": r.HopLimit, "extended": slid.IsExtended() || dlid.IsExtended(),
			"pkey": r.PKey, "mtu": r.MTU, "rate": r.Rate, "sl": r.SL, "l2_9b": r.L2_9B, "l2_16b": r.L2_16B,
		}, err
	})
}

func newLogger(level, format string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	var zc zap.Config
	switch format {
	case "console":
		zc = zap.NewDevelopmentConfig()
		zc.Development = false
		zc.DisableStacktrace = true
	case "json":
		zc = zap.NewProductionConfig()
	default:
		return nil, fmt.Errorf("--log-format %q: want console or json", format)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.DisableCaller = true
	return zc.Build()
}
