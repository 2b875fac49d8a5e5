package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/ctl/ctltest"
)

// TestExtraArgsRefused: vnicctl's commands without arguments refuse
// extra ones (exit 2, "takes no arguments"), as fabric and vesws do; vnics
// and hfi ignored them, so `vnicctl vnics --json` (the flag after the
// command, where Go's flag package no longer reads it) printed a table and
// exited 0, and a script got text where it asked for JSON.
func TestExtraArgsRefused(t *testing.T) {
	handlers := map[string]ctl.Handler{}
	for _, cmd := range []string{ctl.CmdVNICs, ctl.CmdHFI, ctl.CmdFabric} {
		handlers[cmd] = func(json.RawMessage) (any, error) { return []int{}, nil }
	}
	sock := serveControl(t, handlers)
	for _, cmd := range []string{"vnics", "hfi", "fabric"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"--socket", sock, cmd, "--json"}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "takes no arguments") {
			t.Errorf("vnicctl %s --json: exit %d, stdout %q, stderr %q; want exit 2, takes no arguments", cmd, code, stdout.String(), stderr.String())
		}
	}
}

// serveControl serves a control socket with handlers for the test's
// length and returns its path.
func serveControl(t *testing.T, handlers map[string]ctl.Handler) string {
	t.Helper()
	return ctltest.Serve(t, handlers)
}
