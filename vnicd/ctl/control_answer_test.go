package ctl

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// FuzzControlAnswer feeds arbitrary bytes to the client's answer decoding
// (what vnicctl and vnic-cni run on a daemon's reply): an error or a decoded
// value, never a panic.
func FuzzControlAnswer(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"data":[{"vport":0,"ifname":"vnic0"}]}` + "\n",
		`{"ok":false,"error":"no vport 9"}` + "\n",
		`{"ok":true}`,
		`{"ok":true,"data":{"vport":"x"}}`,
		`{"ok":true,"data":null}`,
		"\n",
		"",
		"{\"ok\":tr",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var vs []VNICStatus
		err := readAnswer(bufio.NewReader(bytes.NewReader(b)), &vs)
		if err == nil && !bytes.Contains(b, []byte(`true`)) {
			t.Fatalf("%q decoded as a successful answer", b)
		}
	})
}

func TestControlAnswer(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		n       int
	}{
		{`{"ok":true,"data":[{"vport":3}]}` + "\n", "", 1},
		{`{"ok":true}`, "", 0},
		{`{"ok":false,"error":"no vport 9"}` + "\n", "no vport 9", 0},
		{`not json` + "\n", "bad answer from the daemon", 0},
		{``, "reading the answer: EOF", 0},
		{`{"ok":true,"data":{"vport":3}}`, "cannot unmarshal object", 0},
	} {
		var vs []VNICStatus
		err := readAnswer(bufio.NewReader(strings.NewReader(tc.in)), &vs)
		switch {
		case tc.err == "" && err != nil, tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case len(vs) != tc.n:
			t.Errorf("%q: %d statuses, want %d", tc.in, len(vs), tc.n)
		}
	}
}
