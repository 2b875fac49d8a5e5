package fmd

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema/fm"
)

func TestOnePerName(t *testing.T) {
	nodes := []fm.NodeStatus{
		{Name: "host-b", Config: "host-b", PortGUID: 1, LID: 0xC000, State: fm.NodeLost},
		{Name: "host-a", Config: "host-a", PortGUID: 2, LID: 0x10, State: fm.NodeActive},
		{Name: "host-b", Config: "host-b", PortGUID: 3, LID: 0xC001, State: fm.NodeActive},
		{Name: "host-b", PortGUID: 4, State: fm.NodeLost},
		{Name: "other", PortGUID: 5, LID: 0xC002, State: fm.NodeActive},
	}
	got := onePerName(nodes)
	want := map[string]encap.GUID{"host-b": 3, "host-a": 2, "other": 5}
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d: %+v", len(got), len(want), got)
	}
	for _, n := range got {
		if want[nodeLabel(n)] != n.PortGUID {
			t.Errorf("%s: port GUID %v, want %v", nodeLabel(n), n.PortGUID, want[nodeLabel(n)])
		}
	}
}
