package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A generic view of a daemon's JSON answer that keeps the order of object
// keys, so that any command of either daemon (vnicd or opafm) prints as a
// table whose columns are in the order the daemon wrote them.

type field struct {
	key string
	val any // scalar, []field (object) or []any (array)
}

func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("bad answer: %w", err)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := []field{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, field{fmt.Sprint(k), v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
	}
	return tok, nil
}

// cell formats a value for one table cell. Each level has its own
// separator, so that a cell holding a list of objects with lists in them
// (opafm vesws' members and their addresses) reads unambiguously: a list's
// items are joined by ",", an object's key=value pairs by " ", and a list's
// objects by "; ".
func cell(v any) string {
	switch t := v.(type) {
	case nil:
		return "-"
	case string:
		if t == "" {
			return "-"
		}
		return t
	case []field:
		parts := make([]string, len(t))
		for i, f := range t {
			parts[i] = f.key + "=" + cell(f.val)
		}
		return strings.Join(parts, " ")
	case []any:
		if len(t) == 0 {
			return "-"
		}
		parts := make([]string, len(t))
		sep := ","
		for i, e := range t {
			if _, ok := e.([]field); ok {
				sep = "; "
			}
			parts[i] = cell(e)
		}
		return strings.Join(parts, sep)
	}
	return fmt.Sprint(v)
}

// isNameValue reports a list of {name, value} objects (a counter list).
func isNameValue(arr []any) bool {
	for _, e := range arr {
		obj, ok := e.([]field)
		if !ok || len(obj) != 2 || obj[0].key != "name" || obj[1].key != "value" {
			return false
		}
	}
	return len(arr) > 0
}

// renderTable prints an array of objects as a table (columns in first-seen
// key order) and anything else as key/value lines.
func renderTable(w io.Writer, raw []byte) error {
	v, err := decodeOrdered(raw)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeValue(tw, v)
	return tw.Flush()
}

func writeValue(tw *tabwriter.Writer, v any) {
	switch t := v.(type) {
	case []any:
		if len(t) == 0 {
			fmt.Fprintln(tw, "(none)") // an empty list, not silence
			return
		}
		writeRows(tw, t)
	case []field:
		for _, f := range t {
			if arr, ok := f.val.([]any); ok && isNameValue(arr) {
				for _, e := range arr {
					obj := e.([]field)
					fmt.Fprintf(tw, "%s\t%s\n", cell(obj[0].val), cell(obj[1].val))
				}
				continue
			}
			if arr, ok := f.val.([]any); ok && len(arr) > 0 {
				if _, isObj := arr[0].([]field); isObj {
					fmt.Fprintf(tw, "%s:\n", f.key)
					writeRows(tw, arr)
					continue
				}
			}
			fmt.Fprintf(tw, "%s\t%s\n", f.key, cell(f.val))
		}
	default:
		fmt.Fprintln(tw, cell(v))
	}
}

func writeRows(tw *tabwriter.Writer, rows []any) {
	if isNameValue(rows) {
		for _, e := range rows {
			obj := e.([]field)
			fmt.Fprintf(tw, "%s\t%s\n", cell(obj[0].val), cell(obj[1].val))
		}
		return
	}
	var cols []string
	seen := map[string]bool{}
	for _, r := range rows {
		obj, ok := r.([]field)
		if !ok {
			fmt.Fprintln(tw, cell(r))
			continue
		}
		for _, f := range obj {
			if !seen[f.key] {
				seen[f.key] = true
				cols = append(cols, f.key)
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
	for _, r := range rows {
		obj, ok := r.([]field)
		if !ok {
			continue
		}
		vals := map[string]any{}
		for _, f := range obj {
			vals[f.key] = f.val
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = cell(vals[c])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
}
