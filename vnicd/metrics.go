package vnicd

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opavnic/opavnic/hfi/hfimetrics"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// Prometheus metrics (docs/management.md §7). The collectors read the same atomic
// counters vnicctl shows, at scrape time: nothing is added to the per-packet
// path, and a scrape costs one Snapshot per port and one for the HFI.

// vnicLabels are the variable labels of every per-VNIC metric.
var vnicLabels = []string{"vport", "ifname", "vesw"}

// vnicCounterHelp explains the kernel counters whose names do not say enough.
var vnicCounterHelp = map[string]string{
	"rx_bytes":      "Bytes received on the VNIC (frame length plus the 4-byte FCS the fabric does not carry).",
	"tx_bytes":      "Bytes sent on the VNIC (frame length plus the 4-byte FCS the fabric does not carry).",
	"rx_bad_veswid": "VNIC packets for a vesw no port is on, counted on the lowest vport only (as the kernel's rx_nohandler) and in its rx_errors; vnic_no_port of opavnic_hfi_rcv_drops_total counts them too.",
	"rx_bad_pkey":   "VNIC packets whose PKEY is not the vesw's.",
	"tx_dlid_zero":  "Frames not sent because the DLID resolved to 0.",
	// The TAP's offloads (TAP.OffloadCounters), after the kernel's counters.
	"tx_tso_superframes": "TCP super-frames (TSO) read from the netdev and cut into eth_mtu frames.",
	"tx_tso_segments":    "Frames cut from TCP super-frames.",
	"tx_uso_superframes": "UDP super-frames (USO, from UDP_SEGMENT senders) read from the netdev and cut into eth_mtu frames.",
	"tx_uso_segments":    "Frames cut from UDP super-frames.",
	"rx_coalesced":       "Received frames written to the netdev as part of a coalesced TCP super-frame.",
	"offload_drops":      "Frames from the netdev that could not be finished (segmented or checksummed) and were dropped.",
}

// offloadCounterNames are the counters of TAP.OffloadCounters.
var offloadCounterNames = []string{"tx_tso_superframes", "tx_tso_segments", "tx_uso_superframes", "tx_uso_segments", "rx_coalesced", "offload_drops"}

// VNICCollector exports every VNIC port's kernel counters (one counter
// family per ethtool name, opavnic_vnic_<name>_total), its oper state, link
// state and identity.
type VNICCollector struct {
	e        *engine.Engine
	counters map[string]*prometheus.Desc
	oper     *prometheus.Desc
	linkUp   *prometheus.Desc
	mtu      *prometheus.Desc
	info     *prometheus.Desc
}

var _ prometheus.Collector = (*VNICCollector)(nil)

// NewVNICCollector returns a collector for e's ports.
func NewVNICCollector(e *engine.Engine) *VNICCollector {
	c := &VNICCollector{e: e, counters: map[string]*prometheus.Desc{}}
	var zero engine.PortCounters
	names := slices.Clone(offloadCounterNames)
	for _, v := range zero.Snapshot() {
		names = append(names, v.Name)
	}
	for _, name := range names {
		help := vnicCounterHelp[name]
		if help == "" {
			help = "The VNIC's " + name + " counter (Linux opa_vnic ethtool name)."
		}
		c.counters[name] = prometheus.NewDesc("opavnic_vnic_"+name+"_total", help, vnicLabels, nil)
	}
	c.oper = prometheus.NewDesc("opavnic_vnic_oper_state",
		"The VNIC's operational state: 1 for the current state (FORWARDING or DROP_ALL), 0 for the other.",
		append(append([]string(nil), vnicLabels...), "state"), nil)
	c.linkUp = prometheus.NewDesc("opavnic_vnic_link_up", "1 when the VNIC's netdev is administratively up.", vnicLabels, nil)
	c.mtu = prometheus.NewDesc("opavnic_vnic_eth_mtu_bytes", "The vesw's Ethernet MTU.", vnicLabels, nil)
	c.info = prometheus.NewDesc("opavnic_vnic_info", "Identity of a VNIC port; always 1.",
		append(append([]string(nil), vnicLabels...), "mac", "pkey", "netns"), nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *VNICCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.counters {
		ch <- d
	}
	ch <- c.oper
	ch <- c.linkUp
	ch <- c.mtu
	ch <- c.info
}

// Collect implements prometheus.Collector.
func (c *VNICCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.e.Ports() {
		cfg := p.Config()
		lv := []string{strconv.Itoa(int(p.VPort())), p.Netdev().Name(), strconv.Itoa(int(cfg.VESW.VESWID))}
		for _, v := range p.AllCounters() {
			if d, ok := c.counters[v.Name]; ok {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v.Value), lv...)
			}
		}
		oper := p.OperState()
		for _, s := range []uint8{engine.StateForwarding, engine.StateDropAll} {
			ch <- prometheus.MustNewConstMetric(c.oper, prometheus.GaugeValue, b2f(oper == s), append(lv, stateName(s))...)
		}
		ch <- prometheus.MustNewConstMetric(c.linkUp, prometheus.GaugeValue, b2f(p.LinkUp()), lv...)
		ch <- prometheus.MustNewConstMetric(c.mtu, prometheus.GaugeValue, float64(cfg.VESW.EthMTU), lv...)
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1,
			append(lv, netMAC(cfg.Port.BaseMAC), cfg.VESW.PKey.String(), p.NetNS())...)
	}
}

// Collectors returns the daemon's metrics: its VNICs, and its HFI with the
// drops counted by the engine (vnic_bad_tail, vnic_no_port) and by the
// management agent (mgmt_untrusted, mgmt_bad, mgmt_dropped) as further
// reasons.
func (d *Daemon) Collectors() []prometheus.Collector {
	hc := hfimetrics.New(d.hfi, d.cfg.Node.Name)
	hc.ExtraDrops = func() map[string]uint64 {
		return map[string]uint64{
			"vnic_bad_tail":  d.engine.RxBadTail.Load(),
			"vnic_no_port":   d.engine.RxNoPort.Load(),
			"mgmt_untrusted": d.mgmt.Untrusted.Load(),
			"mgmt_bad":       d.mgmt.Bad.Load(),
			"mgmt_dropped":   d.mgmt.Dropped.Load(),
		}
	}
	return []prometheus.Collector{NewVNICCollector(d.engine), hc, newDataPlaneCollector(d.engine, d.cfg.Node.Name)}
}

// dataPlaneCollector exports the poll loop's busy polling: the window in
// effect and the polls in it that found nothing, what busy polling costs.
type dataPlaneCollector struct {
	e                        *engine.Engine
	window, polls            *prometheus.Desc
	queues, queueRx, queueTx *prometheus.Desc
	queueMisrouted           *prometheus.Desc
	queueKernelDrops         *prometheus.Desc
}

func newDataPlaneCollector(e *engine.Engine, node string) *dataPlaneCollector {
	cl := prometheus.Labels{"node": node}
	return &dataPlaneCollector{
		e: e,
		window: prometheus.NewDesc("opavnic_dataplane_busy_poll_seconds",
			"The poll loop's busy-poll window in effect (node.busy_poll; 0 when off or when it cannot run).", nil, cl),
		polls: prometheus.NewDesc("opavnic_dataplane_busy_polls_idle_total",
			"Polls of the busy-poll window that found nothing (each also yields the CPU once).", nil, cl),
		queues: prometheus.NewDesc("opavnic_dataplane_queues",
			"The data plane's queues: one poll loop each (node.queues; 0 without the poll loop).", nil, cl),
		queueRx: prometheus.NewDesc("opavnic_dataplane_queue_rx_packets_total",
			"Datagrams a data-plane queue read from its UDP socket.", []string{"queue"}, cl),
		queueTx: prometheus.NewDesc("opavnic_dataplane_queue_tx_frames_total",
			"Frames a data-plane queue read from its queue of the ports' TAPs.", []string{"queue"}, cl),
		queueMisrouted: prometheus.NewDesc("opavnic_dataplane_queue_rx_misrouted_total",
			"VNIC packets a data-plane queue read that belong to another queue (the underlay merged datagrams of several flows; such flows may be reordered).", []string{"queue"}, cl),
		queueKernelDrops: prometheus.NewDesc("opavnic_dataplane_queue_rx_kernel_drops_total",
			"Datagrams the kernel dropped at a data-plane queue's UDP socket before vnicd read them (receive buffer full, bad UDP checksum, or refused while the queue group formed).", []string{"queue"}, cl),
	}
}

// Describe implements prometheus.Collector.
func (c *dataPlaneCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.window
	ch <- c.polls
	ch <- c.queues
	ch <- c.queueRx
	ch <- c.queueTx
	ch <- c.queueMisrouted
	ch <- c.queueKernelDrops
}

// Collect implements prometheus.Collector.
func (c *dataPlaneCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.window, prometheus.GaugeValue, c.e.BusyPoll().Seconds())
	ch <- prometheus.MustNewConstMetric(c.polls, prometheus.CounterValue, float64(c.e.BusyPolls()))
	qs := c.e.QueueCounters()
	ch <- prometheus.MustNewConstMetric(c.queues, prometheus.GaugeValue, float64(len(qs)))
	for i, q := range qs {
		label := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.queueRx, prometheus.CounterValue, float64(q.RxPackets), label)
		ch <- prometheus.MustNewConstMetric(c.queueTx, prometheus.CounterValue, float64(q.TxFrames), label)
		ch <- prometheus.MustNewConstMetric(c.queueMisrouted, prometheus.CounterValue, float64(q.RxMisrouted), label)
		ch <- prometheus.MustNewConstMetric(c.queueKernelDrops, prometheus.CounterValue, float64(q.RxKernelDrops), label)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
