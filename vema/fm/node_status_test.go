package fm

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
)

// Node (the control socket's `path host-b`) names the active node: a host
// replaced by one with another GUID leaves the old node lost on its LID,
// and a lower LID must not make the name resolve to it; and a config node
// comes before an unlisted node whose NodeDescription is that name.
func TestNodeByNamePrefersActiveConfigNode(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, `
fm: {name: fm0, listen: "10.9.0.1:4793"}
lid_pool: {start: 0xC000, end: 0xC0FF}
nodes:
  - {name: host-a, guid: 0xA, lid: 0xC080}
  - {name: host-b}
`)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	for _, n := range []*node{
		{portGUID: 0xB1, name: "host-b", cfgName: "host-b", lid: 0xC000, ep: epB, state: NodeLost},
		{portGUID: 0xB2, name: "host-b", cfgName: "host-b", lid: 0xC001, ep: epC, state: NodeActive},
		{portGUID: 0xA, name: "host-a", cfgName: "host-a", lid: 0xC080, ep: epA, state: NodeActive},
		{portGUID: 0xA2, name: "host-a", lid: 0xC002, ep: silentEP(1), state: NodeActive}, // describes itself so
	} {
		f.putNode(n)
	}
	for name, want := range map[string]encap.LID{"host-b": 0xC001, "host-a": 0xC080} {
		n, ok := f.Node(name)
		if !ok || n.LID != want {
			t.Errorf("Node(%q) = %v on %v (found %v), want the active config node on %v", name, n.PortGUID, n.LID, ok, want)
		}
		if _, err := f.PathRecord(encap.LID(cfg.FM.LID), n.LID); err != nil {
			t.Errorf("path to %s: %v", name, err)
		}
	}
	if n, ok := f.Node("nobody"); ok {
		t.Errorf("Node(nobody) = %+v", n)
	}
}
