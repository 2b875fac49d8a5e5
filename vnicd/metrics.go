package vnicd

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
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

// HFICollector exports one HFI's port counters, drops by reason, LID and
// state. node is a constant label, so that a process running two HFIs (vnicd
// --fabric-manager) exports both into one registry.
type HFICollector struct {
	h *hfi.HFI
	// extraDrops, if set, adds receive drops counted above the HFI (reason ->
	// value), such as the engine's and the management agent's.
	extraDrops func() map[string]uint64

	port      map[string]*prometheus.Desc
	drops     *prometheus.Desc
	xmitDrops *prometheus.Desc
	lid       *prometheus.Desc
	state     *prometheus.Desc
	peer      [4]*prometheus.Desc // rx packets, rx bytes, tx packets, tx bytes
	peerRx    *prometheus.Desc
}

var _ prometheus.Collector = (*HFICollector)(nil)

// NewHFICollector returns a collector for h, labelled node=node.
func NewHFICollector(h *hfi.HFI, node string) *HFICollector {
	cl := prometheus.Labels{"node": node}
	c := &HFICollector{h: h, port: map[string]*prometheus.Desc{}}
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
func (c *HFICollector) Describe(ch chan<- *prometheus.Desc) {
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
func (c *HFICollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.h.Counters.Snapshot() {
		if d, ok := c.port[v.Name]; ok {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v.Value*hfiPortCounters[v.Name].scale))
		} else if r, ok := hfiDropReasons[v.Name]; ok {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v.Value), r)
		} else if v.Name == "xmit_no_route" {
			ch <- prometheus.MustNewConstMetric(c.xmitDrops, prometheus.CounterValue, float64(v.Value), "no_route")
		}
	}
	if c.extraDrops != nil {
		for r, v := range c.extraDrops() {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v), r)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.lid, prometheus.GaugeValue, float64(c.h.LID()))
	cur := c.h.State()
	for _, s := range hfiStates {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, b2f(s == cur), s.String())
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
	hc := NewHFICollector(d.hfi, d.cfg.Node.Name)
	hc.extraDrops = func() map[string]uint64 {
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
