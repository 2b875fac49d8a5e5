package opaswitch

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// The switch's subnet management agent: it answers the SMPs for port 0
// and passes directed-route SMPs on hop by hop (docs/management.md §8,
// docs/fabric.md). It runs on the switch's SMA goroutine, one SMP at a
// time, so its state needs no lock but for what the data plane or a
// caller reads.

// SMP framing of the switch's answers.
const (
	pkeyLimited = encap.PKey(0x7FFF)
	// linearFDBCap is SwitchInfo's LinearFDBCap: the LFT covers every
	// unicast LID (Tables stores it by block, so the size costs nothing).
	linearFDBCap = MaxUnicastLID + 1
	// lifeTimeValue is SwitchInfo's LifeTimeValue (4.096 us * 2^v).
	lifeTimeValue = 18
	// Physical port states (PortInfo PortPhysicalState).
	physPolling = 2
	physLinkUp  = 5
)

// SMACounters count what the SMA did not answer or pass on.
type SMACounters struct {
	Bad     atomic.Uint64 // management packets or SMPs that do not parse
	DRDrops atomic.Uint64 // directed-route SMPs the hop rules drop
	NoRoute atomic.Uint64 // SMPs to send on that no port could carry
}

// smaState is the management port's own state.
type smaState struct {
	mu        sync.Mutex // what Info and the data plane's callers read
	lid       uint32     // port 0's LID (16B), 0 until the SM sets it
	smLID     uint32
	prefix    uint64
	mkey      uint64
	mcastTop  encap.LID
	port0     PortState
	smStarted []bool // IsSMConfigurationStarted, by port
	desc      vema.NodeDescription
}

// LID returns the switch's LID (port 0's), 0 until the SM sets it.
func (s *Switch) LID() uint32 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.lid
}

// handleSMP is the built-in SMA: it takes one packet for port 0 that came
// in on port in.
func (s *Switch) handleSMP(pkt []byte, in int) {
	mp, err := encap.ParseMgmt(pkt)
	if err != nil {
		s.SMA.Bad.Add(1)
		return
	}
	var smp vema.SMP
	if err := smp.UnmarshalBinary(mp.MAD); err != nil || smp.BaseVersion != vema.BaseVersion {
		s.SMA.Bad.Add(1)
		return
	}
	node := vema.DRNode{Switch: true, NumPorts: uint8(s.NumPorts())}
	h := mp.Header
	switch smp.MgmtClass {
	case vema.ClassSubnDirectedRoute:
		act, port, _ := smp.DRRecv(node, uint8(in)) // a drop's reason is not kept
		s.drAct(&smp, act, port, mp, false)
	case vema.ClassSubnLIDRouted:
		if smp.Method.IsResponse() {
			s.SMA.Bad.Add(1) // an answer for an SM, LID-routed to the switch's own LID
			return
		}
		st, data := s.answer(&smp, in)
		reply := smp.Reply(st, data)
		s.sendSMP(&reply, 0, h.DLID(), h.SLID(), mp.SrcQPN)
	default:
		s.SMA.Bad.Add(1)
	}
}

// drAct does what the hop rules decided for a directed-route SMP: pass it
// on, answer it, route its LID-routed part, or drop it. replied marks an
// SMP the SMA built itself (an answer), which is not answered again.
func (s *Switch) drAct(smp *vema.SMP, act vema.DRAction, port uint8, mp encap.MgmtPacket, replied bool) {
	h := mp.Header
	switch act {
	case vema.DRForward:
		s.sendSMP(smp, int(port), h.SLID(), h.DLID(), mp.DestQPN)
	case vema.DRDeliver:
		if replied || smp.Returning() || smp.Method.IsResponse() {
			// A reply that ends here: the switch runs no SM to take it.
			s.SMA.DRDrops.Add(1)
			return
		}
		st, data := s.answer(smp, 0)
		reply := smp.Reply(st, data)
		node := vema.DRNode{Switch: true, NumPorts: uint8(s.NumPorts())}
		act2, port2, _ := reply.DRSend(node)
		s.drAct(&reply, act2, port2, encap.MgmtPacket{Header: h, DestQPN: mp.SrcQPN, SrcQPN: 0}, true)
	case vema.DRLIDRoute:
		dlid := uint32(smp.DR.DRDLID)
		if smp.Returning() {
			dlid = uint32(smp.DR.DRSLID)
		}
		s.sendSMP(smp, int(s.Tables.Unicast(dlid&encap.LID16BMask)), h.SLID(), dlid&encap.LID16BMask, mp.DestQPN)
	default:
		s.SMA.DRDrops.Add(1)
	}
}

// sendSMP frames smp (SC 15) from slid to dlid and sends it out port
// (0: by the LFT, to dlid).
func (s *Switch) sendSMP(smp *vema.SMP, port int, slid, dlid uint32, destQPN uint32) {
	if port == 0 {
		port = int(s.Tables.Unicast(dlid))
	}
	p := s.Port(port)
	if p == nil || p.tr == nil || p.State() == StateDown {
		s.SMA.NoRoute.Add(1)
		return
	}
	if pad := len(smp.Data) % 8; pad != 0 {
		smp.Data = append(smp.Data, make([]byte, 8-pad)...) // a MAD is whole flits
	}
	mad, err := smp.MarshalBinary()
	if err != nil {
		s.SMA.Bad.Add(1)
		return
	}
	pkey := pkeyLimited
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: slid, DLID: dlid, SC: scSMP, PKey: pkey, DestQPN: destQPN}, mad)
	if err != nil {
		s.SMA.Bad.Add(1)
		return
	}
	if s.Send(port, pkt) != nil {
		s.SMA.NoRoute.Add(1)
	}
}

// answer handles a Get or Set of one attribute, received on port in (0
// for a directed-route SMP, whose ingress the NodeInfo answer names
// through the return path). It returns the status and the attribute data
// of the answer.
func (s *Switch) answer(smp *vema.SMP, in int) (vema.Status, []byte) {
	if smp.Method != vema.MethodGet && smp.Method != vema.MethodSet {
		return vema.StatusUnsupportedMethod, nil
	}
	set := smp.Method == vema.MethodSet
	if in == 0 && smp.IsDirectedRoute() && smp.HopCnt > 0 {
		in = int(smp.DR.ReturnPath[smp.HopCnt])
	}
	switch smp.AttrID {
	case vema.SMPAttrNodeInfo:
		if set {
			return vema.StatusUnsupportedMethodAttr, nil
		}
		ni := vema.NodeInfo{BaseVersion: vema.BaseVersion, ClassVersion: vema.SMPClassVersion, NodeType: vema.NodeTypeSwitch,
			NumPorts: uint8(s.NumPorts()), SystemImageGUID: s.guid, NodeGUID: s.guid, PortGUID: s.guid,
			PartitionCap: 8, LocalPortNum: uint8(in), VendorID: vema.IntelOUI}
		return marshalled(&ni)
	case vema.SMPAttrNodeDescription:
		if set {
			return vema.StatusUnsupportedMethodAttr, nil
		}
		d := s.st.desc
		return marshalled(&d)
	case vema.SMPAttrSwitchInfo:
		return s.switchInfo(smp, set)
	case vema.SMPAttrPortInfo:
		return s.portInfo(smp, set)
	case vema.SMPAttrPortStateInfo:
		return s.portStateInfo(smp, set)
	case vema.SMPAttrLinearForwardingTable:
		return s.lft(smp, set)
	case vema.SMPAttrMulticastForwardingTable:
		return s.mft(smp, set)
	}
	return vema.StatusUnsupportedMethodAttr, nil
}

type binaryAppender interface{ AppendBinary([]byte) ([]byte, error) }

func marshalled(v binaryAppender) (vema.Status, []byte) {
	b, err := v.AppendBinary(nil)
	if err != nil {
		return vema.StatusInvalidAttrValue, nil
	}
	return vema.StatusSuccess, b
}

func (s *Switch) switchInfo(smp *vema.SMP, set bool) (vema.Status, []byte) {
	if set {
		var si vema.SwitchInfo
		if err := si.UnmarshalBinary(smp.Data); err != nil {
			return vema.StatusInvalidAttrValue, nil
		}
		if err := s.Tables.SetLinearFDBTop(uint32(si.LinearFDBTop)); err != nil {
			st, data := s.switchInfo(&vema.SMP{}, false)
			return vema.StatusInvalidAttrValue | st, data
		}
		s.st.mu.Lock()
		s.st.mcastTop = si.MulticastFDBTop
		s.st.mu.Unlock()
	}
	s.st.mu.Lock()
	mcastTop := s.st.mcastTop
	s.st.mu.Unlock()
	si := vema.SwitchInfo{LinearFDBCap: linearFDBCap, MulticastFDBCap: MulticastCap, LinearFDBTop: encap.LID(s.Tables.LinearFDBTop()),
		MulticastFDBTop: mcastTop, LifeTimeValue: lifeTimeValue, PartitionEnforcementCap: 8,
		RoutingModeSupported: vema.RoutingModeLinear, RoutingModeEnabled: vema.RoutingModeLinear,
		MulticastMask: 4, CollectiveMask: 1}
	return marshalled(&si)
}

// portRange returns the ports an attribute modifier names, or false when it
// names one the switch does not have (0 is the management port).
func (s *Switch) portRange(am vema.PortsAttrMod) (first, n int, ok bool) {
	first, n = int(am.Port), max(int(am.NumPorts), 1)
	return first, n, first+n-1 <= s.NumPorts()
}

// portState returns port p's logical and physical state.
func (s *Switch) portState(p int) (PortState, uint8) {
	if p == 0 {
		s.st.mu.Lock()
		defer s.st.mu.Unlock()
		return s.st.port0, physLinkUp
	}
	port := s.ports[p]
	if port.tr == nil {
		return port.State(), physPolling
	}
	return port.State(), physLinkUp
}

// setPortState applies a PortState of a Set to port p, as an SMA takes
// it (docs/fabric.md): 0 changes nothing, Down takes the link down (it
// trains again, to Init), Init -> Armed needs the SM's configuration to
// have started on the port, Armed -> Active needs a link partner (a
// cable; port 0 needs none). Anything else is refused, leaving the state.
func (s *Switch) setPortState(p int, want uint8) bool {
	cur, phys := s.portState(p)
	next := cur
	switch PortState(want) {
	case 0:
		return true
	case StateDown:
		next = StateInit
		if phys != physLinkUp {
			next = StateDown
		}
		s.st.mu.Lock()
		s.st.smStarted[p] = false
		s.st.mu.Unlock()
	case StateArmed:
		s.st.mu.Lock()
		started := s.st.smStarted[p]
		s.st.mu.Unlock()
		if cur == StateArmed {
			return true
		}
		if cur != StateInit || !started {
			return false
		}
		next = StateArmed
	case StateActive:
		if cur == StateActive {
			return true
		}
		if cur != StateArmed || (p != 0 && phys != physLinkUp) {
			return false
		}
		next = StateActive
	default:
		return false
	}
	if p == 0 {
		s.st.mu.Lock()
		s.st.port0 = next
		s.st.mu.Unlock()
	} else {
		s.ports[p].SetState(next)
	}
	return true
}

// noteSMConfig records the S bit of a PortInfo or PortStateInfo Get or Set
// on ports that are in Init.
func (s *Switch) noteSMConfig(am vema.PortsAttrMod, first, n int) {
	if !am.StartSMConfig {
		return
	}
	for p := first; p < first+n; p++ {
		if st, _ := s.portState(p); st == StateInit {
			s.st.mu.Lock()
			s.st.smStarted[p] = true
			s.st.mu.Unlock()
		}
	}
}

func (s *Switch) portInfo(smp *vema.SMP, set bool) (vema.Status, []byte) {
	am := vema.ParsePortsAttrMod(smp.AttrMod)
	first, n, ok := s.portRange(am)
	if !ok || n != 1 {
		return vema.StatusInvalidAttrValue, nil
	}
	s.noteSMConfig(am, first, n)
	status := vema.StatusSuccess
	if set {
		var pi vema.PortInfo
		if err := pi.UnmarshalBinary(smp.Data); err != nil {
			return vema.StatusInvalidAttrValue, nil
		}
		if first == 0 {
			s.st.mu.Lock()
			s.st.lid = uint32(pi.LID) & encap.LID16BMask
			s.st.smLID = uint32(pi.SMLID) & encap.LID16BMask
			s.st.prefix, s.st.mkey = pi.SubnetPrefix, pi.MKey
			s.st.mu.Unlock()
		}
		if !s.setPortState(first, pi.PortState()) {
			status = vema.StatusInvalidAttrValue
		}
	}
	st, phys := s.portState(first)
	s.st.mu.Lock()
	pi := vema.PortInfo{LID: encap.LID(s.st.lid), SMLID: encap.LID(s.st.smLID), SubnetPrefix: s.st.prefix, MKey: s.st.mkey}
	s.st.mu.Unlock()
	pi.SetPortState(uint8(st))
	pi.SetPhysState(phys)
	b, err := pi.AppendBinary(nil)
	if err != nil {
		return vema.StatusInvalidAttrValue, nil
	}
	return status, b
}

func (s *Switch) portStateInfo(smp *vema.SMP, set bool) (vema.Status, []byte) {
	am := vema.ParsePortsAttrMod(smp.AttrMod)
	first, n, ok := s.portRange(am)
	if !ok || n*vema.PortStateInfoLen > smp.MaxDataLen() {
		return vema.StatusInvalidAttrValue, nil
	}
	s.noteSMConfig(am, first, n)
	status := vema.StatusSuccess
	if set {
		if len(smp.Data) < n*vema.PortStateInfoLen {
			return vema.StatusInvalidAttrValue, nil
		}
		for i := range n {
			var psi vema.PortStateInfo
			if err := psi.UnmarshalBinary(smp.Data[i*vema.PortStateInfoLen:]); err != nil {
				return vema.StatusInvalidAttrValue, nil
			}
			if !s.setPortState(first+i, psi.PortState()) {
				status = vema.StatusInvalidAttrValue
			}
		}
	}
	out := make([]byte, 0, n*vema.PortStateInfoLen)
	for p := first; p < first+n; p++ {
		st, phys := s.portState(p)
		var psi vema.PortStateInfo
		psi.SetPortState(uint8(st))
		psi.SetPhysState(phys)
		out, _ = psi.AppendBinary(out)
	}
	return status, out
}

func (s *Switch) lft(smp *vema.SMP, set bool) (vema.Status, []byte) {
	am := vema.ParseLFTAttrMod(smp.AttrMod)
	n := max(int(am.NumBlocks), 1)
	if n*vema.LFTBlockLen > smp.MaxDataLen() {
		return vema.StatusInvalidAttrValue, nil
	}
	if set {
		if len(smp.Data) < n*vema.LFTBlockLen {
			return vema.StatusInvalidAttrValue, nil
		}
		blocks := make([][LFTBlock]uint8, n)
		for i := range blocks {
			copy(blocks[i][:], smp.Data[i*vema.LFTBlockLen:])
		}
		if s.Tables.SetLFTBlocks(int(am.Block), blocks) != nil {
			return vema.StatusInvalidAttrValue, nil
		}
	}
	blocks, err := s.Tables.LFTBlocks(int(am.Block), n)
	if err != nil {
		return vema.StatusInvalidAttrValue, nil
	}
	out := make([]byte, 0, n*vema.LFTBlockLen)
	for i := range blocks {
		out = append(out, blocks[i][:]...)
	}
	return vema.StatusSuccess, out
}

func (s *Switch) mft(smp *vema.SMP, set bool) (vema.Status, []byte) {
	am := vema.ParseMFTAttrMod(smp.AttrMod)
	n := max(int(am.NumBlocks), 1)
	if n*vema.MFTBlockLen > smp.MaxDataLen() || int(am.Position) >= vema.MFTPositions {
		return vema.StatusInvalidAttrValue, nil
	}
	if set && len(smp.Data) < n*vema.MFTBlockLen {
		return vema.StatusInvalidAttrValue, nil
	}
	out := make([]byte, 0, n*vema.MFTBlockLen)
	for i := range n {
		b := int(am.Block) + i
		if set {
			var words [MFTBlock]uint64
			for j := range words {
				words[j] = binary.BigEndian.Uint64(smp.Data[i*vema.MFTBlockLen+8*j:])
			}
			if s.Tables.SetMFTBlock(b, int(am.Position), words) != nil {
				return vema.StatusInvalidAttrValue, nil
			}
		}
		blk, err := s.Tables.MFTBlock(b)
		if err != nil {
			return vema.StatusInvalidAttrValue, nil
		}
		for j := range blk {
			out = binary.BigEndian.AppendUint64(out, blk[j][am.Position])
		}
	}
	return vema.StatusSuccess, out
}
