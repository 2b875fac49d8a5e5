package fm

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/internal/yamlcfg"
)

// TestConfigDocumented holds the fabric manager's table in configs/README.md
// to the config opafm reads: every key has its row (or its mention in the
// row of the mapping or list that holds it), and every row is a key.
func TestConfigDocumented(t *testing.T) {
	b, err := os.ReadFile("../../configs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n# Fabric manager configuration")
	if start < 0 {
		t.Fatal("configs/README.md: no \"# Fabric manager configuration\"")
	}
	reCode := regexp.MustCompile("`([^`]+)`")
	doc := map[string]string{}
	inTable := false
	for _, line := range strings.Split(text[start:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the end of the table
			}
			continue
		}
		inTable = true
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		base := ""
		for _, m := range reCode.FindAllStringSubmatch(first, -1) {
			p := strings.TrimSuffix(m[1], "[]")
			if strings.HasPrefix(p, ".") { // "`lid_pool.start`, `.end`"
				p = base + p
			} else if i := strings.LastIndexByte(p, '.'); i >= 0 {
				base = p[:i]
			}
			doc[p] = line
		}
	}
	und, unk := yamlcfg.CheckDocumented(yamlcfg.Fields(&rawConfig{}), doc)
	for _, p := range und {
		t.Errorf("%s is not in configs/README.md's fabric manager table", p)
	}
	for _, p := range unk {
		t.Errorf("configs/README.md documents %s, which the fabric config does not take", p)
	}
}
