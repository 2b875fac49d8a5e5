package scripts_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestScriptHelp: each script's --help prints its whole header comment (the
// lines after the #! line up to the first that is not a comment), exits 0,
// and names every option the script reads. stress.sh printed a fixed line
// range that stopped two lines short of its header, dropping its --out
// option's description; and the scripts printed "$0" after changing to the
// repository's root, so that --help run other than from the root (./demo.sh
// in scripts/) failed with "sed: can't read".
func TestScriptHelp(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	option := regexp.MustCompile(`(?m)^\s*(?:-h \| )?(--[a-z-]+)\)`)
	for _, s := range []string{"demo.sh", "stress.sh", "bench.sh"} {
		text, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		var header strings.Builder
		for _, l := range strings.Split(string(text), "\n")[1:] {
			if !strings.HasPrefix(l, "#") {
				break
			}
			header.WriteString(l + "\n")
		}
		// --help exits in the option loop, before any root check or work,
		// but after the script's cd to the repository: run it from there
		// and from elsewhere (here, scripts/).
		var out []byte
		for _, run := range []struct{ dir, path string }{{"..", "scripts/" + s}, {".", "./" + s}} {
			cmd := exec.Command("bash", run.path, "--help")
			cmd.Dir = run.dir
			o, err := cmd.Output()
			if err != nil {
				t.Errorf("%s --help in %s: %v", run.path, run.dir, err)
				continue
			}
			if string(o) != header.String() {
				t.Errorf("%s --help in %s printed:\n%s\nwant its header comment:\n%s", run.path, run.dir, o, header.String())
			}
			out = o
		}
		for _, m := range option.FindAllStringSubmatch(string(text), -1) {
			if m[1] != "--help" && !strings.Contains(string(out), m[1]) {
				t.Errorf("%s --help does not mention %s", s, m[1])
			}
		}
	}
}
