package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// What vnicctl prints for answers a newcomer met: an empty list says so,
// commands gives the CLI form of the protocol's vnic_* names, the wire name
// typed as a command points to the CLI form, and the HFI's data counters
// say their unit.
func TestCLIRendering(t *testing.T) {
	sock := serveControl(t, map[string]ctl.Handler{
		ctl.CmdClaims:   func(json.RawMessage) (any, error) { return []ctl.Claim{}, nil },
		ctl.CmdVNICs:    func(json.RawMessage) (any, error) { return []ctl.VNICStatus{}, nil },
		ctl.CmdCounters: func(json.RawMessage) (any, error) { return []ctl.PortCounterSet{}, nil },
		ctl.CmdVNICAdd:  func(json.RawMessage) (any, error) { return nil, nil },
		ctl.CmdVNICGC:   func(json.RawMessage) (any, error) { return nil, nil },
		ctl.CmdHFI: func(json.RawMessage) (any, error) {
			return ctl.HFIStatus{Node: "a", Counters: []ctl.Counter{{Name: "PortXmitData", Value: 8}, {Name: "PortXmitPkts", Value: 1}}}, nil
		},
	})
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"claims"}, 0, "(none)", ""},
		{[]string{"vnics"}, 0, "(none)", ""}, // a managed host before the EM made its ports
		{[]string{"counters"}, 0, "(none)", ""},
		{[]string{"commands"}, 0, "(vnicctl vnic add)", ""},
		{[]string{"commands"}, 0, "(vnic-cni's GC)", ""},
		{[]string{"vnic_add", "--vesw", "1"}, 2, "", "run: vnicctl vnic add"},
		{[]string{"hfi"}, 0, "8 (8-byte units", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--socket", sock}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.Contains(stderr.String(), tc.err) {
			t.Errorf("vnicctl %v: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out, tc.err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--socket", sock, "--json", "hfi"}, &stdout, &stderr); code != 0 || strings.Contains(stdout.String(), "units") {
		t.Errorf("vnicctl --json hfi: exit %d, %q: the JSON must stay plain", code, stdout.String())
	}
	// Its counters have the keys of the VNIC counters' (--json counters).
	var raw struct {
		Counters []map[string]any `json:"counters"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil || len(raw.Counters) == 0 ||
		raw.Counters[0]["name"] != "PortXmitData" || raw.Counters[0]["value"] != 8.0 {
		t.Errorf("vnicctl --json hfi: counters not as {\"name\": ..., \"value\": ...} (%v): %s", err, stdout.String())
	}
	if b, _ := json.Marshal(engine.Counter{Name: "rx_packets", Value: 2}); string(b) != `{"name":"rx_packets","value":2}` {
		t.Errorf("a VNIC counter is %s; the two must agree", b)
	}
}

// TestCountersRaggedAnswer: ports whose counter lists differ (a daemon of
// another version) are shown by name, "-" where a port has none, never a
// panic on the first port's list.
func TestCountersRaggedAnswer(t *testing.T) {
	sock := serveControl(t, map[string]ctl.Handler{
		ctl.CmdCounters: func(json.RawMessage) (any, error) {
			return []ctl.PortCounterSet{
				{VPort: 0, IfName: "a0", Counters: []ctl.Counter{{Name: "tx_packets", Value: 1}, {Name: "rx_packets", Value: 2}}},
				{VPort: 1, IfName: "a1", Counters: []ctl.Counter{{Name: "rx_packets", Value: 3}, {Name: "rx_new", Value: 4}}},
			}, nil
		},
	})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--socket", sock, "counters"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{"tx_packets  1", "rx_packets  2", "rx_new      -"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}
