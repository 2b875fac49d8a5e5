package envexpand

import (
	"errors"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"RUN": "r1", "EMPTY": "", "LID": "0x10", "NL": "a\nb"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ in, out, err string }{
		{in: "a: ${RUN}", out: "a: r1"},
		{in: "a: ${EMPTY:-d}\nb: ${UNSET:-x y}", out: "a: d\nb: x y"},
		{in: "a: $${RUN} $x $", out: "a: ${RUN} $x $"},
		{in: "# ${RUN}", out: "# r1"},
		{in: "a: 1\nb: ${RUN", err: "line 2: unterminated"},
		{in: "a: ${UNSET}", err: "UNSET is not set"},
		{in: "a: ${1X}", err: "expected ${NAME}"},
		{in: "a: ${UNSET:-${RUN}}", err: "cannot contain"},
		{in: "plain $ text $RUN $(x) $", out: "plain $ text $RUN $(x) $"},
		{in: "ns: ${RUN:-demo}-a", out: "ns: r1-a"},
		{in: "ns: ${EMPTY}-a", out: "ns: -a"},
		{in: "ns: ${UNSET:-}-a", out: "ns: -a"},
		{in: "x: ${UNSET:-a:-b c}", out: "x: a:-b c"},
		{in: "lid: ${LID}", out: "lid: 0x10"},
		{in: "a: $${RUN} $$${RUN} $$ ${RUN}${RUN}", out: "a: ${RUN} $${RUN} $$ r1r1"},
		{in: "x: ${}", err: "NAME"},
		{in: "x: ${A B}", err: "NAME"},
		{in: "x: ${RUN\n}", err: "unterminated"},
		{in: "x: ${NL}", err: "line break"},
	} {
		got, err := Expand([]byte(tc.in), lookup)
		var e *Error
		switch {
		case tc.err != "" && (!errors.As(err, &e) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || string(got) != tc.out):
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.out)
		}
	}
}
