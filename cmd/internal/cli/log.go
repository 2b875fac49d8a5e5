// Package cli holds what the daemons' mains share: logger construction.
package cli

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
	default:
		return nil, fmt.Errorf("--log-format %q: want console or json", format)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.DisableCaller = true
	return zc.Build()
}
