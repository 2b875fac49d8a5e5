package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// packages are the commands Bin builds, by the name of their binary.
var packages = map[string]string{
	"vnicd":      "github.com/opavnic/opavnic/cmd/vnicd",
	"opafm":      "github.com/opavnic/opavnic/cmd/opafm",
	"vnicctl":    "github.com/opavnic/opavnic/cmd/vnicctl",
	"vnic-cni":   "github.com/opavnic/opavnic/cmd/vnic-cni",
	"host-local": "github.com/containernetworking/plugins/plugins/ipam/host-local",
}

var bins struct {
	mu    sync.Mutex
	dir   string
	err   error
	built map[string]error
}

// Bin returns the path of the binary name (vnicd, opafm, vnicctl, vnic-cni
// or host-local), which it builds the first time a test of this test
// binary asks for it, without VCS stamping (-buildvcs=false).
func Bin(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(BinDir(t, name), name)
}

// BinDir builds each of names as Bin does and returns the one directory
// that holds every binary built, such as a CNI plugin directory.
func BinDir(t testing.TB, names ...string) string {
	t.Helper()
	bins.mu.Lock()
	defer bins.mu.Unlock()
	if bins.dir == "" && bins.err == nil {
		bins.dir, bins.err = os.MkdirTemp("", "opavnic-e2e-bin")
		bins.built = map[string]error{}
	}
	if bins.err != nil {
		t.Fatalf("e2etest: binary directory: %v", bins.err)
	}
	for _, name := range names {
		err, done := bins.built[name]
		if !done {
			err = build(bins.dir, name)
			bins.built[name] = err
		}
		if err != nil {
			t.Fatalf("e2etest: %v", err)
		}
	}
	return bins.dir
}

func build(dir, name string) error {
	pkg, ok := packages[name]
	if !ok {
		return fmt.Errorf("no command %q to build", name)
	}
	out, err := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
	if err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return nil
}

// Main runs m's tests, removes the binaries they built and exits with their
// code: a package that uses Bin has `func TestMain(m *testing.M) {
// e2etest.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	bins.mu.Lock()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	bins.mu.Unlock()
	os.Exit(code)
}
