package main

import (
	"bytes"
	"testing"
)

func TestRenderTable(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"rows keep key order": {
			in:   `[{"lid":"0x10","endpoint":"10.0.0.1:4793","members":""},{"lid":"0xF00001","members":"0x10,0xC000"}]`,
			want: "LID       ENDPOINT       MEMBERS\n0x10      10.0.0.1:4793  -\n0xF00001  -              0x10,0xC000\n",
		},
		"object with counters": {
			in:   `{"node":"a","extended":true,"counters":[{"name":"rx","value":3}]}`,
			want: "node      a\nextended  true\nrx        3\n",
		},
		"nested list of objects": {
			in:   `{"name":"fm","nodes":[{"name":"a","lid":16}]}`,
			want: "name  fm\nnodes:\nNAME  LID\na     16\n",
		},
		"arrays in cells": {in: `[{"ports":[1,2]}]`, want: "PORTS\n1,2\n"},
		"objects with lists in cells": {
			in:   `[{"id":1,"members":[{"node":"b","ip":["10.1.0.2/24","fd00::2/64"],"configured":true},{"node":"c","ip":null,"configured":false}]}]`,
			want: "ID  MEMBERS\n1   node=b ip=10.1.0.2/24,fd00::2/64 configured=true; node=c ip=- configured=false\n",
		},
	} {
		var b bytes.Buffer
		if err := renderTable(&b, []byte(tc.in)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, b.String(), tc.want)
		}
	}
	if err := renderTable(&bytes.Buffer{}, []byte(`{"a":`)); err == nil {
		t.Error("truncated JSON must fail")
	}
}
