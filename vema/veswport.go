package vema

import "github.com/opavnic/opavnic/encap"

// VESWPortInfo values (opa_vnic_encap.h, opa_vnic_internal.h).
const (
	StateDropAll    uint8 = 1 // OPA_VNIC_STATE_DROP_ALL (config_state, oper_state)
	StateForwarding uint8 = 3 // OPA_VNIC_STATE_FORWARDING

	EthLinkUp   uint8 = 1 // OPA_VNIC_ETH_LINK_UP (eth_link_status)
	EthLinkDown uint8 = 2 // OPA_VNIC_ETH_LINK_DOWN

	MaxDefPorts = 16 // OPA_VESW_MAX_NUM_DEF_PORT: u_ucast_dlid entries
	NumPCP      = 8  // OPA_VNIC_MAX_NUM_PCP

	MACTableMaxEntries = 2048 // OPA_VNIC_MAC_TBL_MAX_ENTRIES: max_mac_tbl_ent
	MaxSMACEntries     = 256  // OPA_VNIC_MAX_SMAC_LIMIT: max_smac_ent
	DefaultEthMTU      = 1500 // power-on eth_mtu (ETH_DATA_LEN)
)

// VESWInfo is the switch half of VESWPortInfo, struct opa_vesw_info (152
// bytes; docs/linux-compat.md §4.5). Every field is writable by a Set, and
// the reserved bytes are stored and echoed.
//
//	off size field
//	  0    2 fabric_id       (10 bits by comment)
//	  2    2 vesw_id         (12 bits by comment and on receive)
//	  4    6 rsvd0
//	 10    2 def_port_mask
//	 12    2 rsvd1
//	 14    2 pkey
//	 16    4 rsvd2
//	 20    4 u_mcast_dlid
//	 24   64 u_ucast_dlid[16]
//	 88    4 rc              (3-bit fields at encap.RC* offsets)
//	 92   56 rsvd3
//	148    2 eth_mtu
//	150    2 rsvd4
//
// The DLIDs are kept as the 32-bit values on the wire; the kernel truncates
// them to 24 bits when it builds a header.
type VESWInfo struct {
	FabricID    uint16
	VESWID      encap.VESWID
	Rsvd0       [6]byte
	DefPortMask uint16
	Rsvd1       [2]byte
	PKey        encap.PKey
	Rsvd2       [4]byte
	UMcastDLID  encap.LID
	UUcastDLID  [MaxDefPorts]encap.LID
	RC          uint32
	Rsvd3       [56]byte
	EthMTU      uint16
	Rsvd4       [2]byte
}

// AppendBinary appends the 152-byte opa_vesw_info to b.
func (v *VESWInfo) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, v.FabricID)           // 0
	b = be.AppendUint16(b, uint16(v.VESWID))     // 2
	b = append(b, v.Rsvd0[:]...)                 // 4
	b = be.AppendUint16(b, v.DefPortMask)        // 10
	b = append(b, v.Rsvd1[:]...)                 // 12
	b = be.AppendUint16(b, uint16(v.PKey))       // 14
	b = append(b, v.Rsvd2[:]...)                 // 16
	b = be.AppendUint32(b, uint32(v.UMcastDLID)) // 20
	for _, l := range v.UUcastDLID {             // 24
		b = be.AppendUint32(b, uint32(l))
	}
	b = be.AppendUint32(b, v.RC)         // 88
	b = append(b, v.Rsvd3[:]...)         // 92
	b = be.AppendUint16(b, v.EthMTU)     // 148
	return append(b, v.Rsvd4[:]...), nil // 150
}

// MarshalBinary returns the 152-byte opa_vesw_info.
func (v *VESWInfo) MarshalBinary() ([]byte, error) { return marshal(VESWInfoLen, v.AppendBinary) }

// UnmarshalBinary decodes the first 152 bytes of b.
func (v *VESWInfo) UnmarshalBinary(b []byte) error {
	if len(b) < VESWInfoLen {
		return errShort("VESWInfo", VESWInfoLen, len(b))
	}
	v.decode(&dec{b})
	return nil
}

func (v *VESWInfo) decode(d *dec) {
	v.FabricID = d.u16()
	v.VESWID = encap.VESWID(d.u16())
	d.read(v.Rsvd0[:])
	v.DefPortMask = d.u16()
	d.read(v.Rsvd1[:])
	v.PKey = encap.PKey(d.u16())
	d.read(v.Rsvd2[:])
	v.UMcastDLID = encap.LID(d.u32())
	for i := range v.UUcastDLID {
		v.UUcastDLID[i] = encap.LID(d.u32())
	}
	v.RC = d.u32()
	d.read(v.Rsvd3[:])
	v.EthMTU = d.u16()
	d.read(v.Rsvd4[:])
}

// PerVESWPortInfo is the port half of VESWPortInfo, struct
// opa_per_veswport_info (128 bytes; docs/linux-compat.md §4.5). It starts at
// byte 152 of VESWPortInfo.
//
//	off size field              Set writes it?
//	  0    4 port_num           yes
//	  4    1 eth_link_status    no  (EthLinkUp, EthLinkDown)
//	  5    3 rsvd0              stored and echoed
//	  8    6 base_mac_addr      yes
//	 14    1 config_state       yes (StateDropAll, StateForwarding)
//	 15    1 oper_state         no
//	 16    2 max_mac_tbl_ent    no
//	 18    2 max_smac_ent       no
//	 20    4 mac_tbl_digest     no  (set by VESWPortMACEntries)
//	 24    4 rsvd1              stored
//	 28    4 encap_slid         yes
//	 32    8 pcp_to_sc_uc[8]    yes
//	 40    8 pcp_to_vl_uc[8]    yes
//	 48    8 pcp_to_sc_mc[8]    yes
//	 56    8 pcp_to_vl_mc[8]    yes
//	 64    1 non_vlan_sc_uc     yes
//	 65    1 non_vlan_vl_uc     yes
//	 66    1 non_vlan_sc_mc     yes
//	 67    1 non_vlan_vl_mc     yes
//	 68   48 rsvd2              stored
//	116    2 uc_macs_gen_count  no
//	118    2 mc_macs_gen_count  no
//	120    8 rsvd3              stored
type PerVESWPortInfo struct {
	PortNum        uint32
	EthLinkStatus  uint8
	Rsvd0          [3]byte
	BaseMACAddr    [6]byte
	ConfigState    uint8
	OperState      uint8
	MaxMACTblEnt   uint16
	MaxSMACEnt     uint16
	MACTblDigest   uint32
	Rsvd1          [4]byte
	EncapSLID      encap.LID
	PCPToSCUC      [NumPCP]uint8
	PCPToVLUC      [NumPCP]uint8
	PCPToSCMC      [NumPCP]uint8
	PCPToVLMC      [NumPCP]uint8
	NonVLANSCUC    uint8
	NonVLANVLUC    uint8
	NonVLANSCMC    uint8
	NonVLANVLMC    uint8
	Rsvd2          [48]byte
	UCMACsGenCount uint16
	MCMACsGenCount uint16
	Rsvd3          [8]byte
}

// AppendBinary appends the 128-byte opa_per_veswport_info to b.
func (p *PerVESWPortInfo) AppendBinary(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, p.PortNum)                                         // 0
	b = append(b, p.EthLinkStatus)                                            // 4
	b = append(b, p.Rsvd0[:]...)                                              // 5
	b = append(b, p.BaseMACAddr[:]...)                                        // 8
	b = append(b, p.ConfigState, p.OperState)                                 // 14, 15
	b = be.AppendUint16(b, p.MaxMACTblEnt)                                    // 16
	b = be.AppendUint16(b, p.MaxSMACEnt)                                      // 18
	b = be.AppendUint32(b, p.MACTblDigest)                                    // 20
	b = append(b, p.Rsvd1[:]...)                                              // 24
	b = be.AppendUint32(b, uint32(p.EncapSLID))                               // 28
	b = append(b, p.PCPToSCUC[:]...)                                          // 32
	b = append(b, p.PCPToVLUC[:]...)                                          // 40
	b = append(b, p.PCPToSCMC[:]...)                                          // 48
	b = append(b, p.PCPToVLMC[:]...)                                          // 56
	b = append(b, p.NonVLANSCUC, p.NonVLANVLUC, p.NonVLANSCMC, p.NonVLANVLMC) // 64-67
	b = append(b, p.Rsvd2[:]...)                                              // 68
	b = be.AppendUint16(b, p.UCMACsGenCount)                                  // 116
	b = be.AppendUint16(b, p.MCMACsGenCount)                                  // 118
	return append(b, p.Rsvd3[:]...), nil                                      // 120
}

// MarshalBinary returns the 128-byte opa_per_veswport_info.
func (p *PerVESWPortInfo) MarshalBinary() ([]byte, error) {
	return marshal(PerVESWPortInfoLen, p.AppendBinary)
}

// UnmarshalBinary decodes the first 128 bytes of b.
func (p *PerVESWPortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < PerVESWPortInfoLen {
		return errShort("PerVESWPortInfo", PerVESWPortInfoLen, len(b))
	}
	p.decode(&dec{b})
	return nil
}

func (p *PerVESWPortInfo) decode(d *dec) {
	p.PortNum = d.u32()
	p.EthLinkStatus = d.u8()
	d.read(p.Rsvd0[:])
	d.read(p.BaseMACAddr[:])
	p.ConfigState = d.u8()
	p.OperState = d.u8()
	p.MaxMACTblEnt = d.u16()
	p.MaxSMACEnt = d.u16()
	p.MACTblDigest = d.u32()
	d.read(p.Rsvd1[:])
	p.EncapSLID = encap.LID(d.u32())
	d.read(p.PCPToSCUC[:])
	d.read(p.PCPToVLUC[:])
	d.read(p.PCPToSCMC[:])
	d.read(p.PCPToVLMC[:])
	p.NonVLANSCUC = d.u8()
	p.NonVLANVLUC = d.u8()
	p.NonVLANSCMC = d.u8()
	p.NonVLANVLMC = d.u8()
	d.read(p.Rsvd2[:])
	p.UCMACsGenCount = d.u16()
	p.MCMACsGenCount = d.u16()
	d.read(p.Rsvd3[:])
}

// VESWPortInfo is the VESWPortInfo attribute (0x0011), struct
// opa_veswport_info: VESWInfo at byte 0, PerVESWPortInfo at byte 152, 280
// bytes. DeleteVESW (0x0015) answers with it too.
type VESWPortInfo struct {
	VESW  VESWInfo
	VPort PerVESWPortInfo
}

// PowerOnVESWPortInfo returns the power-on values the VEMA reports for a
// vport that does not exist and restores on DeleteVESW (vema_get_pod_values):
// all zero except max_mac_tbl_ent 2048, max_smac_ent 256, config_state and
// oper_state DROP_ALL, eth_mtu 1500.
func PowerOnVESWPortInfo() VESWPortInfo {
	var v VESWPortInfo
	v.VPort.MaxMACTblEnt = MACTableMaxEntries
	v.VPort.MaxSMACEnt = MaxSMACEntries
	v.VPort.OperState = StateDropAll
	v.VPort.ConfigState = StateDropAll
	v.VESW.EthMTU = DefaultEthMTU
	return v
}

// AppendBinary appends the 280-byte VESWPortInfo to b.
func (v *VESWPortInfo) AppendBinary(b []byte) ([]byte, error) {
	b, _ = v.VESW.AppendBinary(b)  // 0
	return v.VPort.AppendBinary(b) // 152
}

// MarshalBinary returns the 280-byte VESWPortInfo.
func (v *VESWPortInfo) MarshalBinary() ([]byte, error) {
	return marshal(VESWPortInfoLen, v.AppendBinary)
}

// UnmarshalBinary decodes the first 280 bytes of b.
func (v *VESWPortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < VESWPortInfoLen {
		return errShort("VESWPortInfo", VESWPortInfoLen, len(b))
	}
	d := dec{b}
	v.VESW.decode(&d)
	v.VPort.decode(&d)
	return nil
}
