package fmd

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfimetrics"
	"github.com/opavnic/opavnic/vema/fm"
)

// Option changes how Serve runs the fabric manager.
type Option func(*options)

type options struct {
	reg prometheus.Registerer
}

// WithRegistry registers the FM's metrics (fabric membership, vesws and its
// HFI's counters) on reg once the FM is open.
func WithRegistry(reg prometheus.Registerer) Option {
	return func(o *options) { o.reg = reg }
}

// nodeStates are the states opafm_nodes always reports, 0 when empty.
var nodeStates = []string{fm.NodeJoining, fm.NodeActive, fm.NodeLost}

// Collector exports the FM's view of the fabric, read at scrape time.
type Collector struct {
	f                                        *fm.FM
	nodes, nodeLID, nodeUp, nodeInfo, fmInfo *prometheus.Desc
	veswMembers, veswConfigured, veswAdmin   *prometheus.Desc
	drops                                    *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns the fabric membership collector of f.
func NewCollector(f *fm.FM) *Collector {
	vl := []string{"vesw", "name"}
	return &Collector{
		f:        f,
		nodes:    prometheus.NewDesc("opafm_nodes", "Nodes the SM has seen, by state.", []string{"state"}, nil),
		nodeLID:  prometheus.NewDesc("opafm_node_lid", "The LID the SM gave a node (0 while it has none).", []string{"node"}, nil),
		nodeUp:   prometheus.NewDesc("opafm_node_active", "1 when the node is active in the fabric.", []string{"node"}, nil),
		nodeInfo: prometheus.NewDesc("opafm_node_info", "Identity of a node the SM has seen; always 1.", []string{"node", "config_name", "node_guid", "port_guid", "lid", "endpoint", "state"}, nil),
		fmInfo:   prometheus.NewDesc("opafm_info", "The fabric manager's identity; always 1.", []string{"name", "lid", "guid"}, nil),
		veswMembers: prometheus.NewDesc("opafm_vesw_members", "Configured member ports of a vesw.",
			vl, nil),
		veswConfigured: prometheus.NewDesc("opafm_vesw_members_configured", "Member ports of a vesw whose host's VEMA has applied the config.",
			vl, nil),
		veswAdmin: prometheus.NewDesc("opafm_vesw_admin_up", "1 when the vesw is administratively up.", vl, nil),
		drops: prometheus.NewDesc("opafm_drops_total",
			"What the FM dropped: at its bounds, MADs beyond its inbound queue (inbound_queue), announces of new nodes beyond MaxNodes (nodes_full) and requests beyond its outstanding limit (pending_full); and management packets it could not decode or does not take (bad_mad).",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.nodes, c.nodeLID, c.nodeUp, c.nodeInfo, c.fmInfo, c.veswMembers, c.veswConfigured, c.veswAdmin, c.drops} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	nodes := c.f.Nodes()
	count := map[string]int{}
	for _, n := range nodes {
		count[n.State]++
		ch <- prometheus.MustNewConstMetric(c.nodeInfo, prometheus.GaugeValue, 1,
			nodeLabel(n), n.Config, n.NodeGUID.String(), n.PortGUID.String(), n.LID.String(), n.Endpoint.String(), n.State)
	}
	for _, n := range onePerName(nodes) {
		ch <- prometheus.MustNewConstMetric(c.nodeLID, prometheus.GaugeValue, float64(n.LID), nodeLabel(n))
		ch <- prometheus.MustNewConstMetric(c.nodeUp, prometheus.GaugeValue, b2f(n.State == fm.NodeActive), nodeLabel(n))
	}
	for _, s := range nodeStates {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(count[s]), s)
		delete(count, s)
	}
	for s, n := range count {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(c.f.Dropped.Load()), "inbound_queue")
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(c.f.NodesRefused.Load()), "nodes_full")
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(c.f.RequestsDropped.Load()), "pending_full")
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(c.f.BadMADs.Load()), "bad_mad")
	cfg := c.f.Config()
	ch <- prometheus.MustNewConstMetric(c.fmInfo, prometheus.GaugeValue, 1,
		cfg.FM.Name, encap.LID(cfg.FM.LID).String(), encap.GUID(cfg.FM.GUID).String())
	for _, v := range c.f.VESWs() {
		lv := []string{strconv.Itoa(int(v.ID)), v.Name}
		configured := 0
		for _, m := range v.Members {
			if m.Configured {
				configured++
			}
		}
		ch <- prometheus.MustNewConstMetric(c.veswMembers, prometheus.GaugeValue, float64(len(v.Members)), lv...)
		ch <- prometheus.MustNewConstMetric(c.veswConfigured, prometheus.GaugeValue, float64(configured), lv...)
		ch <- prometheus.MustNewConstMetric(c.veswAdmin, prometheus.GaugeValue, b2f(v.AdminUp), lv...)
	}
}

// RegisterMetrics registers the FM's collectors on reg (Serve does, with
// WithRegistry). The FM's HFI
// metrics carry node=<FM name>; when a vnicd in the same process has that
// name too (vnicd --fabric-manager), they cannot be told apart, so the FM's
// are left out with a warning rather than stopping the FM.
func RegisterMetrics(reg prometheus.Registerer, f *fm.FM, log *zap.Logger) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(NewCollector(f)); err != nil {
		return err
	}
	if err := reg.Register(hfimetrics.New(f.HFI(), f.Config().FM.Name)); err != nil {
		log.Warn("the FM's HFI metrics are not exported: the node and the FM have the same name", zap.Error(err))
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// nodeLabel is a node's node label: its config name, else its description.
func nodeLabel(n fm.NodeStatus) string {
	if n.Config != "" {
		return n.Config
	}
	return n.Name
}

// onePerName keeps one node per node label, an active one if any: two
// hosts with one name (one of them lost, or not joined) would otherwise
// give opafm_node_lid and opafm_node_active two series with the same
// labels, which fails the whole scrape. opafm_node_info, labelled with the
// GUIDs, keeps every node.
func onePerName(nodes []fm.NodeStatus) []fm.NodeStatus {
	at := map[string]int{}
	var out []fm.NodeStatus
	for _, n := range nodes {
		i, seen := at[nodeLabel(n)]
		switch {
		case !seen:
			at[nodeLabel(n)] = len(out)
			out = append(out, n)
		case n.State == fm.NodeActive && out[i].State != fm.NodeActive:
			out[i] = n
		}
	}
	return out
}
