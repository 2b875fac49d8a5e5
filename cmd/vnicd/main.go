// Command vnicd is the opavnic per-host daemon: it gives every VNIC a real
// TAP netdev and carries its Ethernet frames as 16B Omni-Path packets over the
// software HFI's UDP socket.
//
// Usage:
//
//	vnicd --config /etc/opavnic/vnicd.yaml [--log-level info] [--log-format console]
//
// Exit codes: 0 clean stop (SIGINT/SIGTERM), 1 runtime failure, 2 bad config
// or flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/opavnic/opavnic/vnicd"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("vnicd", flag.ContinueOnError)
	configPath := fs.String("config", "", "path of the YAML config (required)")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	format := fs.String("log-format", "console", "log format: console or json")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until vnicd stops (for performance work)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "vnicd: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "vnicd: --config is required")
		return 2
	}
	log, err := newLogger(*level, *format)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vnicd: %v\n", err)
		return 2
	}
	defer log.Sync() //nolint:errcheck
	cfg, err := vnicd.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vnicd: %v\n", err)
		return 2
	}
	d, err := vnicd.NewDaemon(cfg, vnicd.TAPFactory(log), log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		if errors.Is(err, vnicd.ErrPortConfig) {
			return 2
		}
		return 1
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Error("cannot write the CPU profile", zap.Error(err))
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Error("cannot start the CPU profile", zap.Error(err))
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := d.Run(ctx); err != nil {
		log.Error("stopped with an error", zap.Error(err))
		return 1
	}
	return 0
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
