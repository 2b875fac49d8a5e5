// Package statefile writes the daemons' small state files (vnicd's claims
// and runtime VNICs, opafm's MAC file) so that a crash never leaves one
// empty or partial.
package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Write writes b to path atomically: a new file in the same directory,
// synced, renamed over the old one, then the directory synced. On a
// persistent file system the file is the old one or the new one after the
// host crashes, never an empty one.
func Write(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself; best effort (some file systems refuse)
		d.Close()
	}
	return nil
}

// SetAside renames the state file at path, which its reader cannot use
// (damaged, or written by another version), to path + ".bad", replacing
// an older one, and returns that name. The daemon then starts without the
// file's state and writes a new file at its first change; without this,
// that write would destroy the only record of what the file held.
func SetAside(path string) (string, error) {
	bad := path + ".bad"
	if err := os.Rename(path, bad); err != nil {
		return "", err
	}
	return bad, nil
}

// RemoveTemps removes what Write leaves of path when the process dies
// between creating its new file and renaming it: path's directory's files
// named path's base + ".tmp" + digits (os.CreateTemp's pattern). Call it
// at start, once the daemon owns path (its control socket bound), and it
// returns the names removed.
func RemoveTemps(path string) ([]string, error) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+".tmp"
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || !e.Type().IsRegular() || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
