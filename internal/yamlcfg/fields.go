package yamlcfg

import (
	"reflect"
	"slices"
	"strings"
)

// Field is one key a raw struct accepts, by path: "node.lid", "peers[].lid",
// "netdevs.*.ifname" (a map's values under "*"). Leaf is false for a key
// whose value is a mapping or list of further keys.
type Field struct {
	Path string
	Leaf bool
}

var leafType = reflect.TypeOf(Leaf{})

// Fields lists the keys of raw (a raw struct or a pointer to one) by their
// yaml tags, depth first, in declaration order.
func Fields(raw any) []Field {
	t := reflect.TypeOf(raw)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Field
	fields(t, "", &out)
	return out
}

func fields(t reflect.Type, prefix string, out *[]Field) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		p := tag
		if prefix != "" {
			p = prefix + "." + tag
		}
		ft := f.Type
		switch {
		case ft == leafType:
			*out = append(*out, Field{p, true})
		case ft.Kind() == reflect.Struct:
			*out = append(*out, Field{p, false})
			fields(ft, p, out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			*out = append(*out, Field{p, false})
			fields(ft.Elem(), p+"[]", out)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			*out = append(*out, Field{p, false})
			fields(ft.Elem(), p+".*", out)
		default:
			*out = append(*out, Field{p, true})
		}
	}
}

// suggest returns the key of raw next to the unknown key at path (a field
// path from the YAML, with list indices and map keys) that is most likely
// the one meant: a key of the same mapping at most two edits away, or one
// that the unknown key begins (three letters or more), or "" when there is
// none.
func suggest(raw any, path string) string {
	parent, key := splitLast(normalizePath(path))
	fs := Fields(raw)
	inParent := func(p string) bool {
		return slices.ContainsFunc(fs, func(f Field) bool { fp, _ := splitLast(f.Path); return fp == p })
	}
	if !inParent(parent) { // under a map's value: "netdevs.0" is "netdevs.*"
		if pp, _ := splitLast(parent); pp != "" && inParent(pp+".*") {
			parent = pp + ".*"
		}
	}
	best, bestD := "", 3
	for _, f := range fs {
		if fp, fk := splitLast(f.Path); fp == parent {
			d := editDistance(strings.ToLower(key), fk)
			if len(key) >= 3 && strings.HasPrefix(fk, strings.ToLower(key)) {
				d = min(d, 2)
			}
			if d < bestD {
				best, bestD = fk, d
			}
		}
	}
	return best
}

// splitLast splits a path at its last dot: "a.b.c" -> "a.b", "c"; "a" ->
// "", "a".
func splitLast(p string) (string, string) {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// normalizePath turns the indices of a YAML path into the "[]" of Fields
// ("vnics[2].vesw" -> "vnics[].vesw").
func normalizePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '[' {
			if j := strings.IndexByte(p[i:], ']'); j > 0 {
				b.WriteString("[]")
				i += j
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = slices.Min([]int{c, prev[j] + 1, cur[j-1] + 1})
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CheckDocumented compares the keys of a raw struct (Fields) with their
// documentation, doc: the text written for each documented path (a table
// row, a section). A key is documented when its path is in doc, when the
// text of its nearest documented ancestor names it as a word (a row
// "`sc` | `{uc, mc, non_vlan_uc, non_vlan_mc}`" documents sc.uc), or, for
// a mapping or list, when keys inside it are in doc. It returns the keys
// that are not documented, and the documented paths that are no key.
func CheckDocumented(fields []Field, doc map[string]string) (undocumented, unknown []string) {
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Path] = true
		if _, ok := doc[f.Path]; ok {
			continue
		}
		if !f.Leaf && holdsDocumented(doc, f.Path) {
			continue
		}
		_, key := splitLast(f.Path)
		named := false
		for p := trimContainer(f.Path); p != ""; p = trimContainer(p) {
			if text, ok := doc[p]; ok {
				named = containsWord(text, key)
				break
			}
		}
		if !named {
			undocumented = append(undocumented, f.Path)
		}
	}
	for p := range doc {
		if !known[p] {
			unknown = append(unknown, p)
		}
	}
	slices.Sort(unknown)
	return undocumented, unknown
}

// holdsDocumented reports whether doc has a path inside the mapping or list
// at p.
func holdsDocumented(doc map[string]string, p string) bool {
	for d := range doc {
		if strings.HasPrefix(d, p+".") || strings.HasPrefix(d, p+"[]") {
			return true
		}
	}
	return false
}

// trimContainer is the path of the key that holds p: "a[].b" -> "a",
// "a.*.b" -> "a", "a.b" -> "a".
func trimContainer(p string) string {
	p, _ = splitLast(p)
	p = strings.TrimSuffix(strings.TrimSuffix(p, ".*"), "[]")
	return p
}

// containsWord reports whether text has word with no letter, digit or _
// on either side.
func containsWord(text, word string) bool {
	isWord := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !isWord(text[j-1])) && (end == len(text) || !isWord(text[end])) {
			return true
		}
		i = j + 1
	}
}
