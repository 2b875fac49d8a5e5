package envexpand

import (
	"errors"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"RUN": "r1", "EMPTY": ""}
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
