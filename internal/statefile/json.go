package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Versioned is the content of a JSON state file: it says which version of
// its format it is.
type Versioned interface {
	FileVersion() int
}

// JSON is a JSON state file of one format version: Save writes it (Write:
// atomically), Load and Decode read it back, refusing unknown fields and
// any other version, so that a file of a newer format is not half
// understood (the caller sets it aside: SetAside).
type JSON struct {
	// Path is the file; "" for none: Save does nothing and Load finds no
	// file.
	Path string
	// Name begins the errors, as in "vnicd: claims state file".
	Name string
	// Version is the format Load accepts (and the one the snapshots Save
	// writes carry).
	Version int

	mu sync.Mutex // orders Saves: a later snapshot is never overwritten by an earlier one
}

// Save writes the value snapshot returns as indented JSON. snapshot runs
// under the file's lock, so that snapshots reach the file in the order they
// were taken.
func (f *JSON) Save(snapshot func() any) error {
	if f.Path == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.MarshalIndent(snapshot(), "", "  ")
	if err != nil {
		return err
	}
	if err := Write(f.Path, append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return nil
}

// Load reads the file into v and reports whether there was one: a missing
// file (or no Path) is false and no error, v untouched.
func (f *JSON) Load(v Versioned) (bool, error) {
	if f.Path == "" {
		return false, nil
	}
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.Name, err)
	}
	return true, f.Decode(b, v)
}

// Decode decodes the file's bytes b into v, refusing unknown fields, and
// checks its version.
func (f *JSON) Decode(b []byte, v Versioned) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", f.Name, f.Path, err)
	}
	if got := v.FileVersion(); got != f.Version {
		return fmt.Errorf("%s %s: version %d, want %d", f.Name, f.Path, got, f.Version)
	}
	return nil
}
