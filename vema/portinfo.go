package vema

import "github.com/opavnic/opavnic/encap"

// Port states, bits 3:0 of PortInfo byte 19 (enum ib_port_state;
// docs/linux-compat.md §9.8).
const (
	PortStateNOP         uint8 = 0 // no change on Set
	PortStateDown        uint8 = 1
	PortStateInit        uint8 = 2
	PortStateArmed       uint8 = 3
	PortStateActive      uint8 = 4
	PortStateActiveDefer uint8 = 5
)

// Port physical states, bits 7:4 of PortInfo byte 19 (enum opa_port_phys_state).
const (
	PhysStateNOP               uint8 = 0
	PhysStatePolling           uint8 = 2
	PhysStateDisabled          uint8 = 3
	PhysStateTraining          uint8 = 4
	PhysStateLinkUp            uint8 = 5
	PhysStateLinkErrorRecovery uint8 = 6
	PhysStatePhyTest           uint8 = 7
	PhysStateOffline           uint8 = 9
	PhysStateTest              uint8 = 11
)

// PortInfo ib_cap_mask bits (enum ib_port_capability_mask_bits).
const (
	CapIsSM                          uint32 = 1 << 1
	CapIsNoticeSupported             uint32 = 1 << 2
	CapIsTrapSupported               uint32 = 1 << 3
	CapIsAutomaticMigrationSupported uint32 = 1 << 5
	CapIsSLMappingSupported          uint32 = 1 << 6
	CapIsLEDInfoSupported            uint32 = 1 << 9
	CapIsSMDisabled                  uint32 = 1 << 10
	CapIsSystemImageGUIDSupported    uint32 = 1 << 11
	CapIsCMSupported                 uint32 = 1 << 16
	CapIsDeviceManagementSupported   uint32 = 1 << 19
	CapIsDRNoticeSupported           uint32 = 1 << 21
	CapIsCapMaskNoticeSupported      uint32 = 1 << 22
	CapIsClientReregSupported        uint32 = 1 << 25
	CapIsOtherLocalChangesSupported  uint32 = 1 << 26
)

// PortInfo opa_cap_mask ("CapabilityMask3") bits (opa_port_info.h OPA_CAP_MASK3_*).
const (
	Cap3IsVLrSupported             uint16 = 1 << 0
	Cap3IsVLMarkerSupported        uint16 = 1 << 1
	Cap3IsSharedSpaceSupported     uint16 = 1 << 3
	Cap3IsPassThroughSupported     uint16 = 1 << 4
	Cap3IsAddrRangeConfigSupported uint16 = 1 << 5
	Cap3IsAsyncSC2VLSupported      uint16 = 1 << 6
	Cap3IsSnoopSupported           uint16 = 1 << 7
	// Cap3IsEthOnFabricSupported is set on every port by opa_vnic at load.
	Cap3IsEthOnFabricSupported uint16 = 1 << 13
)

// PortInfo bit-field masks (opa_port_info.h enum port_info_field_masks).
const (
	piMaskPortState  = 0x0F
	piMaskPhysState  = 0xF0
	piMaskMKeyProt   = 0xC0
	piMaskLMC        = 0x0F
	piMaskSMSL       = 0x1F
	piMaskQPN        = 0x00FFFFFF
	piMaskClientRrg  = 0x80
	piMaskSubnetTime = 0x1F
)

// PortInfo is struct opa_port_info (242 bytes; docs/linux-compat.md §9.7).
// Every kernel field has its own Go field at its offset, in order; a byte
// holding several bit fields is kept whole and read through the accessors.
//
//	off size field                     off size field
//	  0    4 lid                        88    4 reserved4
//	  4    4 flow_control_mask          92    4 port_error_action
//	  8    1 vl.res                     96    1 pass_through.egress_port
//	  9    1 vl.cap                     97    1 pass_through.res_drctl
//	 10    2 vl.high_limit              98    2 mkey_lease_period
//	 12    2 vl.preempt_limit          100    4 buffer_units
//	 14    1 vl.arb_high_cap           104    4 reserved5
//	 15    1 vl.arb_low_cap            108    4 sm_lid
//	 16    1 port_states.reserved      112    8 mkey
//	 17    1 ledenable_offlinereason   120    8 subnet_prefix
//	 18    1 port_states.reserved2     128   16 neigh_mtu.pvlx_to_mtu
//	 19    1 portphysstate_portstate   144   32 xmit_q[].vlstall_hoqlife
//	 20    1 port_phys_conf            176   16 ipaddr_ipv6
//	 21    1 collectivemask_mcastmask  192    4 ipaddr_ipv4
//	 22    1 mkeyprotect_lmc           196   12 reserved6, 7, 8
//	 23    1 smsl                      208    8 neigh_node_guid
//	 24    1 partenforce_filterraw     216    4 ib_cap_mask
//	 25    1 operational_vls           220    2 reserved9
//	 26    2 pkey_8b                   222    2 opa_cap_mask
//	 28    2 pkey_10b                  224    4 reserved10
//	 30    2 mkey_violations           228    2 overall_buffer_space
//	 32    2 pkey_violations           230    2 reserved11
//	 34    2 qkey_violations           232    2 diag_code
//	 36    4 sm_trap_qp                234    1 replay_depth.buffer
//	 40    4 sa_qp                     235    1 replay_depth.wire
//	 44    1 neigh_port_num            236    1 port_neigh_mode
//	 45    1 link_down_reason          237    1 mtucap
//	 46    1 neigh_link_down_reason    238    1 resptimevalue
//	 47    1 clientrereg_subnettimeout 239    1 local_port_num
//	 48    6 link_speed (sup/en/act)   240    1 reserved12
//	 54    6 link_width (sup/en/act)   241    1 reserved13
//	 60    8 link_width_downgrade (sup/en/tx/rx)
//	 68    2 port_link_mode
//	 70    2 port_ltp_crc_mode
//	 72    2 port_mode
//	 74    4 port_packet_format (sup/en)
//	 78    2 flit_control.interleave
//	 80   8 flit_control.preemption (min_initial, min_tail, large, small, max_small, limit)
type PortInfo struct {
	LID                         encap.LID
	FlowControlMask             uint32
	VLRes                       uint8
	VLCap                       uint8
	VLHighLimit                 uint16
	VLPreemptLimit              uint16
	VLArbHighCap                uint8
	VLArbLowCap                 uint8
	PortStatesReserved          uint8
	LEDEnableOfflineReason      uint8
	PortStatesReserved2         uint8
	PortPhysStatePortState      uint8
	PortPhysConf                uint8
	CollectiveMaskMulticastMask uint8
	MKeyProtectLMC              uint8
	SMSL                        uint8
	PartEnforceFilterRaw        uint8
	OperationalVLs              uint8
	PKey8B                      uint16
	PKey10B                     uint16
	MKeyViolations              uint16
	PKeyViolations              uint16
	QKeyViolations              uint16
	SMTrapQP                    uint32
	SAQP                        uint32
	NeighPortNum                uint8
	LinkDownReason              uint8
	NeighLinkDownReason         uint8
	ClientReregSubnetTimeout    uint8
	LinkSpeedSupported          uint16
	LinkSpeedEnabled            uint16
	LinkSpeedActive             uint16
	LinkWidthSupported          uint16
	LinkWidthEnabled            uint16
	LinkWidthActive             uint16
	LinkWidthDowngradeSupported uint16
	LinkWidthDowngradeEnabled   uint16
	LinkWidthDowngradeTxActive  uint16
	LinkWidthDowngradeRxActive  uint16
	PortLinkMode                uint16
	PortLTPCRCMode              uint16
	PortMode                    uint16
	PacketFormatSupported       uint16
	PacketFormatEnabled         uint16
	FlitInterleave              uint16
	FlitPreemptMinInitial       uint16
	FlitPreemptMinTail          uint16
	FlitPreemptLargePktLimit    uint8
	FlitPreemptSmallPktLimit    uint8
	FlitPreemptMaxSmallPktLimit uint8
	FlitPreemptionLimit         uint8
	Reserved4                   [4]byte
	PortErrorAction             uint32
	PassThroughEgressPort       uint8
	PassThroughResDRCtl         uint8
	MKeyLeasePeriod             uint16
	BufferUnits                 uint32
	Reserved5                   [4]byte
	SMLID                       encap.LID
	MKey                        uint64
	SubnetPrefix                uint64
	NeighMTU                    [16]uint8
	XmitQ                       [32]uint8
	IPv6Addr                    [16]byte
	IPv4Addr                    [4]byte
	Reserved6                   [4]byte
	Reserved7                   [4]byte
	Reserved8                   [4]byte
	NeighNodeGUID               uint64
	IBCapMask                   uint32
	Reserved9                   [2]byte
	OPACapMask                  uint16
	Reserved10                  [4]byte
	OverallBufferSpace          uint16
	Reserved11                  [2]byte
	DiagCode                    uint16
	ReplayDepthBuffer           uint8
	ReplayDepthWire             uint8
	PortNeighMode               uint8
	MTUCap                      uint8
	RespTimeValue               uint8
	LocalPortNum                uint8
	Reserved12                  uint8
	Reserved13                  uint8
}

// PortState returns the logical state, bits 3:0 of byte 19.
func (p *PortInfo) PortState() uint8 { return p.PortPhysStatePortState & piMaskPortState }

// SetPortState sets bits 3:0 of byte 19 (s masked to 4 bits).
func (p *PortInfo) SetPortState(s uint8) {
	p.PortPhysStatePortState = p.PortPhysStatePortState&piMaskPhysState | s&piMaskPortState
}

// PhysState returns the physical state, bits 7:4 of byte 19.
func (p *PortInfo) PhysState() uint8 { return p.PortPhysStatePortState >> 4 }

// SetPhysState sets bits 7:4 of byte 19 (s masked to 4 bits).
func (p *PortInfo) SetPhysState(s uint8) {
	p.PortPhysStatePortState = p.PortPhysStatePortState&piMaskPortState | (s<<4)&piMaskPhysState
}

// MKeyProtect returns bits 7:6 of byte 22.
func (p *PortInfo) MKeyProtect() uint8 { return (p.MKeyProtectLMC & piMaskMKeyProt) >> 6 }

// LMC returns bits 3:0 of byte 22.
func (p *PortInfo) LMC() uint8 { return p.MKeyProtectLMC & piMaskLMC }

// SMServiceLevel returns the SM's service level, bits 4:0 of byte 23 (smsl).
func (p *PortInfo) SMServiceLevel() uint8 { return p.SMSL & piMaskSMSL }

// SMTrapQPN returns the QP traps go to, bits 23:0 of sm_trap_qp.
func (p *PortInfo) SMTrapQPN() uint32 { return p.SMTrapQP & piMaskQPN }

// SAQPN returns the SA's QP, bits 23:0 of sa_qp.
func (p *PortInfo) SAQPN() uint32 { return p.SAQP & piMaskQPN }

// SetSMTrapQPN sets bits 23:0 of sm_trap_qp (q masked to 24 bits).
func (p *PortInfo) SetSMTrapQPN(q uint32) { p.SMTrapQP = p.SMTrapQP&^piMaskQPN | q&piMaskQPN }

// SetSAQPN sets bits 23:0 of sa_qp (q masked to 24 bits).
func (p *PortInfo) SetSAQPN(q uint32) { p.SAQP = p.SAQP&^piMaskQPN | q&piMaskQPN }

// ClientReregister reports bit 7 of byte 47.
func (p *PortInfo) ClientReregister() bool { return p.ClientReregSubnetTimeout&piMaskClientRrg != 0 }

// SubnetTimeout returns bits 4:0 of byte 47.
func (p *PortInfo) SubnetTimeout() uint8 { return p.ClientReregSubnetTimeout & piMaskSubnetTime }

// IsSM reports the IsSM capability (ib_cap_mask bit 1), which hfi1 requires
// before it accepts Trap SMPs.
func (p *PortInfo) IsSM() bool { return p.IBCapMask&CapIsSM != 0 }

// AppendBinary appends the 242-byte PortInfo to b.
func (p *PortInfo) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, uint32(p.LID))                                                  // 0
	b = be.AppendUint32(b, p.FlowControlMask)                                              // 4
	b = append(b, p.VLRes, p.VLCap)                                                        // 8, 9
	b = be.AppendUint16(b, p.VLHighLimit)                                                  // 10
	b = be.AppendUint16(b, p.VLPreemptLimit)                                               // 12
	b = append(b, p.VLArbHighCap, p.VLArbLowCap)                                           // 14, 15
	b = append(b, p.PortStatesReserved, p.LEDEnableOfflineReason)                          // 16, 17
	b = append(b, p.PortStatesReserved2, p.PortPhysStatePortState)                         // 18, 19
	b = append(b, p.PortPhysConf, p.CollectiveMaskMulticastMask, p.MKeyProtectLMC, p.SMSL) // 20-23
	b = append(b, p.PartEnforceFilterRaw, p.OperationalVLs)                                // 24, 25
	b = be.AppendUint16(b, p.PKey8B)                                                       // 26
	b = be.AppendUint16(b, p.PKey10B)                                                      // 28
	b = be.AppendUint16(b, p.MKeyViolations)                                               // 30
	b = be.AppendUint16(b, p.PKeyViolations)                                               // 32
	b = be.AppendUint16(b, p.QKeyViolations)                                               // 34
	b = be.AppendUint32(b, p.SMTrapQP)                                                     // 36
	b = be.AppendUint32(b, p.SAQP)                                                         // 40
	b = append(b, p.NeighPortNum, p.LinkDownReason)                                        // 44, 45
	b = append(b, p.NeighLinkDownReason, p.ClientReregSubnetTimeout)                       // 46, 47
	b = be.AppendUint16(b, p.LinkSpeedSupported)                                           // 48
	b = be.AppendUint16(b, p.LinkSpeedEnabled)                                             // 50
	b = be.AppendUint16(b, p.LinkSpeedActive)                                              // 52
	b = be.AppendUint16(b, p.LinkWidthSupported)                                           // 54
	b = be.AppendUint16(b, p.LinkWidthEnabled)                                             // 56
	b = be.AppendUint16(b, p.LinkWidthActive)                                              // 58
	b = be.AppendUint16(b, p.LinkWidthDowngradeSupported)                                  // 60
	b = be.AppendUint16(b, p.LinkWidthDowngradeEnabled)                                    // 62
	b = be.AppendUint16(b, p.LinkWidthDowngradeTxActive)                                   // 64
	b = be.AppendUint16(b, p.LinkWidthDowngradeRxActive)                                   // 66
	b = be.AppendUint16(b, p.PortLinkMode)                                                 // 68
	b = be.AppendUint16(b, p.PortLTPCRCMode)                                               // 70
	b = be.AppendUint16(b, p.PortMode)                                                     // 72
	b = be.AppendUint16(b, p.PacketFormatSupported)                                        // 74
	b = be.AppendUint16(b, p.PacketFormatEnabled)                                          // 76
	b = be.AppendUint16(b, p.FlitInterleave)                                               // 78
	b = be.AppendUint16(b, p.FlitPreemptMinInitial)                                        // 80
	b = be.AppendUint16(b, p.FlitPreemptMinTail)                                           // 82
	b = append(b, p.FlitPreemptLargePktLimit, p.FlitPreemptSmallPktLimit)                  // 84, 85
	b = append(b, p.FlitPreemptMaxSmallPktLimit, p.FlitPreemptionLimit)                    // 86, 87
	b = append(b, p.Reserved4[:]...)                                                       // 88
	b = be.AppendUint32(b, p.PortErrorAction)                                              // 92
	b = append(b, p.PassThroughEgressPort, p.PassThroughResDRCtl)                          // 96, 97
	b = be.AppendUint16(b, p.MKeyLeasePeriod)                                              // 98
	b = be.AppendUint32(b, p.BufferUnits)                                                  // 100
	b = append(b, p.Reserved5[:]...)                                                       // 104
	b = be.AppendUint32(b, uint32(p.SMLID))                                                // 108
	b = be.AppendUint64(b, p.MKey)                                                         // 112
	b = be.AppendUint64(b, p.SubnetPrefix)                                                 // 120
	b = append(b, p.NeighMTU[:]...)                                                        // 128
	b = append(b, p.XmitQ[:]...)                                                           // 144
	b = append(b, p.IPv6Addr[:]...)                                                        // 176
	b = append(b, p.IPv4Addr[:]...)                                                        // 192
	b = append(b, p.Reserved6[:]...)                                                       // 196
	b = append(b, p.Reserved7[:]...)                                                       // 200
	b = append(b, p.Reserved8[:]...)                                                       // 204
	b = be.AppendUint64(b, p.NeighNodeGUID)                                                // 208
	b = be.AppendUint32(b, p.IBCapMask)                                                    // 216
	b = append(b, p.Reserved9[:]...)                                                       // 220
	b = be.AppendUint16(b, p.OPACapMask)                                                   // 222
	b = append(b, p.Reserved10[:]...)                                                      // 224
	b = be.AppendUint16(b, p.OverallBufferSpace)                                           // 228
	b = append(b, p.Reserved11[:]...)                                                      // 230
	b = be.AppendUint16(b, p.DiagCode)                                                     // 232
	b = append(b, p.ReplayDepthBuffer, p.ReplayDepthWire, p.PortNeighMode, p.MTUCap)       // 234-237
	b = append(b, p.RespTimeValue, p.LocalPortNum, p.Reserved12, p.Reserved13)             // 238-241
	return b, nil
}

// MarshalBinary returns the 242-byte PortInfo.
func (p *PortInfo) MarshalBinary() ([]byte, error) { return marshal(PortInfoLen, p.AppendBinary) }

// UnmarshalBinary decodes the first 242 bytes of b.
func (p *PortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < PortInfoLen {
		return errShort("PortInfo", PortInfoLen, len(b))
	}
	d := dec{b}
	p.LID = encap.LID(d.u32())
	p.FlowControlMask = d.u32()
	p.VLRes = d.u8()
	p.VLCap = d.u8()
	p.VLHighLimit = d.u16()
	p.VLPreemptLimit = d.u16()
	p.VLArbHighCap = d.u8()
	p.VLArbLowCap = d.u8()
	p.PortStatesReserved = d.u8()
	p.LEDEnableOfflineReason = d.u8()
	p.PortStatesReserved2 = d.u8()
	p.PortPhysStatePortState = d.u8()
	p.PortPhysConf = d.u8()
	p.CollectiveMaskMulticastMask = d.u8()
	p.MKeyProtectLMC = d.u8()
	p.SMSL = d.u8()
	p.PartEnforceFilterRaw = d.u8()
	p.OperationalVLs = d.u8()
	p.PKey8B = d.u16()
	p.PKey10B = d.u16()
	p.MKeyViolations = d.u16()
	p.PKeyViolations = d.u16()
	p.QKeyViolations = d.u16()
	p.SMTrapQP = d.u32()
	p.SAQP = d.u32()
	p.NeighPortNum = d.u8()
	p.LinkDownReason = d.u8()
	p.NeighLinkDownReason = d.u8()
	p.ClientReregSubnetTimeout = d.u8()
	p.LinkSpeedSupported = d.u16()
	p.LinkSpeedEnabled = d.u16()
	p.LinkSpeedActive = d.u16()
	p.LinkWidthSupported = d.u16()
	p.LinkWidthEnabled = d.u16()
	p.LinkWidthActive = d.u16()
	p.LinkWidthDowngradeSupported = d.u16()
	p.LinkWidthDowngradeEnabled = d.u16()
	p.LinkWidthDowngradeTxActive = d.u16()
	p.LinkWidthDowngradeRxActive = d.u16()
	p.PortLinkMode = d.u16()
	p.PortLTPCRCMode = d.u16()
	p.PortMode = d.u16()
	p.PacketFormatSupported = d.u16()
	p.PacketFormatEnabled = d.u16()
	p.FlitInterleave = d.u16()
	p.FlitPreemptMinInitial = d.u16()
	p.FlitPreemptMinTail = d.u16()
	p.FlitPreemptLargePktLimit = d.u8()
	p.FlitPreemptSmallPktLimit = d.u8()
	p.FlitPreemptMaxSmallPktLimit = d.u8()
	p.FlitPreemptionLimit = d.u8()
	d.read(p.Reserved4[:])
	p.PortErrorAction = d.u32()
	p.PassThroughEgressPort = d.u8()
	p.PassThroughResDRCtl = d.u8()
	p.MKeyLeasePeriod = d.u16()
	p.BufferUnits = d.u32()
	d.read(p.Reserved5[:])
	p.SMLID = encap.LID(d.u32())
	p.MKey = d.u64()
	p.SubnetPrefix = d.u64()
	d.read(p.NeighMTU[:])
	d.read(p.XmitQ[:])
	d.read(p.IPv6Addr[:])
	d.read(p.IPv4Addr[:])
	d.read(p.Reserved6[:])
	d.read(p.Reserved7[:])
	d.read(p.Reserved8[:])
	p.NeighNodeGUID = d.u64()
	p.IBCapMask = d.u32()
	d.read(p.Reserved9[:])
	p.OPACapMask = d.u16()
	d.read(p.Reserved10[:])
	p.OverallBufferSpace = d.u16()
	d.read(p.Reserved11[:])
	p.DiagCode = d.u16()
	p.ReplayDepthBuffer = d.u8()
	p.ReplayDepthWire = d.u8()
	p.PortNeighMode = d.u8()
	p.MTUCap = d.u8()
	p.RespTimeValue = d.u8()
	p.LocalPortNum = d.u8()
	p.Reserved12 = d.u8()
	p.Reserved13 = d.u8()
	return nil
}
