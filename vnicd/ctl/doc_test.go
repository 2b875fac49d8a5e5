package ctl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDocListsCommandsAndCodes: docs/operating.md (The control protocol)
// has a table row for every command (Cmd*) and every error code (Code*)
// this package declares.
func TestDocListsCommandsAndCodes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, file := range []string{"types.go", "errors.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			vs, ok := node.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
				return true
			}
			name := vs.Names[0].Name
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || !(strings.HasPrefix(name, "Cmd") || strings.HasPrefix(name, "Code")) {
				return true
			}
			v, _ := strconv.Unquote(lit.Value)
			n++
			if !strings.Contains(string(doc), "\n| `"+v+"` |") {
				t.Errorf("docs/operating.md has no row for %s (%q)", name, v)
			}
			return true
		})
	}
	if n < 20 {
		t.Errorf("found %d commands and codes; the parse missed some", n)
	}
}
