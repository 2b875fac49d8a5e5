package statefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	for _, want := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := Write(p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("read back %q, %v; want %q", got, err, want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(ents))
	}
}

func TestWriteMissingDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "s.json")
	if err := Write(p, []byte("x")); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

// TestRemoveTemps: what a Write cut short by a crash left (os.CreateTemp's
// names for the file) goes; the file itself, its .bad copy, another
// file's temporaries and look-alikes that are not CreateTemp's stay.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	if err := Write(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"s.json.tmp123456", "s.json.tmp9", "s.json.bad", "s.json.tmp", "s.json.tmpx1", "t.json.tmp42", "s.json.tmp77.keep"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "s.json.tmp5"), 0o700); err != nil { // not a file
		t.Fatal(err)
	}
	removed, err := RemoveTemps(p)
	if err != nil || len(removed) != 2 {
		t.Fatalf("RemoveTemps: %v, %v; want the two temporaries", removed, err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{"s.json", "s.json.bad", "s.json.tmp", "s.json.tmp5", "s.json.tmp77.keep", "s.json.tmpx1", "t.json.tmp42"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left %v, want %v", left, want)
	}
	if removed, err := RemoveTemps(filepath.Join(dir, "none", "s.json")); err != nil || removed != nil {
		t.Errorf("RemoveTemps in a missing directory: %v, %v", removed, err)
	}
}
