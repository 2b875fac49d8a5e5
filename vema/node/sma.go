package node

import (
	"encoding/binary"
	"sync"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// SMAPort is the node's view of its one fabric port as the SMA reports and
// sets it (docs/management.md §2; docs/linux-compat.md §9.7): LIDs in the 32-bit
// space, where 16B unicast LIDs have the same value.
type SMAPort struct {
	LID          encap.LID
	SMLID        encap.LID
	SubnetPrefix uint64
	State        uint8 // PortState*
	SMTrapQP     uint32
	SAQP         uint32
}

// SMA is the node's subnet management agent for directed-route and
// LID-routed SMPs: Get NodeInfo, NodeDescription and PortInfo, Set PortInfo.
// The emulation takes lid, sm_lid, subnet_prefix and the state at once (no
// Init->Armed->Active walk). Safe for concurrent use.
type SMA struct {
	nodeGUID, portGUID uint64
	desc               vema.NodeDescription
	// OnSet, when non-nil, is called (under the SMA's lock, after a valid
	// Set PortInfo) with the port as set, so that the caller applies it.
	onSet func(SMAPort)

	mu   sync.Mutex
	port SMAPort
}

// NewSMA returns the SMA of a node. port is the initial state (LID 0 and
// state Init for a node that waits for the SM); onSet may be nil.
func NewSMA(nodeGUID, portGUID uint64, description string, port SMAPort, onSet func(SMAPort)) *SMA {
	return &SMA{nodeGUID: nodeGUID, portGUID: portGUID, desc: vema.NodeDescriptionFrom(description), port: port, onSet: onSet}
}

// Port returns the port as the SMA has it.
func (s *SMA) Port() SMAPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// SetPort replaces the port state (a local change, such as a static LID).
func (s *SMA) SetPort(p SMAPort) {
	s.mu.Lock()
	s.port = p
	s.mu.Unlock()
}

// NodeInfo is the node's opa_node_info: a CA with one port.
func (s *SMA) NodeInfo() vema.NodeInfo {
	return vema.NodeInfo{
		BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion, NodeType: vema.NodeTypeCA, NumPorts: 1,
		SystemImageGUID: s.nodeGUID, NodeGUID: s.nodeGUID, PortGUID: s.portGUID,
		PartitionCap: 16, LocalPortNum: 1, VendorID: vema.IntelOUI,
	}
}

// PortInfo is the node's opa_port_info with the fields the emulation keeps.
func (s *SMA) PortInfo() vema.PortInfo {
	s.mu.Lock()
	p := s.port
	s.mu.Unlock()
	return portInfoOf(p)
}

func portInfoOf(p SMAPort) vema.PortInfo {
	pi := vema.PortInfo{
		LID: p.LID, SMLID: p.SMLID, SubnetPrefix: p.SubnetPrefix,
		CollectiveMaskMulticastMask: 0x0C, PortLinkMode: 0x1084,
		PacketFormatSupported: 0x000A, PacketFormatEnabled: 0x000A, FlitInterleave: 0x1400,
		IBCapMask:         vema.CapIsTrapSupported | vema.CapIsNoticeSupported | vema.CapIsSystemImageGUIDSupported | vema.CapIsClientReregSupported,
		OPACapMask:        vema.Cap3IsEthOnFabricSupported,
		ReplayDepthBuffer: 0x80, MTUCap: 5, RespTimeValue: 3, LocalPortNum: 1,
	}
	phys := vema.PhysStateLinkUp
	if p.State == vema.PortStateDown {
		phys = vema.PhysStatePolling
	}
	pi.SetPhysState(phys)
	pi.SetPortState(p.State)
	pi.SetSMTrapQPN(p.SMTrapQP)
	pi.SetSAQPN(p.SAQP)
	return pi
}

// Handle answers one SMP (class 0x81 or 0x01) as hfi1's SMA does
// (docs/linux-compat.md §9.10): method GetResp, the D bit for directed
// route, length round_up(header + attribute, 8); a class version other
// than 0x80 is answered with the request echoed whole (at most 2048
// bytes). ok is false for what gets no answer: responses, Trap and
// TrapRepress (the caller handles those), SMPs shorter than their header,
// a DR SMP with hop_cnt >= 64.
func (s *SMA) Handle(req []byte) (resp []byte, ok bool) {
	if len(req) < vema.SMPLIDHeaderLen {
		return nil, false
	}
	class := vema.Class(req[1])
	hlen := vema.SMPLIDHeaderLen
	switch class {
	case vema.ClassSubnDirectedRoute:
		hlen = vema.SMPDRHeaderLen
		if len(req) < hlen || req[7] >= vema.SMPMaxPathHops {
			return nil, false
		}
	case vema.ClassSubnLIDRouted:
	default:
		return nil, false
	}
	m := vema.Method(req[3])
	if m.IsResponse() || m == vema.MethodTrap || m == vema.MethodTrapRepress {
		return nil, false
	}
	attr := binary.BigEndian.Uint16(req[16:])
	am := binary.BigEndian.Uint32(req[20:])
	data := req[hlen:]

	// hfi1 answers in a copy of the request and ORs its status bits into
	// the request's (process_subn_opa, reply): a request's own status bits,
	// zero from any SM, come back.
	st := vema.Status(binary.BigEndian.Uint16(req[4:]))
	var attrData []byte
	n := -1
	switch {
	case req[2] != vema.SMPClassVersion:
		// hfi1 process_subn_opa answers a bad class version before it
		// sets resp_len to the header size, and out_mad is a copy of
		// in_mad: the reply is the whole request, data echoed, as long as
		// the request (hfi1_process_opa_mad: resp_len = byte_len - GRH,
		// out_mad_size = round_up(resp_len, 8)).
		st |= vema.StatusBadVersion
		n = (min(len(req), vema.MADSize) + 7) &^ 7
		attrData = req[hlen:min(len(req), vema.MADSize)]
	case m != vema.MethodGet && m != vema.MethodSet:
		st |= vema.StatusUnsupportedMethod
	default:
		var ast vema.Status
		ast, attrData = s.attr(m, attr, am, data)
		st |= ast
	}
	if n < 0 {
		n = (hlen + len(attrData) + 7) &^ 7
	}
	resp = make([]byte, n)
	copy(resp, req[:hlen])
	copy(resp[hlen:], attrData)
	resp[3] = byte(vema.MethodGetResp)
	if class == vema.ClassSubnDirectedRoute {
		st |= vema.StatusDirection
		// The MAD core's return-path fixup (smi.c C14-13): the SMA got the
		// SMP with hop_ptr = hop_cnt + 1 and sends it back one hop lower.
		if resp[6] > 0 {
			resp[6]--
		}
	}
	binary.BigEndian.PutUint16(resp[4:], uint16(st))
	return resp, true
}

func (s *SMA) attr(m vema.Method, attr uint16, am uint32, data []byte) (vema.Status, []byte) {
	switch attr {
	case vema.SMPAttrNodeInfo:
		if m != vema.MethodGet {
			return vema.StatusUnsupportedMethodAttr, nil
		}
		if am != 0 {
			return vema.StatusInvalidAttrValue, nil
		}
		ni := s.NodeInfo()
		b, _ := ni.MarshalBinary()
		return vema.StatusSuccess, b
	case vema.SMPAttrNodeDescription:
		if m != vema.MethodGet {
			return vema.StatusUnsupportedMethodAttr, nil
		}
		if am != 0 {
			return vema.StatusInvalidAttrValue, nil
		}
		return vema.StatusSuccess, append([]byte(nil), s.desc[:]...)
	case vema.SMPAttrPortInfo:
		if am>>24 != 1 {
			return vema.StatusInvalidAttrValue, nil
		}
		st := vema.StatusSuccess
		s.mu.Lock()
		if m == vema.MethodSet {
			st = s.setPortInfo(data)
		}
		pi := portInfoOf(s.port)
		s.mu.Unlock()
		b, _ := pi.MarshalBinary()
		return st, b
	}
	return vema.StatusUnsupportedMethodAttr, nil
}

// setPortInfo applies a Set PortInfo (s.mu held): lid, sm_lid,
// subnet_prefix, state (0 = no change), sm_trap_qp, sa_qp. A LID or SM LID
// that is 0, has bits above 23, or is 16B multicast/permissive, or a state
// above ActiveDefer, is refused whole with 0x001C.
func (s *SMA) setPortInfo(data []byte) vema.Status {
	var pi vema.PortInfo
	var buf [vema.PortInfoLen]byte
	copy(buf[:], data)
	_ = pi.UnmarshalBinary(buf[:])
	bad := func(l encap.LID) bool { return l == 0 || !encap.Is16BUnicast(uint32(l)) }
	if bad(pi.LID) || bad(pi.SMLID) || pi.PortState() > vema.PortStateActiveDefer {
		return vema.StatusInvalidAttrValue
	}
	p := s.port
	p.LID, p.SMLID, p.SubnetPrefix = pi.LID, pi.SMLID, pi.SubnetPrefix
	if st := pi.PortState(); st != vema.PortStateNOP {
		p.State = st
	}
	p.SMTrapQP, p.SAQP = pi.SMTrapQPN(), pi.SAQPN()
	s.port = p
	if s.onSet != nil {
		s.onSet(p)
	}
	return vema.StatusSuccess
}

// AnnounceLen is the size of the announce trap SMP: hfi1 sends traps in a
// 256-byte MAD (docs/linux-compat.md §11.3).
const AnnounceLen = vema.IBMADSize

// Announce builds the node's announce (docs/management.md §2.1): a LID-routed SMP
// Trap (class 0x01, method 0x05, attr Notice, attr_mod 0) with trap 144,
// generic type 0x84, producer CA, issuer_lid = the node's LID (0 without),
// issuer_gid = subnet prefix (fe80:: until the SM sets one) + port GUID,
// details lid = the LID, new_cap_mask 0, cap_mask3 IsEthOnFabricSupported.
// 256 bytes.
func (s *SMA) Announce(tid uint64) []byte {
	p := s.Port()
	prefix := p.SubnetPrefix
	if prefix == 0 {
		prefix = encap.DefaultSubnetPrefix
	}
	b := make([]byte, AnnounceLen)
	h := vema.SMPHeader{BaseVersion: vema.BaseVersion, MgmtClass: vema.ClassSubnLIDRouted, ClassVersion: vema.SMPClassVersion,
		Method: vema.MethodTrap, TID: tid, AttrID: vema.SMPAttrNotice}
	_, _ = h.AppendBinary(b[:0])
	n := vema.SMPNotice{GenericType: vema.NoticeGenericInfo, ProdTypeLSB: vema.NoticeProdCA, TrapNum: vema.TrapChangeCapability,
		IssuerLID: p.LID}
	binary.BigEndian.PutUint64(n.IssuerGID[0:], prefix)
	binary.BigEndian.PutUint64(n.IssuerGID[8:], s.portGUID)
	binary.BigEndian.PutUint32(n.Details[0:], uint32(p.LID))                    // ntc_144.lid
	binary.BigEndian.PutUint16(n.Details[10:], vema.Cap3IsEthOnFabricSupported) // cap_mask3
	_, _ = n.AppendBinary(b[vema.SMPLIDHeaderLen:vema.SMPLIDHeaderLen])
	return b
}
