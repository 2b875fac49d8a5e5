package vema

import "github.com/opavnic/opavnic/encap"

// Golden vectors of the MAD headers and the VEMA attributes. Every expected
// byte is written by hand at the offset docs/linux-compat.md §4 (and the
// kernel headers it cites) gives; field values are distinct so a field at the
// wrong offset or in the wrong byte order shows.

func goldenMADHeader() golden {
	v := &MADHeader{
		BaseVersion: 0x80, MgmtClass: ClassVEMA, ClassVersion: 0x80, Method: MethodSet,
		Status: StatusInvalidAttrValue, ClassSpecific: 0x1234, TID: 0x0102030405060708,
		AttrID: AttrVESWPortInfo, Reserved: [2]byte{0xAA, 0xBB}, AttrMod: 0x00000105,
	}
	w := make([]byte, 24)
	put(w, 0, 0x80)                                           // base_version
	put(w, 1, 0x34)                                           // mgmt_class
	put(w, 2, 0x80)                                           // class_version
	put(w, 3, 0x02)                                           // method
	put(w, 4, 0x00, 0x1C)                                     // status
	put(w, 6, 0x12, 0x34)                                     // class_specific
	put(w, 8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08) // tid
	put(w, 16, 0x00, 0x11)                                    // attr_id
	put(w, 18, 0xAA, 0xBB)                                    // resv
	put(w, 20, 0x00, 0x00, 0x01, 0x05)                        // attr_mod
	return golden{name: "MADHeader", val: v, want: w, zero: func() codec { return new(MADHeader) }}
}

func goldenRMPPHeader() golden {
	v := &RMPPHeader{Version: 1, Type: RMPPTypeData, RTimeFlags: 0x47, Status: 0x76,
		SegNum: 0x11223344, PayLenNewWin: 0x55667788}
	w := make([]byte, 12)
	put(w, 0, 0x01)                   // rmpp_version
	put(w, 1, 0x01)                   // rmpp_type
	put(w, 2, 0x47)                   // rmpp_rtime_flags
	put(w, 3, 0x76)                   // rmpp_status
	put(w, 4, 0x11, 0x22, 0x33, 0x44) // seg_num
	put(w, 8, 0x55, 0x66, 0x77, 0x88) // paylen_newwin
	return golden{name: "RMPPHeader", val: v, want: w, zero: func() codec { return new(RMPPHeader) }}
}

func goldenVendorHeader() golden {
	v := &VendorHeader{
		MADHeader: MADHeader{BaseVersion: 0x80, MgmtClass: ClassVEMA, ClassVersion: 0x80,
			Method: MethodGet, TID: 0x1122334455667788, AttrID: AttrVESWPortMACEntries, AttrMod: 0xFFFFFF07},
		RMPP:     RMPPHeader{Version: 1, Type: 2, RTimeFlags: 3, Status: 4, SegNum: 5, PayLenNewWin: 6},
		Reserved: 0x5A,
		OUI:      IntelOUI,
	}
	w := make([]byte, 40)
	put(w, 0, 0x80, 0x34, 0x80, 0x01)                         // base_version, mgmt_class, class_version, method
	put(w, 4, 0x00, 0x00)                                     // status
	put(w, 6, 0x00, 0x00)                                     // class_specific
	put(w, 8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88) // tid
	put(w, 16, 0x00, 0x12)                                    // attr_id
	put(w, 18, 0x00, 0x00)                                    // resv
	put(w, 20, 0xFF, 0xFF, 0xFF, 0x07)                        // attr_mod
	put(w, 24, 0x01, 0x02, 0x03, 0x04)                        // rmpp version, type, rtime_flags, status
	put(w, 28, 0x00, 0x00, 0x00, 0x05)                        // seg_num
	put(w, 32, 0x00, 0x00, 0x00, 0x06)                        // paylen_newwin
	put(w, 36, 0x5A)                                          // reserved
	put(w, 37, 0x00, 0x06, 0x6A)                              // oui
	return golden{name: "VendorHeader", val: v, want: w, zero: func() codec { return new(VendorHeader) }}
}

// goldenMAD is what the kernel VEMA answers to a Get of VESWPortInfo for a
// vport that does not exist: GetResp, status 0, TID/attribute/modifier
// echoed, power-on values in a zeroed 2008-byte data area.
func goldenMAD() golden {
	v := &MAD{VendorHeader: VendorHeader{
		MADHeader: MADHeader{BaseVersion: 0x80, MgmtClass: ClassVEMA, ClassVersion: 0x80,
			Method: MethodGetResp, TID: 0x0000000100000002, AttrID: AttrVESWPortInfo, AttrMod: 3},
		OUI: IntelOUI,
	}}
	put(v.Data[:], 148, 0x05, 0xDC)    // vesw.eth_mtu = 1500
	put(v.Data[:], 152+14, 0x01)       // vport.config_state = DROP_ALL
	put(v.Data[:], 152+15, 0x01)       // vport.oper_state = DROP_ALL
	put(v.Data[:], 152+16, 0x08, 0x00) // vport.max_mac_tbl_ent = 2048
	put(v.Data[:], 152+18, 0x01, 0x00) // vport.max_smac_ent = 256
	w := make([]byte, 2048)
	put(w, 0, 0x80, 0x34, 0x80, 0x81)                         // base_version, mgmt_class, class_version, method GetResp
	put(w, 8, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02) // tid
	put(w, 16, 0x00, 0x11)                                    // attr_id VESWPortInfo
	put(w, 20, 0x00, 0x00, 0x00, 0x03)                        // attr_mod: vport 3
	put(w, 37, 0x00, 0x06, 0x6A)                              // oui
	put(w, 40+148, 0x05, 0xDC)                                // data: vesw.eth_mtu
	put(w, 40+152+14, 0x01, 0x01)                             // data: vport.config_state, oper_state
	put(w, 40+152+16, 0x08, 0x00, 0x01, 0x00)                 // data: vport.max_mac_tbl_ent, max_smac_ent
	return golden{name: "MAD", val: v, want: w, zero: func() codec { return new(MAD) }}
}

// goldenTrapMAD is a link-status trap as opa_vnic_vema_send_trap builds it:
// 272 bytes, method Trap, attribute Notice, gen_type 0x08, the Intel OUI twice.
func goldenTrapMAD() golden {
	v := &TrapMAD{
		VendorHeader: VendorHeader{
			MADHeader: MADHeader{BaseVersion: 0x80, MgmtClass: ClassVEMA, ClassVersion: 0x80,
				Method: MethodTrap, TID: 1, AttrID: AttrNotice},
			OUI: IntelOUI,
		},
		Notice: Notice{
			GenType: VEMANoticeGenType, OUI: IntelOUI, IssuerLID: 0x00C00005,
			Trap: VESWPortTrap{FabricID: 0x0001, VESWID: 0x0002, VESWPortNum: 0x10, OPAPortNum: 1,
				VESWPortIndex: 0, Opcode: TrapEthLinkStatusChange},
		},
	}
	w := make([]byte, 272)
	put(w, 0, 0x80, 0x34, 0x80, 0x05)                         // base_version, class VEMA, class_version, method Trap
	put(w, 8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01) // tid = ++port->tid
	put(w, 16, 0x00, 0x02)                                    // attr_id Notice
	put(w, 37, 0x00, 0x06, 0x6A)                              // oui
	put(w, 40+0, 0x08)                                        // notice.gen_type = 0x04<<1
	put(w, 40+1, 0x00, 0x06, 0x6A)                            // notice.oui_1..3
	put(w, 40+8, 0x00, 0xC0, 0x00, 0x05)                      // notice.issuer_lid = encap_slid
	put(w, 40+32+0, 0x00, 0x01)                               // trap.fabric_id
	put(w, 40+32+2, 0x00, 0x02)                               // trap.veswid
	put(w, 40+32+4, 0x00, 0x00, 0x00, 0x10)                   // trap.veswportnum
	put(w, 40+32+8, 0x00, 0x01)                               // trap.opaportnum
	put(w, 40+32+10, 0x00)                                    // trap.veswportindex
	put(w, 40+32+11, 0x03)                                    // trap.opcode: link status change
	return golden{name: "TrapMAD", val: v, want: w, zero: func() codec { return new(TrapMAD) }}
}

func goldenVESWPortTrap() golden {
	v := &VESWPortTrap{FabricID: 0x0123, VESWID: 0x0456, VESWPortNum: 0x789ABCDE, OPAPortNum: 0x0F01,
		VESWPortIndex: 0xFE, Opcode: TrapIfaceMcastMACChange, Reserved: [4]byte{0xC1, 0xC2, 0xC3, 0xC4}}
	w := make([]byte, 16)
	put(w, 0, 0x01, 0x23)              // fabric_id
	put(w, 2, 0x04, 0x56)              // veswid
	put(w, 4, 0x78, 0x9A, 0xBC, 0xDE)  // veswportnum
	put(w, 8, 0x0F, 0x01)              // opaportnum
	put(w, 10, 0xFE)                   // veswportindex
	put(w, 11, 0x02)                   // opcode
	put(w, 12, 0xC1, 0xC2, 0xC3, 0xC4) // reserved
	return golden{name: "VESWPortTrap", val: v, want: w, zero: func() codec { return new(VESWPortTrap) }}
}

func goldenNotice() golden {
	v := &Notice{
		GenType: 0x08, OUI: OUI{0x01, 0x02, 0x03}, TrapNum: 0x0405, ToggleCount: 0x0607,
		IssuerLID: 0x08090A0B, Reserved: [4]byte{0x0C, 0x0D, 0x0E, 0x0F}, IssuerGID: gidSeq(0x10),
		Trap: VESWPortTrap{FabricID: 0x2021, VESWID: 0x2223, VESWPortNum: 0x24252627, OPAPortNum: 0x2829,
			VESWPortIndex: 0x2A, Opcode: 0x2B, Reserved: [4]byte{0x2C, 0x2D, 0x2E, 0x2F}},
		RawDataRest: [48]byte(seq(0x30, 48)),
	}
	w := make([]byte, 96)
	put(w, 0, 0x08)                    // gen_type
	put(w, 1, 0x01, 0x02, 0x03)        // oui_1..3
	put(w, 4, 0x04, 0x05)              // trap_num
	put(w, 6, 0x06, 0x07)              // toggle_count
	put(w, 8, 0x08, 0x09, 0x0A, 0x0B)  // issuer_lid
	put(w, 12, 0x0C, 0x0D, 0x0E, 0x0F) // reserved
	put(w, 16, seq(0x10, 16)...)       // issuer_gid
	put(w, 32, 0x20, 0x21)             // raw_data: trap.fabric_id
	put(w, 34, 0x22, 0x23)             // raw_data: trap.veswid
	put(w, 36, 0x24, 0x25, 0x26, 0x27) // raw_data: trap.veswportnum
	put(w, 40, 0x28, 0x29)             // raw_data: trap.opaportnum
	put(w, 42, 0x2A, 0x2B)             // raw_data: trap.veswportindex, opcode
	put(w, 44, 0x2C, 0x2D, 0x2E, 0x2F) // raw_data: trap.reserved
	put(w, 48, seq(0x30, 48)...)       // raw_data[16:64]
	return golden{name: "Notice", val: v, want: w, zero: func() codec { return new(Notice) }}
}

func goldenClassPortInfo() golden {
	v := &ClassPortInfo{
		BaseVersion: 0x80, ClassVersion: 0x80, CapMask: 0xFF01, CapMask2RespTime: 0x80000012,
		RedirectGID: gidSeq(0x10), RedirectTCFL: 0x21222324, RedirectLID: 0x00C00001,
		RedirectSLQP: 0x31323334, RedirectQKey: 0x80010000,
		TrapGID: gidSeq(0x40), TrapTCFL: 0x51525354, TrapLID: 0x00000001, TrapHLQP: 0x01000001,
		TrapQKey: 0x80010001, TrapPKey: 0x7FFF, RedirectPKey: 0xFFFF, TrapSLRsvd: 0x2B,
		Reserved: [3]byte{0xA1, 0xA2, 0xA3},
	}
	w := make([]byte, 80)
	put(w, 0, 0x80)                    // base_version
	put(w, 1, 0x80)                    // class_version
	put(w, 2, 0xFF, 0x01)              // cap_mask
	put(w, 4, 0x80, 0x00, 0x00, 0x12)  // cap_mask2_resp_time: cap_mask2 bit 26 (word bit 31), resp time 18
	put(w, 8, seq(0x10, 16)...)        // redirect_gid
	put(w, 24, 0x21, 0x22, 0x23, 0x24) // redirect_tc_fl
	put(w, 28, 0x00, 0xC0, 0x00, 0x01) // redirect_lid
	put(w, 32, 0x31, 0x32, 0x33, 0x34) // redirect_sl_qp
	put(w, 36, 0x80, 0x01, 0x00, 0x00) // redirect_qkey
	put(w, 40, seq(0x40, 16)...)       // trap_gid
	put(w, 56, 0x51, 0x52, 0x53, 0x54) // trap_tc_fl
	put(w, 60, 0x00, 0x00, 0x00, 0x01) // trap_lid
	put(w, 64, 0x01, 0x00, 0x00, 0x01) // trap_hl_qp
	put(w, 68, 0x80, 0x01, 0x00, 0x01) // trap_qkey
	put(w, 72, 0x7F, 0xFF)             // trap_pkey
	put(w, 74, 0xFF, 0xFF)             // redirect_pkey
	put(w, 76, 0x2B)                   // trap_sl_rsvd: SL 5 in bits 7:3
	put(w, 77, 0xA1, 0xA2, 0xA3)       // reserved
	return golden{name: "ClassPortInfo", val: v, want: w, zero: func() codec { return new(ClassPortInfo) }}
}

func vesWInfoVal() VESWInfo {
	v := VESWInfo{
		FabricID: 0x0102, VESWID: 0x0304, Rsvd0: [6]byte(seq(0x05, 6)), DefPortMask: 0x0B0C,
		Rsvd1: [2]byte{0x0D, 0x0E}, PKey: 0x8001, Rsvd2: [4]byte(seq(0x11, 4)),
		UMcastDLID: 0x00F00001, RC: 0x07654321, Rsvd3: [56]byte(seq(0x80, 56)),
		EthMTU: 0x2328, Rsvd4: [2]byte{0xEE, 0xEF},
	}
	for i := range v.UUcastDLID {
		v.UUcastDLID[i] = encap.LID(0x00C00000 + i)
	}
	return v
}

func vesWInfoBytes() []byte {
	w := make([]byte, 152)
	put(w, 0, 0x01, 0x02)                         // fabric_id
	put(w, 2, 0x03, 0x04)                         // vesw_id
	put(w, 4, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A) // rsvd0
	put(w, 10, 0x0B, 0x0C)                        // def_port_mask
	put(w, 12, 0x0D, 0x0E)                        // rsvd1
	put(w, 14, 0x80, 0x01)                        // pkey
	put(w, 16, 0x11, 0x12, 0x13, 0x14)            // rsvd2
	put(w, 20, 0x00, 0xF0, 0x00, 0x01)            // u_mcast_dlid
	put(w, 24, 0x00, 0xC0, 0x00, 0x00)            // u_ucast_dlid[0]
	put(w, 28, 0x00, 0xC0, 0x00, 0x01)            // u_ucast_dlid[1]
	put(w, 32, 0x00, 0xC0, 0x00, 0x02)            // u_ucast_dlid[2]
	put(w, 36, 0x00, 0xC0, 0x00, 0x03)            // u_ucast_dlid[3]
	put(w, 40, 0x00, 0xC0, 0x00, 0x04)            // u_ucast_dlid[4]
	put(w, 44, 0x00, 0xC0, 0x00, 0x05)            // u_ucast_dlid[5]
	put(w, 48, 0x00, 0xC0, 0x00, 0x06)            // u_ucast_dlid[6]
	put(w, 52, 0x00, 0xC0, 0x00, 0x07)            // u_ucast_dlid[7]
	put(w, 56, 0x00, 0xC0, 0x00, 0x08)            // u_ucast_dlid[8]
	put(w, 60, 0x00, 0xC0, 0x00, 0x09)            // u_ucast_dlid[9]
	put(w, 64, 0x00, 0xC0, 0x00, 0x0A)            // u_ucast_dlid[10]
	put(w, 68, 0x00, 0xC0, 0x00, 0x0B)            // u_ucast_dlid[11]
	put(w, 72, 0x00, 0xC0, 0x00, 0x0C)            // u_ucast_dlid[12]
	put(w, 76, 0x00, 0xC0, 0x00, 0x0D)            // u_ucast_dlid[13]
	put(w, 80, 0x00, 0xC0, 0x00, 0x0E)            // u_ucast_dlid[14]
	put(w, 84, 0x00, 0xC0, 0x00, 0x0F)            // u_ucast_dlid[15]
	put(w, 88, 0x07, 0x65, 0x43, 0x21)            // rc
	put(w, 92, seq(0x80, 56)...)                  // rsvd3
	put(w, 148, 0x23, 0x28)                       // eth_mtu = 9000
	put(w, 150, 0xEE, 0xEF)                       // rsvd4
	return w
}

func goldenVESWInfo() golden {
	v := vesWInfoVal()
	return golden{name: "VESWInfo", val: &v, want: vesWInfoBytes(), zero: func() codec { return new(VESWInfo) }}
}

func perVESWPortInfoVal() PerVESWPortInfo {
	return PerVESWPortInfo{
		PortNum: 0x01020304, EthLinkStatus: EthLinkUp, Rsvd0: [3]byte{0x05, 0x06, 0x07},
		BaseMACAddr: mac(0x08), ConfigState: StateForwarding, OperState: StateForwarding,
		MaxMACTblEnt: 0x0800, MaxSMACEnt: 0x0100, MACTblDigest: 0x1A1B1C1D,
		Rsvd1: [4]byte{0x1E, 0x1F, 0x20, 0x21}, EncapSLID: 0x00C00022,
		PCPToSCUC: [8]uint8(seq(0x30, 8)), PCPToVLUC: [8]uint8(seq(0x38, 8)),
		PCPToSCMC: [8]uint8(seq(0x40, 8)), PCPToVLMC: [8]uint8(seq(0x48, 8)),
		NonVLANSCUC: 0x50, NonVLANVLUC: 0x51, NonVLANSCMC: 0x52, NonVLANVLMC: 0x53,
		Rsvd2: [48]byte(seq(0x60, 48)), UCMACsGenCount: 0x9192, MCMACsGenCount: 0x9394,
		Rsvd3: [8]byte(seq(0xA0, 8)),
	}
}

func perVESWPortInfoBytes() []byte {
	w := make([]byte, 128)
	put(w, 0, 0x01, 0x02, 0x03, 0x04)             // port_num
	put(w, 4, 0x01)                               // eth_link_status
	put(w, 5, 0x05, 0x06, 0x07)                   // rsvd0
	put(w, 8, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D) // base_mac_addr
	put(w, 14, 0x03)                              // config_state
	put(w, 15, 0x03)                              // oper_state
	put(w, 16, 0x08, 0x00)                        // max_mac_tbl_ent
	put(w, 18, 0x01, 0x00)                        // max_smac_ent
	put(w, 20, 0x1A, 0x1B, 0x1C, 0x1D)            // mac_tbl_digest
	put(w, 24, 0x1E, 0x1F, 0x20, 0x21)            // rsvd1
	put(w, 28, 0x00, 0xC0, 0x00, 0x22)            // encap_slid
	put(w, 32, seq(0x30, 8)...)                   // pcp_to_sc_uc
	put(w, 40, seq(0x38, 8)...)                   // pcp_to_vl_uc
	put(w, 48, seq(0x40, 8)...)                   // pcp_to_sc_mc
	put(w, 56, seq(0x48, 8)...)                   // pcp_to_vl_mc
	put(w, 64, 0x50)                              // non_vlan_sc_uc
	put(w, 65, 0x51)                              // non_vlan_vl_uc
	put(w, 66, 0x52)                              // non_vlan_sc_mc
	put(w, 67, 0x53)                              // non_vlan_vl_mc
	put(w, 68, seq(0x60, 48)...)                  // rsvd2
	put(w, 116, 0x91, 0x92)                       // uc_macs_gen_count
	put(w, 118, 0x93, 0x94)                       // mc_macs_gen_count
	put(w, 120, seq(0xA0, 8)...)                  // rsvd3
	return w
}

func goldenPerVESWPortInfo() golden {
	v := perVESWPortInfoVal()
	return golden{name: "PerVESWPortInfo", val: &v, want: perVESWPortInfoBytes(),
		zero: func() codec { return new(PerVESWPortInfo) }}
}

func goldenVESWPortInfo() golden {
	v := &VESWPortInfo{VESW: vesWInfoVal(), VPort: perVESWPortInfoVal()}
	w := make([]byte, 280)
	put(w, 0, vesWInfoBytes()...)          // vesw: opa_vesw_info
	put(w, 152, perVESWPortInfoBytes()...) // vport: opa_per_veswport_info
	return golden{name: "VESWPortInfo", val: v, want: w, zero: func() codec { return new(VESWPortInfo) }}
}

func goldenMACTableHeader() golden {
	v := &MACTableHeader{Offset: 0x07D0, NumEntries: 0x0030, Digest: 0xDEADBEEF}
	w := make([]byte, 8)
	put(w, 0, 0x07, 0xD0)             // offset
	put(w, 2, 0x00, 0x30)             // num_entries
	put(w, 4, 0xDE, 0xAD, 0xBE, 0xEF) // mac_tbl_digest
	return golden{name: "MACTableHeader", val: v, want: w, zero: func() codec { return new(MACTableHeader) }}
}

func goldenMACTableEntry() golden {
	v := &MACTableEntry{MAC: mac(0x02), Mask: mac(0xF0), DLIDSD: 0xC0000120}
	w := make([]byte, 16)
	put(w, 0, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07) // mac_addr
	put(w, 6, 0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5) // mac_addr_mask
	put(w, 12, 0xC0, 0x00, 0x01, 0x20)            // dlid_sd: DLID 0xC00001, source-MAC bit
	return golden{name: "MACTableEntry", val: v, want: w, zero: func() codec { return new(MACTableEntry) }}
}

func goldenVESWPortMACEntries() golden {
	v := &VESWPortMACEntries{
		MACTableHeader: MACTableHeader{Offset: 10, NumEntries: 2, Digest: 0x01020304},
		Entries: []MACTableEntry{
			{MAC: mac(0x10), Mask: [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, DLIDSD: 0x00000500},
			{MAC: mac(0x20), Mask: mac(0x30), DLIDSD: 0x00C00120},
		},
	}
	w := make([]byte, 8+2*16)
	put(w, 0, 0x00, 0x0A)                          // offset
	put(w, 2, 0x00, 0x02)                          // num_entries
	put(w, 4, 0x01, 0x02, 0x03, 0x04)              // mac_tbl_digest
	put(w, 8, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15)  // tbl_entries[0].mac_addr
	put(w, 14, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF) // tbl_entries[0].mac_addr_mask
	put(w, 20, 0x00, 0x00, 0x05, 0x00)             // tbl_entries[0].dlid_sd: DLID 5
	put(w, 24, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25) // tbl_entries[1].mac_addr
	put(w, 30, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35) // tbl_entries[1].mac_addr_mask
	put(w, 36, 0x00, 0xC0, 0x01, 0x20)             // tbl_entries[1].dlid_sd: DLID 0xC001, source MAC
	return golden{name: "VESWPortMACEntries", val: v, want: w,
		zero: func() codec { return new(VESWPortMACEntries) }}
}

func goldenIfaceMACsHeader() golden {
	v := &IfaceMACsHeader{StartIdx: 0x0102, NumMACsInMsg: 0x0000, TotMACsInLst: 0x0506, GenCount: 0x0708}
	w := make([]byte, 8)
	put(w, 0, 0x01, 0x02) // start_idx
	put(w, 2, 0x00, 0x00) // num_macs_in_msg: 0 asks for 333
	put(w, 4, 0x05, 0x06) // tot_macs_in_lst
	put(w, 6, 0x07, 0x08) // gen_count
	return golden{name: "IfaceMACsHeader", val: v, want: w, zero: func() codec { return new(IfaceMACsHeader) }}
}

func goldenIfaceMACs() golden {
	v := &IfaceMACs{
		IfaceMACsHeader: IfaceMACsHeader{StartIdx: 1, NumMACsInMsg: 3, TotMACsInLst: 4, GenCount: 0x0102},
		MACs:            [][6]byte{mac(0x10), mac(0x20), mac(0x30)},
	}
	w := make([]byte, 8+3*6)
	put(w, 0, 0x00, 0x01)                          // start_idx
	put(w, 2, 0x00, 0x03)                          // num_macs_in_msg
	put(w, 4, 0x00, 0x04)                          // tot_macs_in_lst
	put(w, 6, 0x01, 0x02)                          // gen_count
	put(w, 8, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15)  // entry[0]
	put(w, 14, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25) // entry[1]
	put(w, 20, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35) // entry[2]
	return golden{name: "IfaceMACs", val: v, want: w, zero: func() codec { return new(IfaceMACs) }}
}

// Counter k of a golden counters vector is 0x(k+1)00000000000000(A0+k):
// its first byte and last byte both name it.
func ctr(k int) uint64 { return uint64(k+1)<<56 | uint64(0xA0+k) }

func goldenSummaryCounters() golden {
	v := &SummaryCounters{
		VPInstance: 0x0003, VESWID: 0x0ABC, VESWPortNum: 0x00000001,
		TxErrors: ctr(0), RxErrors: ctr(1), TxPackets: ctr(2), RxPackets: ctr(3), TxBytes: ctr(4), RxBytes: ctr(5),
		TxUnicast: ctr(6), TxMcastBcast: ctr(7), TxUntagged: ctr(8), TxVLAN: ctr(9),
		Tx64: ctr(10), Tx65To127: ctr(11), Tx128To255: ctr(12), Tx256To511: ctr(13), Tx512To1023: ctr(14),
		Tx1024To1518: ctr(15), Tx1519Max: ctr(16),
		RxUnicast: ctr(17), RxMcastBcast: ctr(18), RxUntagged: ctr(19), RxVLAN: ctr(20),
		Rx64: ctr(21), Rx65To127: ctr(22), Rx128To255: ctr(23), Rx256To511: ctr(24), Rx512To1023: ctr(25),
		Rx1024To1518: ctr(26), Rx1519Max: ctr(27),
		Reserved: [128]byte(seq(0x80, 128)),
	}
	w := make([]byte, 360)
	put(w, 0, 0x00, 0x03)                                       // vp_instance
	put(w, 2, 0x0A, 0xBC)                                       // vesw_id
	put(w, 4, 0x00, 0x00, 0x00, 0x01)                           // veswport_num
	put(w, 8, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA0)   // tx_errors
	put(w, 16, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA1)  // rx_errors
	put(w, 24, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA2)  // tx_packets
	put(w, 32, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA3)  // rx_packets
	put(w, 40, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA4)  // tx_bytes
	put(w, 48, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA5)  // rx_bytes
	put(w, 56, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA6)  // tx_unicast
	put(w, 64, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA7)  // tx_mcastbcast
	put(w, 72, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA8)  // tx_untagged
	put(w, 80, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA9)  // tx_vlan
	put(w, 88, 0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAA)  // tx_64_size
	put(w, 96, 0x0C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAB)  // tx_65_127
	put(w, 104, 0x0D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAC) // tx_128_255
	put(w, 112, 0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAD) // tx_256_511
	put(w, 120, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAE) // tx_512_1023
	put(w, 128, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAF) // tx_1024_1518
	put(w, 136, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB0) // tx_1519_max
	put(w, 144, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB1) // rx_unicast
	put(w, 152, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB2) // rx_mcastbcast
	put(w, 160, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB3) // rx_untagged
	put(w, 168, 0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB4) // rx_vlan
	put(w, 176, 0x16, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB5) // rx_64_size
	put(w, 184, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB6) // rx_65_127
	put(w, 192, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB7) // rx_128_255
	put(w, 200, 0x19, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB8) // rx_256_511
	put(w, 208, 0x1A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB9) // rx_512_1023
	put(w, 216, 0x1B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xBA) // rx_1024_1518
	put(w, 224, 0x1C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xBB) // rx_1519_max
	put(w, 232, seq(0x80, 128)...)                              // reserved[16]
	return golden{name: "SummaryCounters", val: v, want: w, zero: func() codec { return new(SummaryCounters) }}
}

func goldenErrorCounters() golden {
	v := &ErrorCounters{
		VPInstance: 0x00FE, VESWID: 0x0FFF, VESWPortNum: 0x00000002,
		TxErrors: ctr(0), RxErrors: ctr(1), Rsvd0: [8]byte(seq(0x10, 8)), TxSMACFilt: ctr(3),
		Rsvd1: [8]byte(seq(0x20, 8)), Rsvd2: [8]byte(seq(0x28, 8)), Rsvd3: [8]byte(seq(0x30, 8)),
		TxDLIDZero: ctr(7), Rsvd4: [8]byte(seq(0x40, 8)), TxLogic: ctr(9), Rsvd5: [8]byte(seq(0x50, 8)),
		TxDropState: ctr(11), RxBadVESWID: ctr(12), Rsvd6: [8]byte(seq(0x60, 8)), RxRunt: ctr(14),
		RxOversize: ctr(15), Rsvd7: [8]byte(seq(0x70, 8)), RxEthDown: ctr(17), RxDropState: ctr(18),
		RxLogic: ctr(19), Rsvd8: [8]byte(seq(0x78, 8)), Rsvd9: [128]byte(seq(0x80, 128)),
	}
	w := make([]byte, 304)
	put(w, 0, 0x00, 0xFE)                                       // vp_instance
	put(w, 2, 0x0F, 0xFF)                                       // vesw_id
	put(w, 4, 0x00, 0x00, 0x00, 0x02)                           // veswport_num
	put(w, 8, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA0)   // tx_errors
	put(w, 16, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA1)  // rx_errors
	put(w, 24, seq(0x10, 8)...)                                 // rsvd0
	put(w, 32, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA3)  // tx_smac_filt
	put(w, 40, seq(0x20, 8)...)                                 // rsvd1
	put(w, 48, seq(0x28, 8)...)                                 // rsvd2
	put(w, 56, seq(0x30, 8)...)                                 // rsvd3
	put(w, 64, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA7)  // tx_dlid_zero
	put(w, 72, seq(0x40, 8)...)                                 // rsvd4
	put(w, 80, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA9)  // tx_logic
	put(w, 88, seq(0x50, 8)...)                                 // rsvd5
	put(w, 96, 0x0C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAB)  // tx_drop_state
	put(w, 104, 0x0D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAC) // rx_bad_veswid
	put(w, 112, seq(0x60, 8)...)                                // rsvd6
	put(w, 120, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAE) // rx_runt
	put(w, 128, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xAF) // rx_oversize
	put(w, 136, seq(0x70, 8)...)                                // rsvd7
	put(w, 144, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB1) // rx_eth_down
	put(w, 152, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB2) // rx_drop_state
	put(w, 160, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB3) // rx_logic
	put(w, 168, seq(0x78, 8)...)                                // rsvd8
	put(w, 176, seq(0x80, 128)...)                              // rsvd9[16]
	return golden{name: "ErrorCounters", val: v, want: w, zero: func() codec { return new(ErrorCounters) }}
}
