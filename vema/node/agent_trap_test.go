package node

import (
	"testing"
	"time"

	"github.com/opavnic/opavnic/vema"
)

// Regression tests from the review of the VEMA agent (agent.go), each
// against the kernel source named in its comment.

// opa_vnic_query_ucast_macs and opa_vnic_query_mcast_macs (vema_iface.c) end
// with macs->num_macs_in_msg = cpu_to_be16(count), in every stored kernel
// version: a reply that carries no MAC says 0, not the number asked for
// (docs/linux-compat.md §4.7: "sets num_macs_in_msg = count").
func TestAgentIfaceMACsEmptyReplyCountsZero(t *testing.T) {
	f := newFakePorts()
	a := NewAgent(f, nil)
	a.Handle(vemaReq(0x02, 0x0011, 2, setInfoData()))
	base := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}

	// Only the EM's MAC on the netdev: skipped, the list is empty.
	f.uc[2] = IfaceMACList{DevAddrs: [][6]byte{base}}
	req := vemaReq(0x01, 0x0013, 2, nil) // start 0, num 0 (= 333)
	check(t, a, "ucast, EM MAC only", req, vemaResp(req, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}))

	// A start index past the end of a non-empty list: nothing filled.
	req = vemaReq(0x01, 0x0014, 2, []byte{0, 5, 0, 7}) // start 5, num 7
	check(t, a, "mcast, start past the end", req, vemaResp(req, 0, []byte{0, 5, 0, 0, 0, 1, 0, 3}))
}

// The kernel's trap rate limit lives in struct opa_vnic_adapter
// (opa_vnic_internal.h: trap_timeout, trap_count), one per vport, and
// opa_vnic_vema_send_trap reads and updates adapter->trap_timeout and
// adapter->trap_count: a burst of traps from one vport does not silence
// another vport of the same port.
func TestAgentTrapRateLimitIsPerVPort(t *testing.T) {
	f := newFakePorts()
	now := time.Unix(1000, 0)
	a := NewAgent(f, func() time.Time { return now })
	a.Handle(vemaReq(0x02, 0x0011, 1, setInfoData()))
	a.Handle(vemaReq(0x02, 0x0011, 2, setInfoData()))
	cpi := make([]byte, 80)
	put(cpi, 60, 0x00, 0x00, 0x00, 0x01) // trap_lid 1
	a.Handle(vemaReq(0x02, 0x0001, 0, cpi))

	for i := range TrapsInWindow {
		if _, _, _, ok := a.Trap(1, vema.TrapEthLinkStatusChange); !ok {
			t.Fatalf("vport 1 trap %d refused", i+1)
		}
	}
	if _, _, _, ok := a.Trap(1, vema.TrapEthLinkStatusChange); ok {
		t.Fatal("vport 1: 6th trap in the window sent")
	}
	// vport 2 has sent nothing: its window is its own.
	m, _, _, ok := a.Trap(2, vema.TrapIfaceUcastMACChange)
	if !ok {
		t.Fatal("vport 2's first trap refused because vport 1 used up its window")
	}
	if m[15] != 6 { // the TID counter is per port (port->tid) and shared
		t.Fatalf("vport 2 trap TID %d, want 6", m[15])
	}
}
