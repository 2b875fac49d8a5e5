// Command opafm is the opavnic fabric manager: SM, SA and EM on one software
// HFI (vema/fm), with a control socket for vnicctl.
//
// Usage:
//
//	opafm --config /etc/opavnic/fabric.yaml [--log-level info] [--log-format console]
//	      [--metrics-listen 127.0.0.1:9480]
//	opafm --config /etc/opavnic/fabric.yaml --check
//	opafm --version
//
// With --metrics-listen it serves Prometheus metrics at /metrics: fabric
// membership (opafm_nodes{state}, opafm_node_lid{node}, vesws) and its HFI.
//
// SIGHUP reloads the config (a bad one is logged and the old one kept);
// SIGINT and SIGTERM stop it. Control commands: fabric, vesws, path
// ({"slid":..,"dlid":..} or {"src":"host-a","dst":"host-b"}), reload.
//
// Exit codes: 0 clean stop, 1 runtime failure, 2 bad config or flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/cmd/internal/cli"
	"github.com/opavnic/opavnic/cmd/internal/fmd"
	"github.com/opavnic/opavnic/cmd/internal/metrics"
	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vema/fm"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("opafm", flag.ContinueOnError)
	flags := cli.CommonFlags(fs, "path of the fabric YAML config")
	log, code := flags.Start(fs, args)
	if log == nil {
		return code
	}
	defer log.Sync() //nolint:errcheck
	if *flags.Check {
		cfg, err := fm.LoadConfig(*flags.Config)
		if err != nil {
			flags.ConfigError(log, "opafm", err)
			return 2
		}
		fmt.Printf("%s: fabric config OK\n%s\n", *flags.Config, cfg.Summary())
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var opts []fmd.Option
	if *flags.MetricsListen != "" {
		reg := metrics.NewRegistry()
		if _, err := metrics.Listen(ctx, *flags.MetricsListen, reg, log); err != nil {
			log.Error("cannot serve metrics", zap.Error(err))
			return 1
		}
		opts = append(opts, fmd.WithRegistry(reg))
	}
	log.Info("opafm starting", zap.String("build", buildinfo.Read().String()), zap.String("config", *flags.Config))
	if err := fmd.Serve(ctx, *flags.Config, log, hup, opts...); err != nil {
		if errors.Is(err, fmd.ErrConfig) {
			flags.ConfigError(log, "opafm", err)
			return 2
		}
		log.Error("stopped with an error", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}
