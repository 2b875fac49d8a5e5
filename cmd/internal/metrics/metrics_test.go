package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/opavnic/opavnic/cmd/internal/fmd"
	"github.com/opavnic/opavnic/cmd/internal/metrics"
	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfimetrics"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vema/fm"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/engine/enginetest"
	"github.com/opavnic/opavnic/vnicd/tap"
	"github.com/opavnic/opavnic/vnicd/taptest"
)

const fabricYAML = `
fm: {name: fm0, lid: 1, listen: "10.0.0.9:4793", control_socket: /nonexistent/x.sock}
nodes:
  - {name: host-a, lid: 0x10}
vesws:
  - {id: 1, name: red, pkey: 0x8001, mcast_dlid: 0xF00001, members: [{node: host-a, vport: 0}]}
`

// scrape builds an engine with one VNIC and an FM on in-memory fakes,
// registers every collector, and returns the parsed exposition and its text.
func scrape(t *testing.T) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	n := hfitest.NewNetwork()
	h := hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.1:4793")), hfi.Config{LID: 0x10, VerifyICRC: true})
	e := enginetest.StartEngine(t, h, func(s engine.DeviceSpec) (tap.Netdev, error) {
		port, _ := taptest.Pair(taptest.Options{Names: [2]string{"vnic0", "host0"}})
		return port, nil
	})
	cfg := engine.PortConfig{
		VESW: engine.VESWConfig{VESWID: 1, PKey: 0x8001, McastDLID: 0xF00001, EthMTU: 1500},
		Port: engine.VPortConfig{EncapSLID: 0x10, BaseMAC: encap.MACForLID(0x10, 1), ConfigState: engine.StateForwarding},
	}
	if err := e.SetPort(0, cfg, engine.NetdevConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	e.Port(0).Counters.RxPackets.Add(7)
	e.Port(0).Counters.RxRunt.Add(2)
	h.Counters.RcvBadICRC.Add(3)
	h.Counters.XmitData.Add(11)

	fcfg, err := fm.ParseConfig([]byte(fabricYAML))
	if err != nil {
		t.Fatal(err)
	}
	f := fm.New(hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.9:4793")), hfi.Config{LID: 1}), fcfg, zap.NewNop())

	reg := metrics.NewRegistry()
	hc := hfimetrics.New(h, "host-a")
	reg.MustRegister(vnicd.NewVNICCollector(e), hc, fmd.NewCollector(f), hfimetrics.New(f.HFI(), "fm0"))
	srv := httptest.NewServer(metrics.Handler(reg, zap.NewNop()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return mfs, body
}

// find returns the value of the metric of family name whose labels include
// want, and whether there is one.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

func TestExposition(t *testing.T) {
	mfs, _ := scrape(t)
	build := buildinfo.Read()
	vnic := map[string]string{"vport": "0", "ifname": "vnic0", "vesw": "1"}
	fmNode := map[string]string{"node": "fm0"}
	for _, tc := range []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		want   float64
	}{
		{"opavnic_vnic_rx_packets_total", dto.MetricType_COUNTER, vnic, 7},
		{"opavnic_vnic_rx_runt_total", dto.MetricType_COUNTER, vnic, 2},
		{"opavnic_vnic_rx_length_errors_total", dto.MetricType_COUNTER, vnic, 2},
		{"opavnic_vnic_rx_errors_total", dto.MetricType_COUNTER, vnic, 2},
		{"opavnic_vnic_tx_1519_max_total", dto.MetricType_COUNTER, vnic, 0},
		{"opavnic_vnic_rx_bad_pkey_total", dto.MetricType_COUNTER, vnic, 0},
		{"opavnic_vnic_oper_state", dto.MetricType_GAUGE, merge(vnic, "state", "FORWARDING"), 1},
		{"opavnic_vnic_oper_state", dto.MetricType_GAUGE, merge(vnic, "state", "DROP_ALL"), 0},
		{"opavnic_vnic_eth_mtu_bytes", dto.MetricType_GAUGE, vnic, 1500},
		{"opavnic_vnic_info", dto.MetricType_GAUGE, merge(vnic, "pkey", "0x8001"), 1},
		{"opavnic_hfi_rcv_drops_total", dto.MetricType_COUNTER, map[string]string{"node": "host-a", "reason": "bad_icrc"}, 3},
		{"opavnic_hfi_rcv_drops_total", dto.MetricType_COUNTER, map[string]string{"node": "host-a", "reason": "malformed"}, 0},
		{"opavnic_hfi_xmit_drops_total", dto.MetricType_COUNTER, map[string]string{"node": "host-a", "reason": "no_route"}, 0},
		{"opavnic_hfi_port_xmit_data_bytes_total", dto.MetricType_COUNTER, map[string]string{"node": "host-a"}, 88},
		{"opavnic_hfi_port_rcv_packets_total", dto.MetricType_COUNTER, map[string]string{"node": "host-a"}, 0},
		{"opavnic_hfi_lid", dto.MetricType_GAUGE, map[string]string{"node": "host-a"}, 0x10},
		{"opavnic_hfi_lid", dto.MetricType_GAUGE, fmNode, 1},
		{"opavnic_hfi_port_state", dto.MetricType_GAUGE, map[string]string{"node": "host-a", "state": "Active"}, 1},
		{"opafm_nodes", dto.MetricType_GAUGE, map[string]string{"state": "active"}, 0},
		{"opafm_nodes", dto.MetricType_GAUGE, map[string]string{"state": "joining"}, 0},
		{"opafm_drops_total", dto.MetricType_COUNTER, map[string]string{"reason": "nodes_full"}, 0},
		{"opafm_info", dto.MetricType_GAUGE, map[string]string{"name": "fm0", "lid": "0x1"}, 1},
		{"opafm_vesw_members", dto.MetricType_GAUGE, map[string]string{"vesw": "1", "name": "red"}, 1},
		{"opafm_vesw_members_configured", dto.MetricType_GAUGE, map[string]string{"vesw": "1", "name": "red"}, 0},
		{"opavnic_build_info", dto.MetricType_GAUGE, map[string]string{"version": build.Version, "revision": build.Revision,
			"modified": strconv.FormatBool(build.Modified), "goversion": runtime.Version()}, 1},
	} {
		mf := mfs[tc.name]
		if mf == nil {
			t.Errorf("%s: missing", tc.name)
			continue
		}
		if mf.GetType() != tc.typ || mf.GetHelp() == "" {
			t.Errorf("%s: type %v help %q; want %v with help", tc.name, mf.GetType(), mf.GetHelp(), tc.typ)
		}
		if got, ok := find(mfs, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	// Every kernel counter name is a counter family with the VNIC labels.
	var zero engine.PortCounters
	for _, c := range zero.Snapshot() {
		if _, ok := find(mfs, "opavnic_vnic_"+c.Name+"_total", vnic); !ok {
			t.Errorf("no opavnic_vnic_%s_total for vport 0", c.Name)
		}
	}
	for name, mf := range mfs {
		if strings.HasSuffix(name, "_total") != (mf.GetType() == dto.MetricType_COUNTER) && strings.HasPrefix(name, "opa") {
			t.Errorf("%s: type %v; counters and only counters end in _total", name, mf.GetType())
		}
	}
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// TestPromtool lints the exposition with promtool when it is installed.
func TestPromtool(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus); the exposition is still parsed by TestExposition")
	}
	_, body := scrape(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestListen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := metrics.Listen(ctx, "127.0.0.1:0", metrics.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("no runtime metrics:\n%s", body)
	}
	if _, err := metrics.Listen(ctx, addr.String(), metrics.NewRegistry(), nil); err == nil {
		t.Fatal("a second listener on the same address did not fail")
	}
}

// A client that keeps its connection open after a scrape and sends nothing
// more is disconnected by the server after the idle timeout. Without one,
// every such connection kept an fd and two goroutines of the daemon for as
// long as the client lived, and a client that opened new connections without
// closing the old (the soak review held 200 at once) made them grow without
// bound. The wait for the close is bounded far above the lowered timeout, so a
// slow machine only waits longer; the test fails only if no close comes.
func TestIdleConnectionClosed(t *testing.T) {
	defer metrics.SetIdleTimeout(20 * time.Millisecond)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := metrics.Listen(ctx, "127.0.0.1:0", metrics.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("GET /metrics: status %d, close %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if b, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the server kept an idle connection open (read %q: %v; want EOF)", b, err)
	}
}

// An FM named like the node it runs beside still registers (its HFI
// metrics are left out), so vnicd --fabric-manager never fails on metrics.
func TestSameNameFM(t *testing.T) {
	n := hfitest.NewNetwork()
	fcfg, err := fm.ParseConfig([]byte(fabricYAML))
	if err != nil {
		t.Fatal(err)
	}
	f := fm.New(hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.9:4793")), hfi.Config{LID: 1}), fcfg, zap.NewNop())
	reg := metrics.NewRegistry()
	reg.MustRegister(hfimetrics.New(hfi.New(n.Listen(netip.MustParseAddrPort("10.0.0.1:4793")), hfi.Config{LID: 0x10}), "fm0"))
	if err := fmd.RegisterMetrics(reg, f, zap.NewNop()); err != nil {
		t.Fatalf("registering an FM named like the node: %v", err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// opafm_drops_total's HELP names each of its reasons in parentheses, so
// that an operator reading the exposition learns what every series counts
// (bad_mad was counted, and in the README, but not in the HELP).
func TestFMDropReasonsInHelp(t *testing.T) {
	mfs, _ := scrape(t)
	mf := mfs["opafm_drops_total"]
	if mf == nil {
		t.Fatal("opafm_drops_total: missing")
	}
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if l.GetName() == "reason" && !strings.Contains(mf.GetHelp(), "("+l.GetValue()+")") {
				t.Errorf("opafm_drops_total{reason=%q}: the HELP does not say what it counts: %q", l.GetValue(), mf.GetHelp())
			}
		}
	}
}

// rx_bad_veswid is counted on one port only, the lowest vport, as the
// kernel counted rx_nohandler on its first vport: a packet for a vesw no
// port is on belongs to no port. The HELP says which port rises, so that an
// operator does not look for the fault on that port's vesw.
func TestBadVESWIDHelpNamesThePort(t *testing.T) {
	mfs, _ := scrape(t)
	mf := mfs["opavnic_vnic_rx_bad_veswid_total"]
	if mf == nil {
		t.Fatal("opavnic_vnic_rx_bad_veswid_total: missing")
	}
	if !strings.Contains(mf.GetHelp(), "lowest vport") {
		t.Errorf("opavnic_vnic_rx_bad_veswid_total's HELP does not say which port counts: %q", mf.GetHelp())
	}
}
