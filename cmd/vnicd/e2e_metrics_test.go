package main

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// scrapeIn fetches http://addr/metrics from inside ns with curl and returns
// the parsed families.
func scrapeIn(t *testing.T, ns *nstest.NS, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ns.Exec(ctx, "curl", "-sS", "--fail", "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return mfs
}

// metricValue is the value of the sample of family name whose labels
// include want; -1 when there is none.
func metricValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	return -1
}

// TestE2EMetrics runs vnicd with --metrics-listen in a namespace, pings
// across, and checks from inside the namespace that the counters rose.
func TestE2EMetrics(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "curl")
	a, b := nstest.NewNS(t, "ma"), nstest.NewNS(t, "mb")
	nstest.Veth(t, a, b, pfx("10.203.0.1/24"), pfx("10.203.0.2/24"), 1500)
	host := func(name string, lid, peer int, self, other string, n int) e2etest.Host {
		return e2etest.Host{
			Name: name, LID: lid, Listen: self + ":4793",
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidC}},
			VNICs: []e2etest.VNIC{{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0",
				Addrs: []string{"192.168.111." + string(rune('0'+n)) + "/24"}}},
		}
	}
	// Host a with metrics on the namespace's loopback (a fixed port is free
	// there: the namespace is the test's own).
	ha := host("host-a", lidA, lidC, "10.203.0.1", "10.203.0.2", 1)
	ha.BusyPoll = "10ms"
	if _, err := a.Exec(context.Background(), "ip", "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:9479"
	e2etest.Start(t, a, ha, "--metrics-listen", addr)
	e2etest.Start(t, b, host("host-b", lidC, lidA, "10.203.0.2", "10.203.0.1", 2))

	vnic := map[string]string{"vport": "0", "ifname": "vnic0", "vesw": "1"}
	node := map[string]string{"node": "host-a"}
	peerC := map[string]string{"node": "host-a", "lid": encap.LIDFrom16B(lidC).String()}
	before := scrapeIn(t, a, addr)
	if v := metricValue(before, "opavnic_vnic_oper_state", map[string]string{"vport": "0", "state": "FORWARDING"}); v != 1 {
		t.Errorf("oper_state FORWARDING = %v, want 1", v)
	}
	if v := metricValue(before, "opavnic_hfi_lid", node); v != lidA {
		t.Errorf("opavnic_hfi_lid = %v, want %d", v, lidA)
	}
	e2etest.Ping(t, a, "192.168.111.2")
	after := scrapeIn(t, a, addr)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"opavnic_vnic_rx_packets_total", vnic, 3},
		{"opavnic_vnic_tx_packets_total", vnic, 3},
		{"opavnic_vnic_rx_unicast_total", vnic, 3},
		{"opavnic_vnic_tx_bytes_total", vnic, 3 * 98},
		{"opavnic_hfi_port_xmit_packets_total", node, 3},
		{"opavnic_hfi_port_rcv_packets_total", node, 3},
		{"opavnic_hfi_port_rcv_data_bytes_total", node, 3 * 88},
		{"opavnic_hfi_peer_rx_packets_total", peerC, 3},
		{"opavnic_hfi_peer_rx_bytes_total", peerC, 3 * 88},
		{"opavnic_hfi_peer_tx_packets_total", peerC, 3},
		{"opavnic_hfi_peer_tx_bytes_total", peerC, 3 * 88},
	} {
		b, a := metricValue(before, tc.name, tc.labels), metricValue(after, tc.name, tc.labels)
		if b < 0 || a-b < tc.min {
			t.Errorf("%s%v: %v -> %v; want a rise of at least %v", tc.name, tc.labels, b, a, tc.min)
		}
	}
	if v, now := metricValue(after, "opavnic_hfi_peer_last_rx_timestamp_seconds", peerC), float64(time.Now().UnixNano())/1e9; v < now-10 || v > now {
		t.Errorf("opavnic_hfi_peer_last_rx_timestamp_seconds%v = %v, want within the 10 s before %v", peerC, v, now)
	}
	if v := metricValue(after, "opavnic_hfi_rcv_drops_total", map[string]string{"node": "host-a", "reason": "bad_icrc"}); v != 0 {
		t.Errorf("bad_icrc drops = %v, want 0", v)
	}
	// Host a busy-polls for 10 ms after each frame (with two CPUs or more).
	window, polls := 0.01, metricValue(after, "opavnic_dataplane_busy_polls_idle_total", node)
	if runtime.NumCPU() < 2 {
		window = 0
	} else if polls <= 0 {
		t.Errorf("opavnic_dataplane_busy_polls_idle_total = %v after pings with a 10 ms window, want > 0", polls)
	}
	if v := metricValue(after, "opavnic_dataplane_busy_poll_seconds", node); v != window {
		t.Errorf("opavnic_dataplane_busy_poll_seconds = %v, want %v", v, window)
	}
}

// TestE2EMetricsFabricManager runs opafm with --metrics-listen beside two
// managed hosts and checks, from inside the FM's namespace, the fabric
// membership it exports.
func TestE2EMetricsFabricManager(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "curl")
	lab := newEmbeddedLab(t, "f")
	const addr = "127.0.0.1:9480"
	e2etest.StartFM(t, lab.a, lab.fabric, "--metrics-listen", addr)
	da := managedHost(t, lab.a, lab.aBlue, "host-a", 1, "", filepath.Join(lab.dir, "a.sock"), embeddedFM)
	db := managedHost(t, lab.b, lab.bBlue, "host-b", 2, "", filepath.Join(lab.dir, "b.sock"), embeddedFM)
	da.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)
	db.WaitVNICs(t, 2, "FORWARDING", 15*time.Second)

	var mfs map[string]*dto.MetricFamily
	waitfor.Poll(10*time.Second, func() bool {
		mfs = scrapeIn(t, lab.a, addr)
		return metricValue(mfs, "opafm_vesw_members_configured", map[string]string{"vesw": "2"}) == 2
	})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"opafm_nodes", map[string]string{"state": "active"}, 2},
		{"opafm_nodes", map[string]string{"state": "lost"}, 0},
		{"opafm_node_lid", map[string]string{"node": "host-a"}, 0x10},
		{"opafm_node_lid", map[string]string{"node": "host-b"}, 0xC000},
		{"opafm_node_active", map[string]string{"node": "host-b"}, 1},
		{"opafm_vesw_members", map[string]string{"vesw": "1", "name": "red"}, 2},
		{"opafm_vesw_members_configured", map[string]string{"vesw": "1"}, 2},
		{"opafm_vesw_members_configured", map[string]string{"vesw": "2"}, 2},
		{"opavnic_hfi_lid", map[string]string{"node": "fm"}, 1},
	} {
		if got := metricValue(mfs, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if v := metricValue(mfs, "opavnic_hfi_port_rcv_packets_total", map[string]string{"node": "fm"}); v <= 0 {
		t.Errorf("the FM's HFI received no packets: %v", v)
	}
}
