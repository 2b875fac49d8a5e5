// Package cli holds what the daemons' mains share: the common flags and the
// logger.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/opavnic/opavnic/internal/buildinfo"
)

// NewLogger builds the daemons' zap logger from --log-level and --log-format.
func NewLogger(level, format string) (*zap.Logger, error) {
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
		// Every record, as in console format: the production config's
		// sampling keeps one in 100 of a message logged over 100 times in
		// a second (a VNIC made, a node joined), and says nothing of it.
		zc.Sampling = nil
		zc.DisableStacktrace = true // as in console: the reason is in the record
	default:
		return nil, fmt.Errorf("--log-format %q: want console or json", format)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.DisableCaller = true
	return zc.Build()
}

// Common holds the flags every daemon has: --config, --log-level,
// --log-format, --metrics-listen, --check and --version.
type Common struct {
	Config, Level, Format, MetricsListen *string
	// Check asks the daemon only to read and check its config, say what it
	// would set up, and exit: 0 when the config can be used, 2 when not.
	Check *bool
	// Version asks the daemon only to print which build it is and exit 0
	// (Start does it).
	Version *bool
}

// CommonFlags registers the common flags on fs; configHelp describes --config.
func CommonFlags(fs *flag.FlagSet, configHelp string) *Common {
	return &Common{
		Config:        fs.String("config", "", configHelp+" (required)"),
		Level:         fs.String("log-level", "info", "log level: debug, info, warn or error"),
		Format:        fs.String("log-format", "console", "log format: console or json"),
		MetricsListen: fs.String("metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; off when empty)"),
		Check:         fs.Bool("check", false, "only check the config: print what it sets up and exit, 0 if it can be used, 2 if not (starts nothing, needs no root)"),
		Version:       fs.Bool("version", false, "print the build (version, commit, Go toolchain) and exit"),
	}
}

// Start parses args and builds the logger. On a usage error it prints why to
// stderr under the program's name and returns a nil logger and exit code 2;
// for -h or --help, which print the flags, and for --version, which prints
// the program's name and build (buildinfo) to stdout, a nil logger and exit
// code 0.
func (c *Common) Start(fs *flag.FlagSet, args []string) (*zap.Logger, int) {
	name := fs.Name()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments: %v\n", name, fs.Args())
		return nil, 2
	}
	if *c.Version {
		fmt.Printf("%s %s\n", name, buildinfo.Read())
		return nil, 0
	}
	if *c.Config == "" {
		fmt.Fprintf(os.Stderr, "%s: --config is required\n", name)
		return nil, 2
	}
	log, err := NewLogger(*c.Level, *c.Format)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return nil, 2
	}
	return log, 0
}

// ConfigError reports err, a config the daemon cannot use (it then exits
// 2), under the program's name: a plain line in console format, a log line
// with --log-format json, so that every line a daemon logging JSON writes
// parses as JSON.
func (c *Common) ConfigError(log *zap.Logger, name string, err error) {
	if *c.Format == "json" {
		log.Error(name+": bad config", zap.Error(err))
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
}
