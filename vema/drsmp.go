package vema

import (
	"fmt"

	"github.com/opavnic/opavnic/encap"
)

// Directed-route SMP forwarding: the per-node hop rules of IB spec 14.2.2
// (C14-6, C14-9, C14-13) as linux drivers/infiniband/core/smi.c applies them
// to OPA SMPs (opa_smi_handle_dr_smp_recv, opa_smi_handle_dr_smp_send,
// opa_smi_check_forward_dr_smp, opa_smi_get_fwd_port); docs/management.md
// §8.1. An SMP on its way out (D = 0) walks
// InitialPath with HopPtr counting up from 1 to HopCnt and records its
// ingress ports in ReturnPath; the reply (D = 1) walks ReturnPath back with
// HopPtr counting down to 0. Every node of the path calls DRRecv on what it
// receives from a link and DRSend on what it originates (a request, the start
// of the DR part of an LR-DR SMP, or its SMA's reply); both move HopPtr and
// fill ReturnPath the way the rules say and return what to do next.

// DRNode is what the hop rules need to know about the node running them.
type DRNode struct {
	// Switch is set on a switch: only switches pass DR SMPs on, and only
	// switches start or end the LID-routed part of a mixed SMP.
	Switch bool
	// NumPorts is NodeInfo.NumPorts: the highest port a DR path may name.
	NumPorts uint8
}

// DRAction is what a node does with a directed-route SMP after DRRecv or
// DRSend.
type DRAction uint8

const (
	// DRDrop discards the SMP silently; the error says which rule failed.
	DRDrop DRAction = iota
	// DRDeliver hands the SMP to this node: an outbound one to its SMA, a
	// returning one to its SM (the requester).
	DRDeliver
	// DRForward sends the SMP out of the returned port.
	DRForward
	// DRLIDRoute sends the SMP LID-routed: an outbound one to DR.DRDLID at
	// the end of its DR part, a returning one to DR.DRSLID (the reply of an
	// LR-DR request, sent on by the switch that started its DR part). Only a
	// switch gets it.
	DRLIDRoute
)

// String names the action.
func (a DRAction) String() string {
	switch a {
	case DRDrop:
		return "drop"
	case DRDeliver:
		return "deliver"
	case DRForward:
		return "forward"
	case DRLIDRoute:
		return "LID-route"
	}
	return fmt.Sprintf("DRAction(%d)", uint8(a))
}

// DRDropReason is the error DRRecv and DRSend return with DRDrop: the rule
// the SMP broke. Compare with errors.Is or ==.
type DRDropReason uint8

const (
	// DRDropNotDR: the SMP is not of class 0x81.
	DRDropNotDR DRDropReason = iota + 1
	// DRDropHopCount: HopCnt >= 64 (C14-6).
	DRDropHopCount
	// DRDropHopNotAdvanced: an outbound SMP arrived with HopPtr 0 and
	// HopCnt > 0; its sender did not advance HopPtr (C14-9:1).
	DRDropHopNotAdvanced
	// DRDropNotSwitch: a node that is not a switch was asked to pass an SMP
	// on, in either direction (C14-9:2, C14-13:2).
	DRDropNotSwitch
	// DRDropNotPermissive: a node that is not a switch is at the end of the
	// DR part but the SMP goes on LID-routed: DRDLID outbound (C14-9:3),
	// DRSLID returning (C14-13:3).
	DRDropNotPermissive
	// DRDropHopPointer: HopPtr is outside the range the direction allows
	// (C14-9:5, C14-13:5).
	DRDropHopPointer
	// DRDropPort: the path names port 0 or a port above NumPorts as the next
	// egress, or the SMP arrived on such a port. The kernel checks only
	// port <= NumPorts; port 0 is refused here because it is no link.
	DRDropPort
)

// Error describes the rule.
func (r DRDropReason) Error() string {
	switch r {
	case DRDropNotDR:
		return "vema: DR drop: not a directed-route SMP"
	case DRDropHopCount:
		return "vema: DR drop: hop count 64 or more (C14-6)"
	case DRDropHopNotAdvanced:
		return "vema: DR drop: outbound SMP received with hop pointer 0 (C14-9:1)"
	case DRDropNotSwitch:
		return "vema: DR drop: intermediate hop at a node that is not a switch (C14-9:2, C14-13:2)"
	case DRDropNotPermissive:
		return "vema: DR drop: LID-routed part at a node that is not a switch (C14-9:3, C14-13:3)"
	case DRDropHopPointer:
		return "vema: DR drop: hop pointer out of range (C14-9:5, C14-13:5)"
	case DRDropPort:
		return "vema: DR drop: port 0 or above NumPorts"
	}
	return fmt.Sprintf("vema: DR drop: reason %d", uint8(r))
}

// validPort reports whether p names a link of n.
func (n DRNode) validPort(p uint8) bool { return p >= 1 && p <= n.NumPorts }

// DRRecv applies the receive rules to a directed-route SMP that arrived on
// link port inPort of node n, and for an SMP that goes on, the send rules
// too, so the caller only has to act:
//
//   - DRForward, port: send s out of port; n is an intermediate switch.
//     Outbound: ReturnPath[HopPtr] = inPort, then HopPtr+1 and port =
//     InitialPath[HopPtr]. Returning: HopPtr-1 and port = ReturnPath[HopPtr].
//   - DRDeliver: outbound, s reached the end of its path (HopPtr ==
//     HopCnt, DRDLID permissive): ReturnPath[HopCnt] = inPort when HopCnt >
//     0 and HopPtr = HopCnt+1, as the SMA expects it. An outbound SMP that
//     arrives at HopPtr == HopCnt+1 (the LID-routed tail of a DR-LR SMP) is
//     delivered as it is. Returning, s reached its requester: HopPtr 1 -> 0
//     with DRSLID permissive, or HopPtr already 0.
//   - DRLIDRoute (switches only): outbound at the end of the DR part with
//     DRDLID not permissive (ReturnPath[HopCnt] = inPort, HopPtr = HopCnt+1);
//     returning at HopPtr 1 with DRSLID not permissive (HopPtr = 0). The
//     caller routes s by its LFT to DR.DRDLID or DR.DRSLID.
//   - DRDrop, with a DRDropReason: discard s silently. s is unchanged.
//
// A returning SMP with HopPtr == HopCnt+1 has not been through its
// responder's DRSend and is dropped (DRDropHopPointer); the kernel's receive
// side instead decrements it and checks inPort against ReturnPath, a case
// that arises only for an SMP looped back inside one host.
//
// The caller also keeps the rule the hop rules cannot see: a DR SMP leaves
// only through a port whose physical state is LinkUp (any logical state).
func (s *SMP) DRRecv(n DRNode, inPort uint8) (DRAction, uint8, error) {
	if err := s.drCheck(); err != nil {
		return DRDrop, 0, err
	}
	if !n.validPort(inPort) {
		return DRDrop, 0, DRDropPort
	}
	hp, hc := s.HopPtr, s.HopCnt
	if !s.Returning() {
		switch {
		case hc > 0 && hp == 0: // C14-9:1
			return DRDrop, 0, DRDropHopNotAdvanced
		case hp < hc: // C14-9:2, intermediate hop
			if !n.Switch {
				return DRDrop, 0, DRDropNotSwitch
			}
			next := s.DR.InitialPath[hp+1]
			if !n.validPort(next) {
				return DRDrop, 0, DRDropPort
			}
			s.DR.ReturnPath[hp] = inPort
			s.HopPtr++
			return DRForward, next, nil
		case hp == hc: // C14-9:3, end of the DR part
			permissive := s.DR.DRDLID.IsPermissive()
			if !n.Switch && !permissive {
				return DRDrop, 0, DRDropNotPermissive
			}
			if hc > 0 {
				s.DR.ReturnPath[hp] = inPort
			}
			s.HopPtr++
			if permissive {
				return DRDeliver, 0, nil
			}
			return DRLIDRoute, 0, nil
		case hp == hc+1: // C14-9:4
			return DRDeliver, 0, nil
		}
		return DRDrop, 0, DRDropHopPointer // C14-9:5
	}
	switch {
	case hp >= 2 && hp <= hc: // C14-13:2, intermediate hop
		if !n.Switch {
			return DRDrop, 0, DRDropNotSwitch
		}
		next := s.DR.ReturnPath[hp-1]
		if !n.validPort(next) {
			return DRDrop, 0, DRDropPort
		}
		s.HopPtr--
		return DRForward, next, nil
	case hp == 1: // C14-13:3, end of the DR part
		return s.drReturnEnd(n)
	case hp == 0: // C14-13:4
		return DRDeliver, 0, nil
	}
	return DRDrop, 0, DRDropHopPointer // C14-13:5
}

// DRSend applies the send rules to a directed-route SMP that node n
// originates: a request from its SM (HopPtr 0), the DR part of an LR-DR SMP
// that reached the switch by LID (HopPtr 0), or the reply its SMA built from
// a delivered request (Reply: D set, HopPtr still HopCnt+1). The results
// are those of DRRecv:
//
//   - DRForward, port: outbound HopPtr 0 -> 1, port = InitialPath[1]
//     (C14-9:1); returning HopPtr HopCnt+1 -> HopCnt, port =
//     ReturnPath[HopCnt], the port the request came in on (C14-13:1).
//   - DRDeliver: the SMP is for this node itself and never touches a link:
//     a 0-hop request (HopPtr 0 -> 1, for its own SMA) or the reply to one
//     (HopPtr 1 -> 0, for its own SM).
//   - DRLIDRoute (switches only): a 0-hop SMP whose DR part ends here.
//   - DRDrop, with a DRDropReason; s is unchanged.
//
// Called on an SMP in the middle of its path, DRSend forwards it as DRRecv
// would, without recording an ingress port.
func (s *SMP) DRSend(n DRNode) (DRAction, uint8, error) {
	if err := s.drCheck(); err != nil {
		return DRDrop, 0, err
	}
	hp, hc := s.HopPtr, s.HopCnt
	if !s.Returning() {
		switch {
		case hp < hc: // C14-9:1 (hp 0, origin) and C14-9:2 (intermediate)
			if hp > 0 && !n.Switch {
				return DRDrop, 0, DRDropNotSwitch
			}
			next := s.DR.InitialPath[hp+1]
			if !n.validPort(next) {
				return DRDrop, 0, DRDropPort
			}
			s.HopPtr++
			return DRForward, next, nil
		case hp == hc: // C14-9:3: a 0-hop SMP, or the end of the DR part
			permissive := s.DR.DRDLID.IsPermissive()
			if !n.Switch && !permissive {
				return DRDrop, 0, DRDropNotPermissive
			}
			s.HopPtr++
			if permissive {
				return DRDeliver, 0, nil
			}
			return DRLIDRoute, 0, nil
		case hp == hc+1: // C14-9:4
			return DRDeliver, 0, nil
		}
		return DRDrop, 0, DRDropHopPointer // C14-9:5
	}
	switch {
	case hc > 0 && hp == hc+1: // C14-13:1, the responder's reply
		next := s.DR.ReturnPath[hc]
		if !n.validPort(next) {
			return DRDrop, 0, DRDropPort
		}
		s.HopPtr--
		return DRForward, next, nil
	case hp >= 2 && hp <= hc: // C14-13:2
		if !n.Switch {
			return DRDrop, 0, DRDropNotSwitch
		}
		next := s.DR.ReturnPath[hp-1]
		if !n.validPort(next) {
			return DRDrop, 0, DRDropPort
		}
		s.HopPtr--
		return DRForward, next, nil
	case hp == 1: // C14-13:3
		return s.drReturnEnd(n)
	case hp == 0: // C14-13:4
		return DRDeliver, 0, nil
	}
	return DRDrop, 0, DRDropHopPointer // C14-13:5
}

// drReturnEnd is C14-13:3, a returning SMP at HopPtr 1 on either side: the
// DR part is over. With DRSLID permissive this node is the requester;
// otherwise a switch sends the reply on LID-routed to DRSLID.
func (s *SMP) drReturnEnd(n DRNode) (DRAction, uint8, error) {
	if s.DR.DRSLID.IsPermissive() {
		s.HopPtr = 0
		return DRDeliver, 0, nil
	}
	if !n.Switch {
		return DRDrop, 0, DRDropNotPermissive
	}
	s.HopPtr = 0
	return DRLIDRoute, 0, nil
}

// drCheck is what both directions check first.
func (s *SMP) drCheck() error {
	if !s.IsDirectedRoute() {
		return DRDropNotDR
	}
	if s.HopCnt >= SMPMaxPathHops { // C14-6
		return DRDropHopCount
	}
	return nil
}

// DRFwdPort returns the port a forwarded SMP leaves by before HopPtr moves
// (opa_smi_get_fwd_port): InitialPath[HopPtr+1] outbound, ReturnPath[HopPtr-1]
// returning, 0 when that index is outside the paths.
func (s *SMP) DRFwdPort() uint8 {
	i := int(s.HopPtr) + 1
	path := &s.DR.InitialPath
	if s.Returning() {
		i, path = int(s.HopPtr)-1, &s.DR.ReturnPath
	}
	if i < 0 || i >= SMPMaxPathHops {
		return 0
	}
	return path[i]
}

// SetDirectedRoute makes s a directed-route request along ports, the egress
// port of each hop from the sender's own (ports[0] = InitialPath[1]), the way
// opa-fm's DRStlMad_Init lays a path out: class 0x81, HopCnt = len(ports),
// HopPtr 0, D clear, InitialPath[0] and ReturnPath zero, DRSLID and DRDLID
// permissive. No ports makes a 0-hop SMP for the sender's own node. ErrRange
// for more than 63 ports; s is then unchanged.
func (s *SMP) SetDirectedRoute(ports ...uint8) error {
	if len(ports) >= SMPMaxPathHops {
		return fmt.Errorf("%w: directed route of %d hops, at most %d", ErrRange, len(ports), SMPMaxPathHops-1)
	}
	s.MgmtClass = ClassSubnDirectedRoute
	s.Status &^= StatusDirection
	s.HopPtr, s.HopCnt = 0, uint8(len(ports))
	s.DR = DRRoute{DRSLID: encap.LIDPermissive, DRDLID: encap.LIDPermissive}
	copy(s.DR.InitialPath[1:], ports)
	return nil
}

// Reply returns the response an SMA sends to request s, as hfi1's reply()
// builds it: the same header and route with Method GetResp, Status = status
// plus the D bit for a directed-route SMP, and Data = data (not copied).
// HopPtr is left where delivery put it (HopCnt+1); DRSend moves it on.
func (s *SMP) Reply(status Status, data []byte) SMP {
	r := SMP{SMPHeader: s.SMPHeader, DR: s.DR, Data: data}
	r.Method = MethodGetResp
	r.Status = status
	if r.IsDirectedRoute() {
		r.Status |= StatusDirection
	}
	return r
}
