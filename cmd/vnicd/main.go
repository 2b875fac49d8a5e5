// Command vnicd is the opavnic per-host daemon: it gives every VNIC a real
// TAP netdev and carries its Ethernet frames as 16B Omni-Path packets over the
// software HFI's UDP socket.
//
// Usage:
//
//	vnicd --config /etc/opavnic/vnicd.yaml [--log-level info] [--log-format console]
//	      [--fabric-manager /etc/opavnic/fabric.yaml] [--metrics-listen 127.0.0.1:9479]
//	vnicd --config /etc/opavnic/vnicd.yaml --check
//	vnicd --version
//
// With --metrics-listen the daemon serves Prometheus metrics at /metrics
// (per-VNIC kernel counters, the HFI's counters and drops by reason, and with
// --fabric-manager the FM's view of the fabric too).
//
// With --fabric-manager the daemon also runs the fabric manager (as opafm
// does, on its own HFI and control socket), so one host can be the FM.
//
// SIGINT and SIGTERM stop vnicd cleanly, also while it starts. SIGHUP
// reloads the fabric config of --fabric-manager's FM; vnicd's own config
// has no reload (restart vnicd to apply it), so without --fabric-manager
// SIGHUP is logged and ignored.
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

	"github.com/opavnic/opavnic/cmd/internal/cli"
	"github.com/opavnic/opavnic/cmd/internal/fmd"
	"github.com/opavnic/opavnic/cmd/internal/metrics"
	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/opavnic/opavnic/vnicd/engine"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("vnicd", flag.ContinueOnError)
	flags := cli.CommonFlags(fs, "path of the YAML config")
	fabricManager := fs.String("fabric-manager", "", "also run a fabric manager with this fabric config (as opafm does; SIGHUP reloads it), so that this host is the FM")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until vnicd stops (for performance work)")
	log, code := flags.Start(fs, args)
	if log == nil {
		return code
	}
	defer log.Sync() //nolint:errcheck
	cfg, err := config.Load(*flags.Config)
	if err != nil {
		flags.ConfigError(log, "vnicd", err)
		return 2
	}
	var fmCfg *fm.Config
	if *fabricManager != "" {
		if fmCfg, err = fm.LoadConfig(*fabricManager); err != nil {
			flags.ConfigError(log, "vnicd", fmt.Errorf("--fabric-manager: %w", err))
			return 2
		}
		// Both GUIDs derive from names by the same hash: an FM named as
		// its host shares the host's port GUID, and the SA would give the
		// host's GID the FM's LID.
		if fmCfg.FM.GUID == cfg.Node.GUID {
			flags.ConfigError(log, "vnicd", fmt.Errorf("--fabric-manager: fm.guid %#x (fm.name %q) is this host's port GUID (node.name %q): give the FM another name or guid",
				fmCfg.FM.GUID, fmCfg.FM.Name, cfg.Node.Name))
			return 2
		}
	}
	if *flags.Check {
		fmt.Printf("%s: config OK\n%s\n", *flags.Config, cfg.Summary())
		if fmCfg != nil {
			fmt.Printf("%s: fabric config OK\n%s\n", *fabricManager, fmCfg.Summary())
		}
		return 0
	}
	// Signals are handled from here on, NewDaemon included, so that none
	// kills vnicd without Run's cleanup: SIGINT or SIGTERM while it starts
	// stops it as soon as NewDaemon returns, and SIGHUP reloads the
	// embedded FM's fabric config or, without one, is logged and ignored.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if *fabricManager == "" {
		quit := make(chan struct{})
		defer close(quit)
		go func() {
			for {
				select {
				case <-hup:
					log.Warn("SIGHUP ignored: vnicd has no config reload; restart it to apply a changed config")
				case <-quit:
					return
				}
			}
		}()
	}
	// The profile starts before NewDaemon, so that a failure to write it
	// exits before vnicd has made anything to clean up.
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
	log.Info("vnicd starting", zap.String("build", buildinfo.Read().String()), zap.String("config", *flags.Config))
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			log.Info("signal received while starting: vnicd stops once it has started")
		case <-started:
		}
	}()
	d, err := vnicd.NewDaemon(cfg, engine.TAPFactory(log), log)
	close(started)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			// Most often vnicd run as an ordinary user: say what it needs.
			log.Error("cannot start", zap.Error(err), zap.String("hint",
				"vnicd needs root: CAP_NET_ADMIN and /dev/net/tun for its TAPs (CAP_SYS_ADMIN too for VNICs in other namespaces), and write access to its control socket's directory"))
		} else {
			log.Error("cannot start", zap.Error(err))
		}
		if errors.Is(err, engine.ErrPortConfig) {
			return 2
		}
		return 1
	}
	if ctx.Err() != nil {
		// Run with a done ctx only removes what NewDaemon made.
		log.Info("stopping: a signal came while vnicd was starting")
		if err := d.Run(ctx); err != nil {
			log.Error("stopped with an error", zap.Error(err))
			return 1
		}
		return 0
	}
	var fmOpts []fmd.Option
	if *flags.MetricsListen != "" {
		reg := metrics.NewRegistry()
		reg.MustRegister(d.Collectors()...)
		if _, err := metrics.Listen(ctx, *flags.MetricsListen, reg, log); err != nil {
			log.Error("cannot serve metrics", zap.Error(err))
			stop()
			d.Run(ctx) //nolint:errcheck // only to remove what NewDaemon made
			return 1
		}
		fmOpts = append(fmOpts, fmd.WithRegistry(reg))
	}
	var serveFM func(context.Context) error
	if *fabricManager != "" {
		// The embedded FM has its own HFI (LID and listen address from its
		// config) and control socket; SIGHUP reloads its config.
		serveFM = func(ctx context.Context) error {
			err := fmd.Serve(ctx, *fabricManager, log.Named("opafm"), hup, fmOpts...)
			if err != nil {
				log.Error("fabric manager stopped", zap.Error(err))
			}
			return err
		}
	}
	err, fmErr := runWithFM(ctx, stop, d.Run, serveFM)
	if err != nil || fmErr != nil {
		log.Error("stopped with an error", zap.Error(errors.Join(err, fmErr)))
		if errors.Is(fmErr, fmd.ErrConfig) {
			return 2
		}
		return 1
	}
	return 0
}

// runWithFM runs the daemon (run) until it returns and, when serveFM is not
// nil, the fabric manager beside it, and returns both errors once both have
// returned. Either one ending ends the other: an FM that fails calls stop,
// which cancels ctx, the daemon's context (the host was asked to be the FM:
// without it, vnicd stops), and a daemon that returns, whether stopped or
// failed by itself, cancels the FM's context.
func runWithFM(ctx context.Context, stop context.CancelFunc, run, serveFM func(context.Context) error) (err, fmErr error) {
	if serveFM == nil {
		return run(ctx), nil
	}
	fmCtx, cancelFM := context.WithCancel(ctx)
	defer cancelFM()
	fmDone := make(chan error, 1)
	go func() {
		err := serveFM(fmCtx)
		if err != nil {
			stop()
		}
		fmDone <- err
	}()
	err = run(ctx)
	cancelFM()
	return err, <-fmDone
}
