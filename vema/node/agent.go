package node

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// MACTable is the VEMA MAC table of one vport as the kernel keeps it
// (docs/linux-compat.md §4.6): entries by absolute index (0..2047) and the
// digest the EM last set. A nil Entries map is an empty table.
type MACTable struct {
	Entries map[uint16]vema.MACTableEntry
	Digest  uint32
}

// IfaceMACList is a netdev's address list as the VEMA reports it
// (docs/linux-compat.md §4.7). For the unicast list DevAddrs is the netdev's
// dev_addrs (its own MAC first) and UC the secondary unicast list; for the
// multicast list only UC is used (the netdev's multicast list). GenCount is
// uc_macs_gen_count or mc_macs_gen_count.
type IfaceMACList struct {
	DevAddrs [][6]byte
	UC       [][6]byte
	GenCount uint16
}

// PortController is what the agent drives: the vports of one physical port.
// The agent holds the kernel's semantics (which fields a Set writes, power-on
// defaults, MAC-table merging); a controller stores and applies what it is
// given. Methods are called from one goroutine at a time (the agent
// serialises them).
type PortController interface {
	// VESWPortInfo returns a vport's current VESWPortInfo: every stored field
	// (reserved ones too), with oper_state and eth_link_status read back
	// from the port, mac_tbl_digest and the gen counts as kept. ok is false
	// when the vport does not exist.
	VESWPortInfo(vport uint8) (info vema.VESWPortInfo, ok bool)
	// SetVESWPortInfo stores info (the agent has already merged the writable
	// fields into the current value) and applies it, creating the vport if it
	// does not exist. An error means the port could not be made or run with
	// this config.
	SetVESWPortInfo(vport uint8, info *vema.VESWPortInfo) error
	// MACTable returns a vport's MAC table; ok is false when the vport does
	// not exist.
	MACTable(vport uint8) (t MACTable, ok bool)
	// SetMACTable replaces a vport's MAC table (and digest) and applies it.
	SetMACTable(vport uint8, t MACTable) error
	// IfaceMACs returns the netdev's unicast (mcast false) or multicast list.
	IfaceMACs(vport uint8, mcast bool) (l IfaceMACList, ok bool)
	// Counters returns the vport's summary and error counters (without the
	// 8-byte prefix, which the agent fills).
	Counters(vport uint8) (s vema.SummaryCounters, e vema.ErrorCounters, ok bool)
}

// Trap rate limit of the kernel (docs/linux-compat.md §4.9): a window of
// 4096 ns * 2^18 / 1000 µs ≈ 1.0737 s, started by the first trap after the
// previous window expired, with 5 traps in it. Each vport has its own window
// (struct opa_vnic_adapter's trap_timeout and trap_count).
const (
	TrapWindow    = time.Duration(4096*(1<<18)/1000) * time.Microsecond
	TrapsInWindow = 5
)

// Agent is the VEMA agent of one physical port (port 1): the kernel's
// vema.c as a function from request bytes to response bytes, plus the trap
// builder. It is safe for concurrent use.
type Agent struct {
	ports PortController
	// PhysPort is the physical OPA port number reported in counters and
	// traps (1; the software HFI has one port).
	physPort uint16

	mu      sync.Mutex
	cpi     vema.ClassPortInfo // as last Set, 80 bytes stored whole
	trapTID uint64             // per physical port (port->tid)
	windows map[uint8]trapWindow
	now     func() time.Time
}

// trapWindow is one vport's trap rate-limit window.
type trapWindow struct {
	start time.Time
	count int
}

// NewAgent returns an agent driving ports. now is the clock for the trap
// rate limit (nil means time.Now).
func NewAgent(ports PortController, now func() time.Time) *Agent {
	if now == nil {
		now = time.Now
	}
	return &Agent{ports: ports, physPort: 1, now: now, windows: map[uint8]trapWindow{}}
}

// ClassPortInfo returns the ClassPortInfo as last Set (zero before any Set).
func (a *Agent) ClassPortInfo() vema.ClassPortInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cpi
}

// Handle answers one VEMA MAD (class 0x34) as a Linux node does: the MAD
// core (drivers/infiniband/core/mad.c ib_mad_recv_done) and, behind it, the
// kernel's vema_recv. req is the MAD as received (at least the 40-byte
// vendor header; a shorter data area reads as zeros).
//
// vema_register registers Get and Set only, for class version 0x80 and OUI
// 00 06 6A. ok is false when nothing answers: a MAD shorter than its vendor
// header, another class or base version, and any method but Get and Set
// (responses, Trap, TrapRepress, Send...: the MAD core finds no agent, and
// generate_unmatched_resp answers Get and Set only). A Get or Set with
// another class version or OUI reaches no agent either; the MAD core
// answers it itself: the request's 24-byte common header with method
// GetResp and status 0x000C, 24 bytes long (resp_len = sizeof(struct
// ib_mad_hdr) for an OPA MAD). Otherwise resp is 2048 bytes: the request's
// first 40 bytes with method GetResp and the status, then the data area.
func (a *Agent) Handle(req []byte) (resp []byte, ok bool) {
	if len(req) < vema.VendorHeaderLen {
		return nil, false
	}
	if req[0] != vema.BaseVersion || vema.Class(req[1]) != vema.ClassVEMA {
		return nil, false
	}
	m := vema.Method(req[3])
	if m != vema.MethodGet && m != vema.MethodSet {
		return nil, false
	}
	if req[2] != vema.VEMAClassVersion || vema.OUI(req[37:40]) != vema.IntelOUI {
		resp = make([]byte, vema.MADHeaderLen)
		copy(resp, req[:vema.MADHeaderLen])
		resp[3] = byte(vema.MethodGetResp)
		binary.BigEndian.PutUint16(resp[4:], uint16(vema.StatusUnsupportedMethodAttr))
		return resp, true
	}
	var in [vema.VEMADataLen]byte
	copy(in[:], req[vema.VendorHeaderLen:])
	resp = make([]byte, vema.MADSize)
	copy(resp, req[:vema.VendorHeaderLen])
	resp[3] = byte(vema.MethodGetResp)
	out := resp[vema.VendorHeaderLen:]
	attr := binary.BigEndian.Uint16(req[16:])
	vport := req[23] // attr_mod & 0xFF

	a.mu.Lock()
	defer a.mu.Unlock()
	var st vema.Status
	if m == vema.MethodGet {
		st = a.get(attr, vport, in[:], out)
	} else {
		st = a.set(attr, vport, in[:], out)
	}
	binary.BigEndian.PutUint16(resp[4:], uint16(st))
	return resp, true
}

func (a *Agent) get(attr uint16, vport uint8, in, out []byte) vema.Status {
	switch attr {
	case vema.AttrClassPortInfo:
		a.getCPI(out)
	case vema.AttrVESWPortInfo:
		a.getVESWPortInfo(vport, out)
	case vema.AttrVESWPortMACEntries:
		return a.getMACEntries(vport, in, out)
	case vema.AttrIfaceUcastMACs:
		return a.getIfaceMACs(vport, false, in, out)
	case vema.AttrIfaceMcastMACs:
		return a.getIfaceMACs(vport, true, in, out)
	case vema.AttrVESWPortSummaryCounters, vema.AttrVESWPortErrorCounters:
		return a.getCounters(vport, attr == vema.AttrVESWPortErrorCounters, out)
	default:
		return vema.StatusUnsupportedMethodAttr
	}
	return vema.StatusSuccess
}

func (a *Agent) set(attr uint16, vport uint8, in, out []byte) vema.Status {
	switch attr {
	case vema.AttrClassPortInfo:
		_ = a.cpi.UnmarshalBinary(in) // stores the whole 80 bytes
		a.getCPI(out)
	case vema.AttrVESWPortInfo:
		var req vema.VESWPortInfo
		_ = req.UnmarshalBinary(in)
		cur, ok := a.ports.VESWPortInfo(vport)
		if !ok {
			if vport > vema.MaxVPort { // beyond OPA_VNIC_MAX_NUM_VPORT: no VNIC is made
				return vema.StatusInvalidAttrValue
			}
			cur = vema.PowerOnVESWPortInfo()
		}
		mergeWritable(&cur, &req)
		if err := a.ports.SetVESWPortInfo(vport, &cur); err != nil {
			return vema.StatusInvalidAttrValue
		}
		a.getVESWPortInfo(vport, out)
	case vema.AttrVESWPortMACEntries:
		return a.setMACEntries(vport, in, out)
	case vema.AttrDeleteVESW:
		cur, ok := a.ports.VESWPortInfo(vport)
		if !ok {
			return vema.StatusInvalidAttrValue
		}
		pod := vema.PowerOnVESWPortInfo()
		mergeWritable(&cur, &pod)
		cur.VPort.MACTblDigest = 0
		st := vema.StatusSuccess
		if err := a.ports.SetVESWPortInfo(vport, &cur); err != nil {
			st = vema.StatusInvalidAttrValue
		}
		if err := a.ports.SetMACTable(vport, MACTable{}); err != nil {
			st = vema.StatusInvalidAttrValue
		}
		a.getVESWPortInfo(vport, out)
		return st
	default:
		return vema.StatusUnsupportedMethodAttr
	}
	return vema.StatusSuccess
}

// mergeWritable copies into cur what opa_vnic_set_vesw_info and
// opa_vnic_set_per_veswport_info copy from a Set: the whole vesw part
// (reserved bytes too) and the vport's port_num, rsvd0, base_mac_addr,
// config_state, rsvd1, encap_slid, the PCP/SC/VL maps, rsvd2 and rsvd3.
// eth_link_status, oper_state, max_mac_tbl_ent, max_smac_ent,
// mac_tbl_digest and the gen counts keep their current values.
func mergeWritable(cur, req *vema.VESWPortInfo) {
	cur.VESW = req.VESW
	d, s := &cur.VPort, &req.VPort
	d.PortNum = s.PortNum
	d.Rsvd0 = s.Rsvd0
	d.BaseMACAddr = s.BaseMACAddr
	d.ConfigState = s.ConfigState
	d.Rsvd1 = s.Rsvd1
	d.EncapSLID = s.EncapSLID
	d.PCPToSCUC, d.PCPToVLUC, d.PCPToSCMC, d.PCPToVLMC = s.PCPToSCUC, s.PCPToVLUC, s.PCPToSCMC, s.PCPToVLMC
	d.NonVLANSCUC, d.NonVLANVLUC, d.NonVLANSCMC, d.NonVLANVLMC = s.NonVLANSCUC, s.NonVLANVLUC, s.NonVLANSCMC, s.NonVLANVLMC
	d.Rsvd2 = s.Rsvd2
	d.Rsvd3 = s.Rsvd3
}

// getCPI is vema_get_class_port_info: the stored struct with base and class
// version, cap_mask (traps, 255 vports) and response time 18 forced.
func (a *Agent) getCPI(out []byte) {
	c := a.cpi
	c.BaseVersion = vema.BaseVersion
	c.ClassVersion = vema.VEMAClassVersion
	c.CapMask = vema.VEMACPICapMask
	c.CapMask2RespTime = uint32(vema.VEMACPIRespTime)
	_, _ = c.AppendBinary(out[:0])
}

// getVESWPortInfo is vema_get_veswport_info: a missing vport reads as the
// power-on values with status 0.
func (a *Agent) getVESWPortInfo(vport uint8, out []byte) {
	info, ok := a.ports.VESWPortInfo(vport)
	if !ok {
		info = vema.PowerOnVESWPortInfo()
	}
	_, _ = info.AppendBinary(out[:0])
}

func (a *Agent) getMACEntries(vport uint8, in, out []byte) vema.Status {
	t, ok := a.ports.MACTable(vport)
	if !ok {
		return vema.StatusInvalidAttrValue
	}
	var h vema.MACTableHeader
	_ = h.UnmarshalBinary(in)
	if !h.Valid() {
		return vema.StatusInvalidAttrValue
	}
	binary.BigEndian.PutUint16(out[0:], h.Offset)
	binary.BigEndian.PutUint16(out[2:], h.NumEntries)
	if t.Entries == nil {
		return vema.StatusSuccess // no table: opa_vnic_query_mac_tbl leaves the digest 0
	}
	for idx, e := range t.Entries {
		if idx < h.Offset || int(idx) >= int(h.Offset)+int(h.NumEntries) {
			continue
		}
		off := vema.MACTableHeaderLen + vema.MACTableEntryLen*int(idx-h.Offset)
		_, _ = e.AppendBinary(out[off:off])
	}
	binary.BigEndian.PutUint32(out[4:], t.Digest)
	return vema.StatusSuccess
}

// setMACEntries is vema_set_mac_entries + opa_vnic_update_mac_tbl: every
// index in [offset, offset+num) is replaced, an all-zero MAC deletes it,
// other indices are kept, the digest is the request's. The reply is the Get
// of the same range; an invalid range reads 0x001C there.
func (a *Agent) setMACEntries(vport uint8, in, out []byte) vema.Status {
	t, ok := a.ports.MACTable(vport)
	if !ok {
		return vema.StatusInvalidAttrValue
	}
	var h vema.MACTableHeader
	_ = h.UnmarshalBinary(in)
	st := vema.StatusSuccess
	if h.Valid() {
		nt := MACTable{Entries: make(map[uint16]vema.MACTableEntry, len(t.Entries)+int(h.NumEntries)), Digest: h.Digest}
		for idx, e := range t.Entries {
			if idx < h.Offset || int(idx) >= int(h.Offset)+int(h.NumEntries) {
				nt.Entries[idx] = e
			}
		}
		for i := 0; i < int(h.NumEntries); i++ {
			var e vema.MACTableEntry
			off := vema.MACTableHeaderLen + vema.MACTableEntryLen*i
			_ = e.UnmarshalBinary(in[off:])
			if e.IsDelete() {
				continue
			}
			nt.Entries[h.Offset+uint16(i)] = e
		}
		if err := a.ports.SetMACTable(vport, nt); err != nil {
			st = vema.StatusUnsupportedMethodAttr
		}
	} else {
		st = vema.StatusUnsupportedMethodAttr
	}
	if gst := a.getMACEntries(vport, in, out); gst != vema.StatusSuccess {
		return gst
	}
	return st
}

// getIfaceMACs is vema_get_ucast_macs / vema_get_mcast_macs with
// opa_vnic_query_ucast_macs / _mcast_macs (newest kernel): num_macs_in_msg
// 0 asks for the maximum (333); the reply's num_macs_in_msg is the count
// filled, 0 when none is (the kernel stores count after its loop); for the
// unicast list the EM's base_mac_addr is skipped and tot_macs_in_lst =
// dev_addrs + uc - the skipped (em) MACs.
func (a *Agent) getIfaceMACs(vport uint8, mcast bool, in, out []byte) vema.Status {
	l, ok := a.ports.IfaceMACs(vport, mcast)
	if !ok {
		return vema.StatusInvalidAttrValue
	}
	var base [6]byte
	if info, ok := a.ports.VESWPortInfo(vport); ok {
		base = info.VPort.BaseMACAddr
	}
	var h vema.IfaceMACsHeader
	_ = h.UnmarshalBinary(in)
	want := h.Requested()
	if want > vema.MaxIfaceMACsPerMAD {
		want = vema.MaxIfaceMACsPerMAD
	}
	binary.BigEndian.PutUint16(out[0:], h.StartIdx)
	var list [][6]byte
	em := 0
	if mcast {
		list = l.UC
	} else {
		for _, m := range l.DevAddrs {
			if m == base {
				em++
				continue
			}
			list = append(list, m)
		}
		list = append(list, l.UC...)
	}
	count := 0
	for idx, m := range list {
		if idx < int(h.StartIdx) {
			continue
		}
		if count == want {
			break
		}
		copy(out[vema.IfaceMACsHeaderLen+6*count:], m[:])
		count++
	}
	binary.BigEndian.PutUint16(out[2:], uint16(count))
	tot := len(l.UC)
	if !mcast {
		tot = len(l.DevAddrs) + len(l.UC) - em
	}
	binary.BigEndian.PutUint16(out[4:], uint16(tot))
	binary.BigEndian.PutUint16(out[6:], l.GenCount)
	return vema.StatusSuccess
}

func (a *Agent) getCounters(vport uint8, errs bool, out []byte) vema.Status {
	s, e, ok := a.ports.Counters(vport)
	if !ok {
		return vema.StatusInvalidAttrValue
	}
	info, _ := a.ports.VESWPortInfo(vport)
	if errs {
		e.VPInstance, e.VESWID, e.VESWPortNum = uint16(vport), info.VESW.VESWID, uint32(a.physPort)
		_, _ = e.AppendBinary(out[:0])
	} else {
		s.VPInstance, s.VESWID, s.VESWPortNum = uint16(vport), info.VESW.VESWID, uint32(a.physPort)
		_, _ = s.AppendBinary(out[:0])
	}
	return vema.StatusSuccess
}

// Trap builds the VEMA trap of vport with opcode (TrapIfaceUcastMACChange,
// TrapIfaceMcastMACChange, TrapEthLinkStatusChange) as
// opa_vnic_vema_send_trap does (docs/linux-compat.md §4.9): 272 bytes, TID
// from a per-port counter starting at 1. It returns the MAD and its
// destination, the stored ClassPortInfo's trap_lid and trap SL; ok is false
// when no trap goes out: trap_lid 0, the vport missing, or the vport's rate
// limit (5 in a window of TrapWindow) reached. A refused trap does not use a
// TID.
func (a *Agent) Trap(vport uint8, opcode uint8) (mad []byte, dlid encap.LID, sl uint8, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cpi.TrapLID == 0 {
		return nil, 0, 0, false
	}
	info, exists := a.ports.VESWPortInfo(vport)
	if !exists {
		return nil, 0, 0, false
	}
	now := a.now()
	w, active := a.windows[vport]
	if !active || now.Sub(w.start) >= TrapWindow {
		w = trapWindow{start: now}
	}
	if w.count >= TrapsInWindow {
		return nil, 0, 0, false
	}
	w.count++
	a.windows[vport] = w
	a.trapTID++
	t := vema.TrapMAD{
		VendorHeader: vema.VendorHeader{
			MADHeader: vema.MADHeader{
				BaseVersion: vema.BaseVersion, MgmtClass: vema.ClassVEMA, ClassVersion: vema.VEMAClassVersion,
				Method: vema.MethodTrap, TID: a.trapTID, AttrID: vema.AttrNotice,
			},
			OUI: vema.IntelOUI,
		},
		Notice: vema.Notice{
			GenType:   vema.VEMANoticeGenType,
			OUI:       vema.IntelOUI,
			IssuerLID: info.VPort.EncapSLID,
			Trap: vema.VESWPortTrap{
				FabricID: info.VESW.FabricID, VESWID: info.VESW.VESWID, VESWPortNum: info.VPort.PortNum,
				OPAPortNum: a.physPort, VESWPortIndex: vport, Opcode: opcode,
			},
		},
	}
	mad, _ = t.MarshalBinary()
	return mad, a.cpi.TrapLID, a.cpi.TrapSL(), true
}
