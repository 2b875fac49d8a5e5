// Package yamlcfg is what opavnic's two config loaders (vnicd's and the
// fabric manager's) share in reading YAML, so that both say the same things
// about the same mistakes:
//
//   - Decode expands ${NAME} and ${NAME:-default} (internal/envexpand) and
//     decodes one YAML document with unknown fields refused, into raw structs
//     whose values are Leafs: the YAML node as written, with its line;
//   - yaml.v3's type errors come back as an *Error naming the field's path
//     ("vnics[1].vesw", "vesws[0].members") and the line, not Go type names;
//   - a Checker keeps the first problem found while a loader builds its
//     config, and checks the syntax every loader shares: single values,
//     lists, and integers (decimal, 0x hex, 0o octal or 0b binary; a leading
//     0 on a decimal is refused as ambiguous, never read as octal).
//
// Every problem is an *Error; a loader names its config in the errors it
// returns (Named), and exports Error under a name of its own (an alias), so
// that its callers find it with errors.As.
package yamlcfg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/internal/envexpand"
)

// Error is a config that cannot be used: which config, which field, why, and
// where.
type Error struct {
	// Config names the config at the head of the message ("config",
	// "fabric config"); "" for none.
	Config string
	// Field is the path of the offending field ("vnics[1].vesw.eth_mtu");
	// "" for a problem with the text itself (YAML syntax, an environment
	// variable).
	Field  string
	Reason string
	// Line is the 1-based line of the offending value, 0 when unknown.
	Line int
}

// Error formats e as "<config>: <field>: <reason> (line N)", or
// "<config>: line N: <reason>" without a field, each part only when known.
func (e *Error) Error() string {
	var s string
	switch {
	case e.Field == "" && e.Line > 0:
		s = fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	case e.Field == "":
		s = e.Reason
	case e.Line > 0:
		s = fmt.Sprintf("%s: %s (line %d)", e.Field, e.Reason, e.Line)
	default:
		s = e.Field + ": " + e.Reason
	}
	if e.Config != "" {
		return e.Config + ": " + s
	}
	return s
}

// Named returns the *Error that err is or wraps as a new *Error of the named
// config, alone (not wrapped); any other error, and nil, it returns as it is.
func Named(config string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	n := *e
	n.Config = config
	return &n
}

// Leaf holds the YAML node of one value as written, so that a loader can
// apply the field's own syntax and report its line. A missing or null value
// leaves it zero (absent).
type Leaf struct{ n *yaml.Node }

// LeafOf is the Leaf of n: absent for nil or a null value.
func LeafOf(n *yaml.Node) Leaf {
	if n == nil || n.ShortTag() == "!!null" {
		return Leaf{}
	}
	return Leaf{n}
}

// UnmarshalYAML keeps the node (yaml.v3 does not call it for a null value).
func (l *Leaf) UnmarshalYAML(n *yaml.Node) error {
	l.n = n
	return nil
}

// Present reports whether the value was given.
func (l Leaf) Present() bool { return l.n != nil }

// Line is the value's 1-based line, 0 when absent.
func (l Leaf) Line() int {
	if l.n == nil {
		return 0
	}
	return l.n.Line
}

// Node returns the value's node with aliases resolved (nil when absent).
func (l Leaf) Node() *yaml.Node {
	n := l.n
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// Decode expands the environment references in data (lookup gives a
// variable's value) and decodes its single YAML document into raw, a pointer
// to the loader's raw struct; unknown fields are errors. An empty file (or
// one of comments only) decodes to an empty raw tree. notMapping is the
// error's reason when the document is not a mapping ("the file must be a
// mapping (node, peers, ...)"). The error is an *Error.
func Decode(data []byte, lookup func(string) (string, bool), raw any, notMapping string) error {
	text, err := envexpand.Expand(data, lookup)
	if err != nil {
		var ee *envexpand.Error
		if errors.As(err, &ee) {
			return &Error{Line: ee.Line, Reason: ee.Reason}
		}
		return &Error{Reason: err.Error()}
	}
	return DecodeText(text, raw, notMapping)
}

// Loader reads one kind of config file: Decode into a raw tree of type R,
// then Build the config C from it.
type Loader[R, C any] struct {
	// Config names the config at the head of every error message ("config").
	Config string
	// NotMapping is Decode's notMapping.
	NotMapping string
	// Build checks the raw tree and makes the config; its problems are
	// *Errors (a Checker's).
	Build func(*R) (*C, error)
}

// Load reads the file at path and parses it with the process environment. A
// read error comes back as os.ReadFile gives it (it names the file).
func (l *Loader[R, C]) Load(path string) (*C, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return l.Parse(data, os.LookupEnv)
}

// Parse parses a config's text, lookup giving the environment. Every *Error,
// of Decode or of Build, comes back Named l.Config; Build's other errors as
// they are.
func (l *Loader[R, C]) Parse(data []byte, lookup func(string) (string, bool)) (*C, error) {
	var raw R
	if err := Decode(data, lookup, &raw, l.NotMapping); err != nil {
		return nil, Named(l.Config, err)
	}
	c, err := l.Build(&raw)
	if err != nil {
		return nil, Named(l.Config, err)
	}
	return c, nil
}

// DecodeText is Decode without the environment expansion, for text that is
// not a file (a control request's JSON arguments, say).
func DecodeText(text []byte, raw any, notMapping string) error {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(raw); err != nil {
		if err == io.EOF {
			return nil
		}
		return yamlError(text, err, raw, notMapping)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); err {
	case io.EOF:
		return nil
	case nil:
		return &Error{Line: extra.Line, Reason: "a second YAML document; a config file holds one"}
	default:
		return yamlError(text, err, raw, notMapping)
	}
}

var (
	reYAMLLine  = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)
	reUnknown   = regexp.MustCompile(`(?s)^field (.*?) not found in type (?:\S+|struct \{.*\})$`)
	reDupKey    = regexp.MustCompile(`(?s)^mapping key (".*") already defined at line (\d+)$`)
	reDupField  = regexp.MustCompile(`(?s)^field (.*?) already set in type (?:\S+|struct \{.*\})$`)
	reUnmarshal = regexp.MustCompile(`(?s)^cannot unmarshal (!!\w+)(?: .*)? into (\S+)$`)
)

// yamlError turns a yaml.v3 error into an *Error. Type errors (unknown
// fields, repeated keys, a scalar where a mapping or list belongs) get the
// path of the field, found by its line in the node tree of text; syntax
// errors keep yaml's message and line.
func yamlError(text []byte, err error, raw any, notMapping string) error {
	var msg string
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	} else {
		msg = err.Error()
	}
	m := reYAMLLine.FindStringSubmatch(msg)
	if m == nil {
		return &Error{Reason: strings.TrimPrefix(msg, "yaml: ")}
	}
	line, _ := strconv.Atoi(m[1])
	ce := &Error{Line: line, Reason: m[2]}
	if te == nil {
		return ce
	}
	var root yaml.Node
	if yaml.Unmarshal(text, &root) != nil {
		return ce
	}
	switch {
	case reUnknown.MatchString(m[2]):
		name := reUnknown.FindStringSubmatch(m[2])[1]
		if p, ok := findKey(&root, line, name); ok {
			ce.Field, ce.Reason = p, "unknown field"
			if s := suggest(raw, p); s != "" {
				ce.Reason += "; did you mean " + s + "?"
			}
		}
	case reDupKey.MatchString(m[2]):
		d := reDupKey.FindStringSubmatch(m[2])
		name, _ := strconv.Unquote(d[1])
		if p, ok := findKey(&root, line, name); ok {
			ce.Field, ce.Reason = p, "given twice (first at line "+d[2]+")"
		}
	case reDupField.MatchString(m[2]):
		name := reDupField.FindStringSubmatch(m[2])[1]
		if p, ok := findKey(&root, line, name); ok {
			ce.Field, ce.Reason = p, "given twice"
		}
	case reUnmarshal.MatchString(m[2]):
		d := reUnmarshal.FindStringSubmatch(m[2])
		want := "a mapping"
		if strings.HasPrefix(d[2], "[]") {
			want = "a list"
		}
		if t := reflect.TypeOf(raw); t.Kind() == reflect.Pointer && d[2] == t.Elem().String() {
			ce.Reason = notMapping
		} else if p, n, ok := findValue(&root, line, d[1]); ok {
			ce.Field, ce.Reason = p, "must be "+want+", not "+KindName(n)
		}
	}
	return ce
}

// walk calls visit for every value node under n (keys excluded, aliases not
// followed) with its field path.
func walk(n *yaml.Node, path string, visit func(path string, key, val *yaml.Node) bool) bool {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if walk(c, path, visit) {
				return true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if visit(p, nil, c) || walk(c, p, visit) {
				return true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if visit(p, k, v) || walk(v, p, visit) {
				return true
			}
		}
	}
	return false
}

// findKey returns the path of the mapping key name written at line.
func findKey(root *yaml.Node, line int, name string) (path string, ok bool) {
	ok = walk(root, "", func(p string, k, _ *yaml.Node) bool {
		if k != nil && k.Line == line && k.Value == name {
			path = p
			return true
		}
		return false
	})
	return path, ok
}

// findValue returns the path of the first value node below the root at line
// with the short tag tag.
func findValue(root *yaml.Node, line int, tag string) (path string, n *yaml.Node, ok bool) {
	ok = walk(root, "", func(p string, _, v *yaml.Node) bool {
		if v.Line == line && v.ShortTag() == tag {
			path, n = p, v
			return true
		}
		return false
	})
	return path, n, ok
}

// KindName names what n is, for errors: "a mapping", "a list" or the
// quoted value.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// Checker keeps the first problem found; its helpers return zero values
// once there is one, and the loader returns it (Err) at the end.
type Checker struct{ err *Error }

// Failf records a problem with the value l at path, unless there is one.
func (c *Checker) Failf(path string, l Leaf, format string, args ...any) {
	if c.err == nil {
		c.err = &Error{Field: path, Reason: fmt.Sprintf(format, args...), Line: l.Line()}
	}
}

// Err returns the first problem recorded, or nil (an untyped nil) when there
// is none.
func (c *Checker) Err() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// First returns the first problem recorded, nil when there is none.
func (c *Checker) First() *Error { return c.err }

// Failed reports whether a problem has been recorded.
func (c *Checker) Failed() bool { return c.err != nil }

// Text returns the scalar text of l; ok is false when l is absent (or there
// is an error, recorded).
func (c *Checker) Text(l Leaf, path string) (s string, ok bool) {
	n := l.Node()
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		c.Failf(path, l, "must be a single value, not %s", KindName(n))
		return "", false
	}
	return n.Value, true
}

// Required records an error when l is absent.
func (c *Checker) Required(l Leaf, path string) bool {
	if !l.Present() {
		c.Failf(path, l, "required")
		return false
	}
	return true
}

// Number parses an integer: decimal, 0x hex, 0o octal or 0b binary. Decimal
// with a leading 0 is refused as ambiguous, as are signs and underscores.
func (c *Checker) Number(l Leaf, path string) (uint64, bool) {
	s, ok := c.Text(l, path)
	if !ok {
		return 0, false
	}
	// A decimal too large for YAML's integers resolves as a float; it is
	// refused below as too large, not as something else.
	if t := l.Node().ShortTag(); t != "!!int" && t != "!!str" && (t != "!!float" || strings.Trim(s, "0123456789") != "") {
		c.Failf(path, l, "%q is not an integer", s)
		return 0, false
	}
	base, digits := 10, s
	if len(s) >= 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			base, digits = 16, s[2:]
		case 'o', 'O':
			base, digits = 8, s[2:]
		case 'b', 'B':
			base, digits = 2, s[2:]
		}
	}
	if base == 10 && len(s) > 1 && s[0] == '0' {
		c.Failf(path, l, "%q: a leading 0 is ambiguous; write decimal without it, or 0x for hex", s)
		return 0, false
	}
	if strings.HasPrefix(s, "-") {
		c.Failf(path, l, "%s is negative", s)
		return 0, false
	}
	if digits == "" || digits[0] == '+' || strings.ContainsRune(digits, '_') {
		c.Failf(path, l, "%q is not an integer", s)
		return 0, false
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			c.Failf(path, l, "%s is too large", s)
		} else {
			c.Failf(path, l, "%q is not an integer (decimal or 0x hex)", s)
		}
		return 0, false
	}
	return v, true
}

// Ranged parses an integer in lo..hi, or returns def when l is absent or
// bad. hex writes the numbers of its error in hex.
func (c *Checker) Ranged(l Leaf, path string, lo, hi, def uint64, hex bool) uint64 {
	v, ok := c.Number(l, path)
	if !ok {
		return def
	}
	if v < lo || v > hi {
		c.Failf(path, l, "%s is out of range %s..%s", fmtNum(v, hex), fmtNum(lo, hex), fmtNum(hi, hex))
		return def
	}
	return v
}

func fmtNum(v uint64, hex bool) string {
	if hex {
		return fmt.Sprintf("0x%X", v)
	}
	return strconv.FormatUint(v, 10)
}

// List returns the elements of a list leaf (nil when absent); a null
// element is an absent Leaf.
func (c *Checker) List(l Leaf, path string) []Leaf {
	n := l.Node()
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		c.Failf(path, l, "must be a list, not %s", KindName(n))
		return nil
	}
	out := make([]Leaf, len(n.Content))
	for i, e := range n.Content {
		if e.ShortTag() != "!!null" { // an alias has no tag of its own
			out[i] = Leaf{e}
		}
	}
	return out
}

// Parsed is the value of a text field in its own syntax: parse's result, or
// def when the field is absent, and def with the field's failure recorded
// when parse refuses it.
func Parsed[T any](c *Checker, l Leaf, path string, def T, parse func(string) (T, error)) T {
	s, _ := c.Text(l, path)
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil {
		c.Failf(path, l, "%q: %v", s, err)
		return def
	}
	return v
}
