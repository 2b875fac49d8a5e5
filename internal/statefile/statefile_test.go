package statefile

import (
	"os"
	"path/filepath"
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
