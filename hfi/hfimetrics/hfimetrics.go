// Package hfimetrics exports an HFI's counters as Prometheus metrics
// (docs/metrics.md): the OPA port counters, receive drops by the check that
// failed, the LID, the port state and per-peer traffic. The collector reads
// the HFI's atomic counters at scrape time, so nothing is added to the
// per-packet path. vnicd and opafm both register one per HFI.
package hfimetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
)

// hfiDropReasons maps hfi.Counters names of receive checks (docs/wire.md §7) to
// the reason label of opavnic_hfi_rcv_drops_total.
var hfiDropReasons = map[string]string{
	"rcv_malformed":  "malformed",
	"rcv_bad_icrc":   "bad_icrc",
	"rcv_bad_source": "bad_source",
	"rcv_bad_dlid":   "bad_dlid",
	"rcv_unknown_l4": "unknown_l4",
}

// hfiPortCounters maps OPA port counter names to metric names; data counters
// are converted from 8-byte flits to bytes.
var hfiPortCounters = map[string]struct {
	name, help string
	scale      uint64
}{
	"PortXmitData":     {"opavnic_hfi_port_xmit_data_bytes_total", "Bytes handed to the wire (OPA PortXmitData, counted in 8-byte flits, times 8).", 8},
	"PortRcvData":      {"opavnic_hfi_port_rcv_data_bytes_total", "Bytes of packets that passed the receive checks (OPA PortRcvData in flits, times 8).", 8},
	"PortXmitPkts":     {"opavnic_hfi_port_xmit_packets_total", "Packets handed to the wire (OPA PortXmitPkts).", 1},
	"PortRcvPkts":      {"opavnic_hfi_port_rcv_packets_total", "Packets that passed the receive checks (OPA PortRcvPkts).", 1},
	"PortRcvErrors":    {"opavnic_hfi_port_rcv_errors_total", "Packets that failed any receive check (OPA PortRcvErrors).", 1},
	"PortXmitDiscards": {"opavnic_hfi_port_xmit_discards_total", "Packets not sent: no route, or refused by the kernel (OPA PortXmitDiscards).", 1},
	"xmit_peer_errors": {"opavnic_hfi_peer_errors_total", "Errors the kernel reported for datagrams sent: ICMP port unreachable from a peer's host " +
		"where no vnicd listens, host or network unreachable (vnicctl fabric shows them by peer). Errors reported, not datagrams lost: hosts rate-limit their ICMP.", 1},
	"peer_error_floods": {"opavnic_hfi_peer_error_floods_total", "Times such errors came faster than 10000 a second (forged, most likely) and vnicd stopped taking them for 10 s, lest they starve its traffic.", 1},
}

var hfiStates = []hfi.PortState{hfi.StateDown, hfi.StateInit, hfi.StateArmed, hfi.StateActive}

// Collector exports one HFI's port counters, drops by reason, LID and
// state. node is a constant label, so that a process running two HFIs (vnicd
// --fabric-manager) exports both into one registry.
type Collector struct {
	h *hfi.HFI
	// ExtraDrops, if set before the first scrape, adds receive drops
	// counted above the HFI (reason -> value), such as a VNIC engine's and
	// a management agent's.
	ExtraDrops func() map[string]uint64

	port      map[string]*prometheus.Desc
	drops     *prometheus.Desc
	xmitDrops *prometheus.Desc
	lid       *prometheus.Desc
	state     *prometheus.Desc
	peer      [4]*prometheus.Desc // rx packets, rx bytes, tx packets, tx bytes
	peerRx    *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector for h, labelled node=node.
func New(h *hfi.HFI, node string) *Collector {
	cl := prometheus.Labels{"node": node}
	c := &Collector{h: h, port: map[string]*prometheus.Desc{}}
	for k, v := range hfiPortCounters {
		c.port[k] = prometheus.NewDesc(v.name, v.help, nil, cl)
	}
	c.drops = prometheus.NewDesc("opavnic_hfi_rcv_drops_total",
		"Received packets dropped, by the check that failed (docs/wire.md §7) or the layer above the HFI that refused them.",
		[]string{"reason"}, cl)
	c.xmitDrops = prometheus.NewDesc("opavnic_hfi_xmit_drops_total",
		"Packets not sent, by reason.", []string{"reason"}, cl)
	c.lid = prometheus.NewDesc("opavnic_hfi_lid", "The HFI port's LID (24-bit 16B form; 0 before the SM assigns one).", nil, cl)
	c.state = prometheus.NewDesc("opavnic_hfi_port_state", "The HFI port's state: 1 for the current state, 0 for the others.",
		[]string{"state"}, cl)
	for i, n := range [4][2]string{
		{"rx_packets", "16B packets received from the LID that passed the receive checks"},
		{"rx_bytes", "Bytes of the 16B packets received from the LID that passed the receive checks"},
		{"tx_packets", "16B packets sent to the LID (taken by the kernel; those it refused count in opavnic_hfi_port_xmit_discards_total); a multicast packet counts for each member"},
		{"tx_bytes", "Bytes of the 16B packets sent to the LID"},
	} {
		c.peer[i] = prometheus.NewDesc("opavnic_hfi_peer_"+n[0]+"_total", n[1]+", for each unicast LID of the directory but this port's.",
			[]string{"lid"}, cl)
	}
	c.peerRx = prometheus.NewDesc("opavnic_hfi_peer_last_rx_timestamp_seconds",
		"When the last packet from the LID passed the receive checks (unix time); absent while none has.", []string{"lid"}, cl)
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.port {
		ch <- d
	}
	ch <- c.drops
	ch <- c.xmitDrops
	ch <- c.lid
	ch <- c.state
	for _, d := range c.peer {
		ch <- d
	}
	ch <- c.peerRx
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.h.Counters.Snapshot() {
		if d, ok := c.port[v.Name]; ok {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v.Value*hfiPortCounters[v.Name].scale))
		} else if r, ok := hfiDropReasons[v.Name]; ok {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v.Value), r)
		} else if v.Name == "xmit_no_route" {
			ch <- prometheus.MustNewConstMetric(c.xmitDrops, prometheus.CounterValue, float64(v.Value), "no_route")
		}
	}
	if c.ExtraDrops != nil {
		for r, v := range c.ExtraDrops() {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v), r)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.lid, prometheus.GaugeValue, float64(c.h.LID()))
	cur := c.h.State()
	for _, s := range hfiStates {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, s.String())
	}
	self := c.h.LID()
	for lid := range c.h.Directory().Endpoints() {
		t, ok := c.h.PeerTraffic(lid)
		if !ok || lid == self {
			continue
		}
		l := encap.LIDFrom16B(lid).String()
		for i, v := range [4]uint64{t.RxPkts.Load(), t.RxBytes.Load(), t.TxPkts.Load(), t.TxBytes.Load()} {
			ch <- prometheus.MustNewConstMetric(c.peer[i], prometheus.CounterValue, float64(v), l)
		}
		if at, ok := t.LastRx(); ok {
			ch <- prometheus.MustNewConstMetric(c.peerRx, prometheus.GaugeValue, float64(at.UnixNano())/1e9, l)
		}
	}
}
