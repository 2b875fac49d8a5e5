// Package envexpand expands ${NAME} and ${NAME:-default} in config text, the
// one rule set both config loaders (vnicd's and the fabric manager's) use.
package envexpand

import (
	"bytes"
	"fmt"
	"strings"
)

// Error is a reference that cannot be expanded, with its 1-based line.
type Error struct {
	Line   int
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Expand replaces ${NAME} with the value of NAME (which must be set) and
// ${NAME:-default} with the value of NAME, or default when NAME is unset or
// empty, everywhere in the text, comments included. $${ is a literal ${; any
// other $ is literal. Values and defaults may not contain line breaks, so the
// YAML's line numbers stay those of the file, and are not expanded again.
func Expand(data []byte, lookup func(string) (string, bool)) ([]byte, error) {
	if !bytes.Contains(data, []byte("${")) {
		return data, nil
	}
	out := make([]byte, 0, len(data))
	line := 1
	for i := 0; i < len(data); {
		rest := data[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("$${")):
			out = append(out, "${"...)
			i += 3
			continue
		case !bytes.HasPrefix(rest, []byte("${")):
			if data[i] == '\n' {
				line++
			}
			out = append(out, data[i])
			i++
			continue
		}
		end := bytes.IndexAny(rest, "}\n")
		if end < 0 || rest[end] != '}' {
			return nil, &Error{Line: line, Reason: "unterminated ${ (a ${...} ends with } on the same line; write $${ for a literal ${)"}
		}
		expr := string(rest[2:end])
		ref := "${" + expr + "}"
		name, def, hasDef := strings.Cut(expr, ":-")
		if !isName(name) {
			return nil, &Error{Line: line, Reason: fmt.Sprintf("%s: expected ${NAME} or ${NAME:-default}, NAME of letters, digits and _", ref)}
		}
		if strings.Contains(def, "${") {
			return nil, &Error{Line: line, Reason: fmt.Sprintf("%s: a default cannot contain ${", ref)}
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return nil, &Error{Line: line, Reason: fmt.Sprintf("environment variable %s is not set and ${%s} has no default (write ${%s:-value})", name, name, name)}
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, &Error{Line: line, Reason: fmt.Sprintf("environment variable %s contains a line break", name)}
		}
		out = append(out, v...)
		i += end + 1
	}
	return out, nil
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
