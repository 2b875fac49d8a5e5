package statefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type testFile struct {
	Version int      `json:"version"`
	Items   []string `json:"items"`
}

func (f *testFile) FileVersion() int { return f.Version }

// TestJSON: Save writes indented JSON that Load reads back; a missing file
// and no path are no file and no error; unknown fields, another version and
// damaged bytes are errors that name the file.
func TestJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.json")
	f := &JSON{Path: p, Name: "test: items state file", Version: 2}
	var got testFile
	if found, err := f.Load(&got); found || err != nil {
		t.Fatalf("Load of a missing file: %v, %v", found, err)
	}
	if err := f.Save(func() any { return &testFile{Version: 2, Items: []string{"a", "b"}} }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "{\n  \"version\": 2,\n  \"items\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"; string(b) != want {
		t.Errorf("file %q, want %q", b, want)
	}
	if found, err := f.Load(&got); !found || err != nil || strings.Join(got.Items, ",") != "a,b" {
		t.Errorf("Load: %v, %v, %+v", found, err, got)
	}
	for _, tc := range []struct{ in, err string }{
		{`{"version": 3, "items": []}`, "test: items state file " + p + ": version 3, want 2"},
		{`{"version": 2, "colour": "red"}`, `unknown field "colour"`},
		{`{"vers`, "unexpected EOF"},
	} {
		if err := os.WriteFile(p, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Load(&testFile{}); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Load of %s: %v, want %q", tc.in, err, tc.err)
		}
	}
	none := &JSON{Name: "none", Version: 1}
	if err := none.Save(func() any { t.Error("snapshot taken for no file"); return nil }); err != nil {
		t.Error(err)
	}
	if found, err := none.Load(&got); found || err != nil {
		t.Errorf("Load without a path: %v, %v", found, err)
	}
}
