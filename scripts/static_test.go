package scripts_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// staticFlags are the Dockerfile's build flags (with CGO_ENABLED=0);
// TestStaticBinaries checks that the Dockerfile still uses them.
var staticFlags = []string{"-trimpath", "-ldflags", "-s -w"}

// TestStaticBinaries builds every command as the Dockerfile does and checks
// each is a static ELF: no PT_INTERP program header and no DT_NEEDED
// libraries. With OPAVNIC_STATIC_DIR set (scripts/test.sh), it checks the
// binaries already built there instead.
func TestStaticBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command; skipped with -short")
	}
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"CGO_ENABLED=0", "go build -trimpath -ldflags '-s -w'"} {
		if !strings.Contains(string(df), w) {
			t.Errorf("the Dockerfile no longer has %q: keep it and this test in step", w)
		}
	}
	cmds := []string{"vnicd", "opafm", "vnicctl"}
	if _, err := os.Stat("../cmd/vnic-cni"); err == nil {
		cmds = append(cmds, "vnic-cni")
	}
	dir := os.Getenv("OPAVNIC_STATIC_DIR")
	if dir == "" {
		dir = t.TempDir()
		for _, c := range cmds {
			args := append([]string{"build", "-buildvcs=false"}, staticFlags...)
			cmd := exec.Command("go", append(args, "-o", filepath.Join(dir, c), "../cmd/"+c)...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", c, err, out)
			}
		}
	}
	for _, c := range cmds {
		f, err := elf.Open(filepath.Join(dir, c))
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a PT_INTERP header: dynamically linked", c)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v", c, libs)
		}
		if f.Section(".symtab") != nil {
			t.Errorf("%s has a symbol table: built without -s", c)
		}
		f.Close()
	}
}
