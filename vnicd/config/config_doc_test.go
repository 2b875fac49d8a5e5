package config

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/internal/yamlcfg"
)

// reDocCode finds the `code` spans of a line of configs/README.md.
var reDocCode = regexp.MustCompile("`([^`]+)`")

// TestConfigDocumented holds configs/README.md's reference to the config
// vnicd reads: every key has its row (or, inside a mapping one row or
// section describes, its mention there), and every row is a key.
func TestConfigDocumented(t *testing.T) {
	b, err := os.ReadFile("../../configs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start, end := strings.Index(text, "\n## Reference\n"), strings.Index(text, "\n### Derived values\n")
	if start < 0 || end < start {
		t.Fatal("configs/README.md: no \"## Reference\" up to \"### Derived values\"")
	}
	doc := map[string]string{}
	section, rows := "", ""
	for _, line := range strings.Split(text[start+1:end], "\n") {
		code := reDocCode.FindStringSubmatch(line)
		switch {
		case strings.HasPrefix(line, "##") && code != nil:
			section, rows = code[1], code[1]
			switch {
			case strings.Contains(line, "(list)"):
				rows += "[]"
			case strings.Contains(line, "(map)"):
				rows += ".*"
			}
			doc[section] = line
		case strings.HasPrefix(line, "| `") && section != "":
			doc[rows+"."+code[1]] = line
		case section != "":
			doc[section] += "\n" + line
		}
	}
	und, unk := yamlcfg.CheckDocumented(yamlcfg.Fields(&rawConfig{}), doc)
	for _, p := range und {
		t.Errorf("%s is not in configs/README.md's reference", p)
	}
	for _, p := range unk {
		t.Errorf("configs/README.md documents %s, which the config does not take", p)
	}
}
