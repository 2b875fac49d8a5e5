package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every vnicd config the demo and the docs ship must load as it is.
func TestShippedConfigsLoad(t *testing.T) {
	files, _ := filepath.Glob("../../configs/demo/*host*.yaml")
	files = append(files, "../../configs/vnicd.example.yaml")
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		cfg, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if strings.Contains(f, "managed") && !cfg.Node.Managed() {
			t.Errorf("%s: not in managed mode", f)
		}
	}
}
