package vnicd

import (
	"strings"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/internal/statefile"
)

// stateFile is one of vnicd's state files, kept beside its control socket
// (statePath) and written and read by statefile.JSON: the claims
// (claimsState, managed mode) and the runtime VNICs (runtimeState, static
// mode).
type stateFile struct {
	statefile.JSON
}

// claimsState is the claims' state file at path ("" for none).
func claimsState(path string) *stateFile {
	return &stateFile{statefile.JSON{Path: path, Name: "vnicd: claims state file", Version: claimsVersion}}
}

// runtimeState is the runtime VNICs' state file at path ("" for none).
func runtimeState(path string) *stateFile {
	return &stateFile{statefile.JSON{Path: path, Name: "vnicd: runtime VNICs state file", Version: runtimeVersion}}
}

// statePath is a state file beside a control socket: the socket's path with
// suffix for its ".sock"; "" for an abstract socket, which has no directory.
func statePath(socket, suffix string) string {
	if socket == "" || strings.HasPrefix(socket, "@") {
		return ""
	}
	return strings.TrimSuffix(socket, ".sock") + suffix
}

// setAside moves the file, which cannot be read, out of the way of the next
// save (statefile.SetAside) and returns the log fields that say where it
// went.
func (f *stateFile) setAside() []zap.Field {
	if f.Path == "" {
		return nil
	}
	bad, err := statefile.SetAside(f.Path)
	if err != nil {
		return []zap.Field{zap.NamedError("set_aside_error", err)}
	}
	return []zap.Field{zap.String("kept_as", bad)}
}

// removeStateTemps removes what an interrupted write of the state file at
// path left (statefile.RemoveTemps), and logs it; "" is no file.
func removeStateTemps(path string, log *zap.Logger) {
	if path == "" {
		return
	}
	removed, err := statefile.RemoveTemps(path)
	if len(removed) > 0 {
		log.Info("removed what an interrupted state-file write left", zap.Strings("files", removed))
	}
	if err != nil {
		log.Warn("cannot remove what an interrupted state-file write left", zap.String("path", path), zap.Error(err))
	}
}
