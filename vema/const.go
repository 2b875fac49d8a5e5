package vema

import "fmt"

// Base and class versions (docs/linux-compat.md §4.1, §9.1, §10.1).
const (
	BaseVersion      uint8 = 0x80 // OPA_MGMT_BASE_VERSION: every OPA MAD
	IBBaseVersion    uint8 = 0x01 // IB_MGMT_BASE_VERSION: 256-byte IB MADs
	VEMAClassVersion uint8 = 0x80 // OPA_EMA_CLASS_VERSION
	SMPClassVersion  uint8 = 0x80 // OPA_SM_CLASS_VERSION (hfi1 answers others with StatusBadVersion)
	SAClassVersion   uint8 = 0x80 // OPA_SA_CLASS_VERSION
	IBSAClassVersion uint8 = 0x02 // IB_SA_CLASS_VERSION
	RMPPVersion      uint8 = 1    // IB_MGMT_RMPP_VERSION
)

// Class is a management class (ib_mad.h IB_MGMT_CLASS_*).
type Class uint8

// Management classes used on the fabric.
const (
	ClassSubnLIDRouted     Class = 0x01 // SMP, LID routed
	ClassSubnAdm           Class = 0x03 // SA
	ClassPerfMgmt          Class = 0x04 // PMA
	ClassVEMA              Class = 0x34 // OPA_MGMT_CLASS_INTEL_EMA, a vendor class of range 2
	ClassSubnDirectedRoute Class = 0x81 // SMP, directed route
)

// String names the class, or gives it in hex.
func (c Class) String() string {
	switch c {
	case ClassSubnLIDRouted:
		return "SubnLIDRouted"
	case ClassSubnAdm:
		return "SubnAdm"
	case ClassPerfMgmt:
		return "PerfMgmt"
	case ClassVEMA:
		return "VEMA"
	case ClassSubnDirectedRoute:
		return "SubnDirectedRoute"
	}
	return fmt.Sprintf("Class(0x%02X)", uint8(c))
}

// Method is a MAD method (ib_mad.h IB_MGMT_METHOD_*, ib_sa.h IB_SA_METHOD_*).
type Method uint8

// Methods. Bit 7 (MethodResp) marks a response.
const (
	MethodGet           Method = 0x01
	MethodSet           Method = 0x02
	MethodSend          Method = 0x03
	MethodTrap          Method = 0x05
	MethodReport        Method = 0x06
	MethodTrapRepress   Method = 0x07
	MethodGetTable      Method = 0x12 // SA
	MethodGetTraceTable Method = 0x13 // SA
	MethodGetMulti      Method = 0x14 // SA
	MethodDelete        Method = 0x15 // SA
	MethodResp          Method = 0x80 // response bit
	MethodGetResp       Method = 0x81
	MethodReportResp    Method = 0x86
	MethodGetTableResp  Method = 0x92 // SA
	MethodGetMultiResp  Method = 0x94 // SA
	MethodDeleteResp    Method = 0x95 // SA
)

// IsResponse reports whether the response bit is set.
func (m Method) IsResponse() bool { return m&MethodResp != 0 }

var methodNames = map[Method]string{
	MethodGet: "Get", MethodSet: "Set", MethodSend: "Send", MethodTrap: "Trap",
	MethodReport: "Report", MethodTrapRepress: "TrapRepress", MethodGetTable: "GetTable",
	MethodGetTraceTable: "GetTraceTable", MethodGetMulti: "GetMulti", MethodDelete: "Delete",
	MethodGetResp: "GetResp", MethodReportResp: "ReportResp", MethodGetTableResp: "GetTableResp",
	MethodGetMultiResp: "GetMultiResp", MethodDeleteResp: "DeleteResp",
}

// String names the method, or gives it in hex.
func (m Method) String() string {
	if s, ok := methodNames[m]; ok {
		return s
	}
	return fmt.Sprintf("Method(0x%02X)", uint8(m))
}

// Status is the MAD status word (ib_mad.h IB_MGMT_MAD_STATUS_*). For SMPs
// bit 15 is the directed-route D bit, not part of the status.
type Status uint16

// Status values (docs/linux-compat.md §4.1, §9.2).
const (
	StatusSuccess               Status = 0x0000
	StatusBusy                  Status = 0x0001
	StatusRedirect              Status = 0x0002
	StatusBadVersion            Status = 0x0004 // bad or unsupported class/base version
	StatusUnsupportedMethod     Status = 0x0008
	StatusUnsupportedMethodAttr Status = 0x000C // VEMA: unknown attribute or method, MAC-table Set failure
	StatusInvalidAttrValue      Status = 0x001C // VEMA: vport missing, bad MAC-table range
	StatusDirection             Status = 0x8000 // IB_SMP_DIRECTION: DR SMP on its way back
)

// String gives the status in hex with its meaning.
func (s Status) String() string {
	var name string
	switch s &^ StatusDirection {
	case StatusSuccess:
		name = "success"
	case StatusBusy:
		name = "busy"
	case StatusRedirect:
		name = "redirect"
	case StatusBadVersion:
		name = "bad version"
	case StatusUnsupportedMethod:
		name = "unsupported method"
	case StatusUnsupportedMethodAttr:
		name = "unsupported method/attribute"
	case StatusInvalidAttrValue:
		name = "invalid attribute value"
	default:
		name = "other"
	}
	if s&StatusDirection != 0 {
		name += ", D"
	}
	return fmt.Sprintf("0x%04X (%s)", uint16(s), name)
}

// VEMA attribute IDs (opa_vnic_encap.h OPA_EM_ATTR_*; docs/linux-compat.md §4.4).
// The attribute modifier's low byte is the vport index.
const (
	AttrClassPortInfo           uint16 = 0x0001
	AttrNotice                  uint16 = 0x0002 // traps (IB_SMP_ATTR_NOTICE)
	AttrVESWPortInfo            uint16 = 0x0011
	AttrVESWPortMACEntries      uint16 = 0x0012
	AttrIfaceUcastMACs          uint16 = 0x0013
	AttrIfaceMcastMACs          uint16 = 0x0014
	AttrDeleteVESW              uint16 = 0x0015
	AttrVESWPortSummaryCounters uint16 = 0x0020
	AttrVESWPortErrorCounters   uint16 = 0x0022
)

// SMP attribute IDs (opa_smi.h OPA_ATTRIB_ID_*, ib_smi.h; docs/linux-compat.md §9.5).
const (
	SMPAttrNotice             uint16 = 0x0002
	SMPAttrNodeDescription    uint16 = 0x0010
	SMPAttrNodeInfo           uint16 = 0x0011
	SMPAttrSwitchInfo         uint16 = 0x0012
	SMPAttrPortInfo           uint16 = 0x0015
	SMPAttrPartitionTable     uint16 = 0x0016
	SMPAttrSLToSCMap          uint16 = 0x0017
	SMPAttrVLArbitration      uint16 = 0x0018
	SMPAttrSMInfo             uint16 = 0x0020
	SMPAttrCableInfo          uint16 = 0x0032
	SMPAttrAggregate          uint16 = 0x0080
	SMPAttrSCToSLMap          uint16 = 0x0082
	SMPAttrSCToVLrMap         uint16 = 0x0083
	SMPAttrSCToVLtMap         uint16 = 0x0084
	SMPAttrSCToVLntMap        uint16 = 0x0085
	SMPAttrPortStateInfo      uint16 = 0x0087
	SMPAttrBufferControlTable uint16 = 0x008A
)

// SA attribute IDs (ib_sa.h; docs/linux-compat.md §10.1).
const (
	SAAttrClassPortInfo    uint16 = 0x0001
	SAAttrNotice           uint16 = 0x0002
	SAAttrInformInfo       uint16 = 0x0003
	SAAttrNodeRecord       uint16 = 0x0011
	SAAttrPortInfoRecord   uint16 = 0x0012
	SAAttrLinkRecord       uint16 = 0x0020
	SAAttrServiceRecord    uint16 = 0x0031
	SAAttrPKeyTableRecord  uint16 = 0x0033
	SAAttrPathRecord       uint16 = 0x0035
	SAAttrMCMemberRecord   uint16 = 0x0038
	SAAttrMultiPathRecord  uint16 = 0x003A
	SAAttrInformInfoRecord uint16 = 0x00F3
)

// OUI is an IEEE organisationally unique identifier as it sits in a MAD.
type OUI [3]byte

// IntelOUI is 00-06-6A, carried in every VEMA MAD (bytes 37-39) and notice.
var IntelOUI = OUI{0x00, 0x06, 0x6A}

// String formats o as xx-xx-xx.
func (o OUI) String() string { return fmt.Sprintf("%02X-%02X-%02X", o[0], o[1], o[2]) }

// Sizes in bytes (ib_mad.h, opa_smi.h, opa_vnic_encap.h).
const (
	MADSize         = 2048 // OPA_MGMT_MAD_SIZE
	IBMADSize       = 256  // IB_MGMT_MAD_SIZE
	MADHeaderLen    = 24   // IB_MGMT_MAD_HDR
	RMPPHeaderLen   = 12
	VendorHeaderLen = 40                            // IB_MGMT_VENDOR_HDR
	VEMADataLen     = MADSize - VendorHeaderLen     // OPA_VNIC_EMA_DATA, 2008
	TrapDataLen     = 232                           // IB_MGMT_MAD_DATA: what a VEMA trap carries after its header
	TrapMADLen      = VendorHeaderLen + TrapDataLen // 272 on the wire

	SMPLIDHeaderLen = 32   // opa_get_smp_header_size, LID routed
	SMPDRHeaderLen  = 176  // opa_get_smp_header_size, directed route
	SMPLIDDataLen   = 2016 // OPA_SMP_LID_DATA_SIZE
	SMPDRDataLen    = 1872 // OPA_SMP_DR_DATA_SIZE
	SMPMaxPathHops  = 64   // OPA_SMP_MAX_PATH_HOPS
	drRouteLen      = SMPDRHeaderLen - SMPLIDHeaderLen

	SAHeaderLen = 56                      // IB_MGMT_SA_HDR
	SADataLen   = MADSize - SAHeaderLen   // 1992, OPA SA data
	IBSADataLen = IBMADSize - SAHeaderLen // 200, IB_MGMT_SA_DATA

	ClassPortInfoLen   = 80
	VESWInfoLen        = 152
	PerVESWPortInfoLen = 128
	VESWPortInfoLen    = VESWInfoLen + PerVESWPortInfoLen // 280
	MACTableHeaderLen  = 8
	MACTableEntryLen   = 16
	IfaceMACsHeaderLen = 8
	SummaryCountersLen = 360
	ErrorCountersLen   = 304
	NoticeLen          = 96 // opa_vnic_notice_attr and opa_mad_notice_attr alike
	VESWPortTrapLen    = 16
	NodeInfoLen        = 44
	NodeDescriptionLen = 64
	PortInfoLen        = 242
	PathRecordLen      = 64 // OPA and IB alike
)

// VEMAAttrName names a VEMA attribute ID for logs ("VESWPortInfo"), or gives
// it in hex.
func VEMAAttrName(id uint16) string {
	switch id {
	case AttrClassPortInfo:
		return "ClassPortInfo"
	case AttrNotice:
		return "Notice"
	case AttrVESWPortInfo:
		return "VESWPortInfo"
	case AttrVESWPortMACEntries:
		return "VESWPortMACEntries"
	case AttrIfaceUcastMACs:
		return "IfaceUcastMACs"
	case AttrIfaceMcastMACs:
		return "IfaceMcastMACs"
	case AttrDeleteVESW:
		return "DeleteVESW"
	case AttrVESWPortSummaryCounters:
		return "VESWPortSummaryCounters"
	case AttrVESWPortErrorCounters:
		return "VESWPortErrorCounters"
	}
	return fmt.Sprintf("0x%04X", id)
}
