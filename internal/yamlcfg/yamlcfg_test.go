package yamlcfg

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

type rawInner struct {
	A Leaf `yaml:"a"`
	B Leaf `yaml:"b"`
}

type rawTop struct {
	X     Leaf       `yaml:"x"`
	Inner rawInner   `yaml:"inner"`
	Items []rawInner `yaml:"items"`
}

func noEnv(string) (string, bool) { return "", false }

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Field: "inner.a", Reason: "bad", Line: 3}, "inner.a: bad (line 3)"},
		{Error{Field: "inner.a", Reason: "bad"}, "inner.a: bad"},
		{Error{Reason: "bad", Line: 3}, "line 3: bad"},
		{Error{Reason: "bad"}, "bad"},
		{Error{Config: "config", Field: "inner.a", Reason: "bad", Line: 3}, "config: inner.a: bad (line 3)"},
		{Error{Config: "config", Reason: "bad", Line: 3}, "config: line 3: bad"},
		{Error{Config: "config", Reason: "bad"}, "config: bad"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestNamed(t *testing.T) {
	e := &Error{Field: "a", Reason: "bad", Line: 2}
	err := Named("fabric config", fmt.Errorf("wrapped: %w", e))
	var n *Error
	if !errors.As(err, &n) || n == e || err.Error() != "fabric config: a: bad (line 2)" {
		t.Errorf("Named: %v (%T)", err, err)
	}
	if e.Config != "" {
		t.Error("Named changed the error it was given")
	}
	other := errors.New("other")
	if Named("config", other) != other || Named("config", nil) != nil {
		t.Error("Named changed an error that is no *Error")
	}
}

// Decode's errors name the field and line, never a Go type.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text    string
		field, reason string
		line          int
	}{
		{"unknown top", "x: 1\nbogus: 2\n", "bogus", "unknown field", 2},
		{"unknown inner", "inner: {a: 1, c: 2}\n", "inner.c", "unknown field", 1},
		{"unknown in list", "items:\n  - {a: 1}\n  - {z: 1}\n", "items[1].z", "unknown field", 3},
		{"key twice", "x: 1\nx: 2\n", "x", "given twice (first at line 1)", 2},
		{"mapping as list", "items: {a: 1}\n", "items", "must be a list, not a mapping", 1},
		{"scalar as mapping", "inner: 5\n", "inner", `must be a mapping, not "5"`, 1},
		{"file a list", "- 1\n", "", "the file must be a mapping (x, inner, items)", 1},
		{"two documents", "x: 1\n---\nx: 2\n", "", "a second YAML document", 2},
		{"syntax", "x: 1\n\ty: 2\n", "", "tab character", 2},
		{"env", "x: 1\ninner: {a: ${NOPE}}\n", "", "NOPE is not set", 2},
	} {
		var raw rawTop
		err := Decode([]byte(tc.text), noEnv, &raw, "the file must be a mapping (x, inner, items)")
		var e *Error
		if !errors.As(err, &e) || e.Field != tc.field || !strings.Contains(e.Reason, tc.reason) || e.Line != tc.line {
			t.Errorf("%s: %#v; want field %q, reason with %q, line %d", tc.name, err, tc.field, tc.reason, tc.line)
		}
		if err != nil && strings.Contains(err.Error(), "raw") {
			t.Errorf("%s: %q names a Go type", tc.name, err)
		}
	}
	var raw rawTop
	if err := Decode([]byte("# nothing\n"), noEnv, &raw, ""); err != nil || raw.X.Present() {
		t.Errorf("comments only: %v, %+v", err, raw)
	}
	// JSON is YAML; DecodeText does not expand ${...}.
	if err := DecodeText([]byte(`{"x": "${NOPE}"}`), &raw, ""); err != nil || raw.X.Node().Value != "${NOPE}" {
		t.Errorf("DecodeText: %v, %+v", err, raw.X.Node())
	}
}

func TestCheckerValues(t *testing.T) {
	text := `
x: &v 0x1F
inner: {a: *v, b: ~}
items:
  - {a: [1, ~, 3], b: {k: 1}}
`
	var raw rawTop
	if err := Decode([]byte(text), noEnv, &raw, ""); err != nil {
		t.Fatal(err)
	}
	var c Checker
	if v := c.Ranged(raw.Inner.A, "inner.a", 0, 0xFF, 0, true); v != 0x1F {
		t.Errorf("alias: %d", v)
	}
	if raw.Inner.B.Present() || raw.Inner.B.Line() != 0 {
		t.Error("a null value is present")
	}
	if v := c.Ranged(raw.Inner.B, "inner.b", 0, 9, 7, false); v != 7 {
		t.Errorf("absent: %d, want the default", v)
	}
	if es := c.List(raw.Items[0].A, "items[0].a"); len(es) != 3 || !es[0].Present() || es[1].Present() || !es[2].Present() {
		t.Errorf("list with a null element: %+v", es)
	}
	if c.Failed() || c.Err() != nil || c.First() != nil {
		t.Fatalf("unexpected problem: %v", c.Err())
	}
	if _, ok := c.Text(raw.Items[0].B, "items[0].b"); ok || c.First().Field != "items[0].b" ||
		c.First().Reason != "must be a single value, not a mapping" || c.First().Line != 5 {
		t.Errorf("text of a mapping: %v", c.Err())
	}
	// The first problem stays.
	c.Failf("later", Leaf{}, "second")
	if c.First().Field != "items[0].b" {
		t.Errorf("first problem replaced: %v", c.Err())
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{"0", 0, ""},
		{"42", 42, ""},
		{"0x2A", 42, ""},
		{"0X2a", 42, ""},
		{"0o52", 42, ""},
		{"0b101010", 42, ""},
		{"\"42\"", 42, ""},
		{"18446744073709551615", 1<<64 - 1, ""},
		{"18446744073709551616", 0, "too large"},
		{"052", 0, "leading 0 is ambiguous"},
		{"-1", 0, "negative"},
		{"+1", 0, "not an integer"},
		{"1_000", 0, "not an integer"},
		{"0x", 0, "not an integer"},
		{"1.5", 0, "not an integer"},
		{"true", 0, "not an integer"},
		{"abc", 0, "not an integer"},
		{"[1]", 0, "must be a single value, not a list"},
	} {
		var raw rawTop
		if err := Decode([]byte("x: "+tc.in+"\n"), noEnv, &raw, ""); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		var c Checker
		v, ok := c.Number(raw.X, "x")
		switch {
		case tc.err == "" && (!ok || v != tc.want || c.Failed()):
			t.Errorf("%s: %d, %v, %v; want %d", tc.in, v, ok, c.Err(), tc.want)
		case tc.err != "" && (ok || !c.Failed() || !strings.Contains(c.First().Reason, tc.err) || c.First().Field != "x"):
			t.Errorf("%s: %d, %v, %v; want an error with %q", tc.in, v, ok, c.Err(), tc.err)
		}
	}
	var c Checker
	var raw rawTop
	_ = Decode([]byte("x: 300\n"), noEnv, &raw, "")
	if c.Ranged(raw.X, "x", 1, 255, 9, true); c.First() == nil || c.First().Reason != "0x12C is out of range 0x1..0xFF" {
		t.Errorf("out of range (hex): %v", c.Err())
	}
	c = Checker{}
	if c.Ranged(raw.X, "x", 1, 255, 9, false); c.First() == nil || c.First().Reason != "300 is out of range 1..255" {
		t.Errorf("out of range: %v", c.Err())
	}
}

func TestRCAndClassMap(t *testing.T) {
	type rawVESW struct {
		RC Leaf        `yaml:"rc"`
		SC RawClassMap `yaml:"sc"`
	}
	for _, tc := range []struct {
		text  string
		rc    uint32
		field string // "" for no error
	}{
		{"rc: 0x7654321", 0x7654321, ""},
		{"rc: {ipv4: 1, ipv6_udp: 7}", 1<<RCFields[1].Shift | 7<<RCFields[6].Shift, ""},
		{"rc: {default: 3}", 3 << RCFields[0].Shift, ""},
		{"rc: 0x8", 0, "rc"},
		{"rc: {ipv4: 8}", 0, "rc.ipv4"},
		{"rc: {ipx: 1}", 0, "rc.ipx"},
		{"rc: [1]", 0, "rc"},
	} {
		var raw rawVESW
		if err := Decode([]byte(tc.text+"\n"), noEnv, &raw, ""); err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		var c Checker
		got := c.RC(raw.RC, "rc")
		switch {
		case tc.field == "" && (got != tc.rc || c.Failed()):
			t.Errorf("%s: %#x, %v; want %#x", tc.text, got, c.Err(), tc.rc)
		case tc.field != "" && (!c.Failed() || c.First().Field != tc.field):
			t.Errorf("%s: %v; want an error at %s", tc.text, c.Err(), tc.field)
		}
	}
	for _, tc := range []struct {
		text  string
		field string
	}{
		{"sc: {uc: [0, 1, 2, 3, 4, 5, 6, 31], mc: [1, 1, 1, 1, 1, 1, 1, 1], non_vlan_uc: 9, non_vlan_mc: 10}", ""},
		{"sc: {uc: [0, 1, 2]}", "sc.uc"},
		{"sc: {mc: [0, 1, 2, 3, 4, 5, 6, 32]}", "sc.mc[7]"},
		{"sc: {uc: [0, 1, 2, 3, ~, 5, 6, 7]}", "sc.uc[4]"},
		{"sc: {non_vlan_mc: 40}", "sc.non_vlan_mc"},
	} {
		var raw rawVESW
		if err := Decode([]byte(tc.text+"\n"), noEnv, &raw, ""); err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		var c Checker
		uc, mc, nu, nm := c.ClassMap(&raw.SC, "sc")
		switch {
		case tc.field == "" && (c.Failed() || uc != [8]uint8{0, 1, 2, 3, 4, 5, 6, 31} || mc != [8]uint8{1, 1, 1, 1, 1, 1, 1, 1} || nu != 9 || nm != 10):
			t.Errorf("%s: %v %v %d %d, %v", tc.text, uc, mc, nu, nm, c.Err())
		case tc.field != "" && (!c.Failed() || c.First().Field != tc.field):
			t.Errorf("%s: %v; want an error at %s", tc.text, c.Err(), tc.field)
		}
	}
}

// TestClassMapLongListAfterError: a list of more than 8 values after an
// earlier field failed is no panic (it indexed past the table's 8) and
// leaves the first error in place. FuzzParseConfig (vema/fm) found it.
func TestClassMapLongListAfterError(t *testing.T) {
	var raw struct {
		SC RawClassMap `yaml:"sc"`
	}
	if err := Decode([]byte("sc: {uc: [0, 1, 2, 3, 4, 5, 6, 7, 8]}\n"), noEnv, &raw, ""); err != nil {
		t.Fatal(err)
	}
	var c Checker
	c.Failf("earlier", Leaf{}, "failed first")
	if uc, _, _, _ := c.ClassMap(&raw.SC, "sc"); uc != [8]uint8{} || c.First().Field != "earlier" {
		t.Errorf("uc %v, first error %v; want none set and the earlier error", uc, c.Err())
	}
}

func TestFields(t *testing.T) {
	type rawEntry struct {
		Name Leaf `yaml:"name"`
	}
	type raw struct {
		X       Leaf                `yaml:"x"`
		Inner   rawInner            `yaml:"inner"`
		Items   []rawInner          `yaml:"items"`
		Entries map[string]rawEntry `yaml:"entries"`
		Skipped Leaf                `yaml:"-"`
	}
	want := []Field{{"x", true}, {"inner", false}, {"inner.a", true}, {"inner.b", true},
		{"items", false}, {"items[].a", true}, {"items[].b", true}, {"entries", false}, {"entries.*.name", true}}
	if got := Fields(&raw{}); !slices.Equal(got, want) {
		t.Errorf("Fields =\n%v\nwant\n%v", got, want)
	}
}

// An unknown field's error names the key most likely meant.
func TestUnknownFieldSuggestion(t *testing.T) {
	type rawEntry struct {
		IfName Leaf `yaml:"ifname"`
	}
	type raw struct {
		Node struct {
			BusyPoll     Leaf `yaml:"busy_poll"`
			SubnetPrefix Leaf `yaml:"subnet_prefix"`
		} `yaml:"node"`
		Items   []rawInner          `yaml:"items"`
		Entries map[string]rawEntry `yaml:"entries"`
	}
	for _, tc := range []struct{ text, reason string }{
		{"node: {busy_pol: 1}", "unknown field; did you mean busy_poll?"},
		{"node: {Busy_Poll: 1}", "unknown field; did you mean busy_poll?"},
		{"node: {subnet: fe80::}", "unknown field; did you mean subnet_prefix?"},
		{"node: {colour: red}", "unknown field"},
		{"items: [{a: 1}, {bb: 2}]", "unknown field; did you mean b?"},
		{"entries: {e0: {ifnme: x}}", "unknown field; did you mean ifname?"},
		{"nodes: {}", "unknown field; did you mean node?"},
		{"node: {busy poll: 1}", "unknown field; did you mean busy_poll?"},
	} {
		var r raw
		err := Decode([]byte(tc.text+"\n"), noEnv, &r, "")
		var e *Error
		if !errors.As(err, &e) || e.Reason != tc.reason {
			t.Errorf("%s: %v; want %q", tc.text, err, tc.reason)
		}
	}
}

func TestCheckDocumented(t *testing.T) {
	fields := []Field{{"a", false}, {"a.x", true}, {"a.y", true}, {"l", false}, {"l[].m", false},
		{"l[].m.p", true}, {"l[].m.q", true}, {"m", false}, {"m.*.k", true}, {"n", false}, {"n.z", true}, {"o", false}, {"o.w", true}}
	doc := map[string]string{
		"a": "section a", "a.x": "| `x` |", // a.y: not named
		"l[].m": "| `m` | `{p, qq}` |", // l: its keys are; q is not qq
		"m":     "values {k}",
		"n.z":   "| `n.z` |",
		"gone":  "| `gone` |", // and o, o.w: nothing
	}
	und, unk := CheckDocumented(fields, doc)
	if !slices.Equal(und, []string{"a.y", "l[].m.q", "o", "o.w"}) || !slices.Equal(unk, []string{"gone"}) {
		t.Errorf("undocumented %v, unknown %v", und, unk)
	}
}
