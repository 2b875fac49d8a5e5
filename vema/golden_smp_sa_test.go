package vema

import "github.com/opavnic/opavnic/encap"

// Golden vectors of the SMP and SA subset, written by hand at the offsets of
// docs/linux-compat.md §9-§11 (opa_smi.h, opa_port_info.h, hfi1 mad.h,
// ib_mad.h, sa_query.c).

func goldenSMPHeader() golden {
	v := &SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnDirectedRoute, ClassVersion: 0x80,
		Method: MethodGet, Status: StatusDirection, HopPtr: 1, HopCnt: 0, TID: 0x0A0B0C0D0E0F1011,
		AttrID: SMPAttrNodeInfo, Reserved: [2]byte{0x12, 0x13}, AttrMod: 0x01000001, MKey: 0x2122232425262728}
	w := make([]byte, 32)
	put(w, 0, 0x80)                                            // base_version
	put(w, 1, 0x81)                                            // mgmt_class: directed route
	put(w, 2, 0x80)                                            // class_version
	put(w, 3, 0x01)                                            // method
	put(w, 4, 0x80, 0x00)                                      // status: D bit
	put(w, 6, 0x01)                                            // hop_ptr
	put(w, 7, 0x00)                                            // hop_cnt
	put(w, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11)  // tid
	put(w, 16, 0x00, 0x11)                                     // attr_id
	put(w, 18, 0x12, 0x13)                                     // resv
	put(w, 20, 0x01, 0x00, 0x00, 0x01)                         // attr_mod
	put(w, 24, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28) // mkey
	return golden{name: "SMPHeader", val: v, want: w, zero: func() codec { return new(SMPHeader) }}
}

func nodeInfoVal() NodeInfo {
	return NodeInfo{BaseVersion: 0x80, ClassVersion: 0x80, NodeType: NodeTypeCA, NumPorts: 1,
		Reserved: [4]byte{0xE1, 0xE2, 0xE3, 0xE4}, SystemImageGUID: 0x0011750101020304,
		NodeGUID: 0x0011750101020305, PortGUID: 0x0011750101020306, PartitionCap: 0x0010,
		DeviceID: 0x24F0, Revision: 0x00000011, LocalPortNum: 1, VendorID: OUI{0x00, 0x11, 0x75}}
}

func nodeInfoBytes() []byte {
	w := make([]byte, 44)
	put(w, 0, 0x80)                                            // base_version
	put(w, 1, 0x80)                                            // class_version
	put(w, 2, 0x01)                                            // node_type: CA
	put(w, 3, 0x01)                                            // num_ports
	put(w, 4, 0xE1, 0xE2, 0xE3, 0xE4)                          // reserved
	put(w, 8, 0x00, 0x11, 0x75, 0x01, 0x01, 0x02, 0x03, 0x04)  // system_image_guid
	put(w, 16, 0x00, 0x11, 0x75, 0x01, 0x01, 0x02, 0x03, 0x05) // node_guid
	put(w, 24, 0x00, 0x11, 0x75, 0x01, 0x01, 0x02, 0x03, 0x06) // port_guid
	put(w, 32, 0x00, 0x10)                                     // partition_cap
	put(w, 34, 0x24, 0xF0)                                     // device_id
	put(w, 36, 0x00, 0x00, 0x00, 0x11)                         // revision
	put(w, 40, 0x01)                                           // local_port_num
	put(w, 41, 0x00, 0x11, 0x75)                               // vendor_id
	return w
}

func goldenNodeInfo() golden {
	v := nodeInfoVal()
	return golden{name: "NodeInfo", val: &v, want: nodeInfoBytes(), zero: func() codec { return new(NodeInfo) }}
}

// goldenSMPLID is a LID-routed NodeInfo GetResp as hfi1 sizes it:
// round_up(32 + 44, 8) = 80 bytes.
func goldenSMPLID() golden {
	data := make([]byte, 48)
	copy(data, nodeInfoBytes())
	v := &SMP{SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: MethodGetResp, TID: 5, AttrID: SMPAttrNodeInfo}, Data: data}
	w := make([]byte, 80)
	put(w, 0, 0x80, 0x01, 0x80, 0x81)                         // base_version, class LID routed, class_version, GetResp
	put(w, 8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05) // tid
	put(w, 16, 0x00, 0x11)                                    // attr_id NodeInfo
	put(w, 32, nodeInfoBytes()...)                            // route.lid.data: opa_node_info, then 4 pad bytes
	return golden{name: "SMP/LID", val: v, want: w, zero: func() codec { return new(SMP) }, variable: true}
}

// goldenSMPDR is a 0-hop directed-route PortInfo Get from an SM with
// permissive DR LIDs, carrying 8 bytes of data.
func goldenSMPDR() golden {
	v := &SMP{
		SMPHeader: SMPHeader{BaseVersion: 0x80, MgmtClass: ClassSubnDirectedRoute, ClassVersion: 0x80,
			Method: MethodGet, HopPtr: 0, HopCnt: 1, TID: 7, AttrID: SMPAttrPortInfo, AttrMod: 0x01000201,
			MKey: 0x0102030405060708},
		DR: DRRoute{DRSLID: encap.LIDPermissive, DRDLID: encap.LIDPermissive,
			Reserved: [8]byte(seq(0xF0, 8))},
		Data: seq(0xD0, 8),
	}
	v.DR.InitialPath[1] = 3
	v.DR.ReturnPath[1] = 4
	w := make([]byte, 176+8)
	put(w, 0, 0x80, 0x81, 0x80, 0x01)                          // base_version, class DR, class_version, Get
	put(w, 6, 0x00, 0x01)                                      // hop_ptr, hop_cnt
	put(w, 8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07)  // tid
	put(w, 16, 0x00, 0x15)                                     // attr_id PortInfo
	put(w, 20, 0x01, 0x00, 0x02, 0x01)                         // attr_mod: N=1, S, port 1
	put(w, 24, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08) // mkey
	put(w, 32, 0xFF, 0xFF, 0xFF, 0xFF)                         // route.dr.dr_slid
	put(w, 36, 0xFF, 0xFF, 0xFF, 0xFF)                         // route.dr.dr_dlid
	put(w, 40+1, 0x03)                                         // route.dr.initial_path[1]
	put(w, 104+1, 0x04)                                        // route.dr.return_path[1]
	put(w, 168, seq(0xF0, 8)...)                               // route.dr.reserved
	put(w, 176, seq(0xD0, 8)...)                               // route.dr.data
	return golden{name: "SMP/DR", val: v, want: w, zero: func() codec { return new(SMP) }, variable: true}
}

func goldenNodeDescription() golden {
	v := NodeDescriptionFrom("host-a hfi1_0")
	w := make([]byte, 64)
	put(w, 0, 'h', 'o', 's', 't', '-', 'a', ' ', 'h', 'f', 'i', '1', '_', '0') // data, NUL padded
	return golden{name: "NodeDescription", val: &v, want: w, zero: func() codec { return new(NodeDescription) }}
}

func goldenPortInfo() golden {
	v := &PortInfo{
		LID: 0x00C00042, FlowControlMask: 0x01020304, VLRes: 0x05, VLCap: 0x06, VLHighLimit: 0x0708,
		VLPreemptLimit: 0x090A, VLArbHighCap: 0x0B, VLArbLowCap: 0x0C, PortStatesReserved: 0x0D,
		LEDEnableOfflineReason: 0x0E, PortStatesReserved2: 0x0F, PortPhysStatePortState: 0x54,
		PortPhysConf: 0x01, CollectiveMaskMulticastMask: 0x0C, MKeyProtectLMC: 0x43, SMSL: 0x17,
		PartEnforceFilterRaw: 0x18, OperationalVLs: 0x19, PKey8B: 0x1A1B, PKey10B: 0x1C1D,
		MKeyViolations: 0x1E1F, PKeyViolations: 0x2021, QKeyViolations: 0x2223,
		SMTrapQP: 0xFF000001, SAQP: 0xEE000001, NeighPortNum: 0x2C, LinkDownReason: 0x2D,
		NeighLinkDownReason: 0x2E, ClientReregSubnetTimeout: 0x92,
		LinkSpeedSupported: 0x3031, LinkSpeedEnabled: 0x3233, LinkSpeedActive: 0x3435,
		LinkWidthSupported: 0x3637, LinkWidthEnabled: 0x3839, LinkWidthActive: 0x3A3B,
		LinkWidthDowngradeSupported: 0x3C3D, LinkWidthDowngradeEnabled: 0x3E3F,
		LinkWidthDowngradeTxActive: 0x4041, LinkWidthDowngradeRxActive: 0x4243,
		PortLinkMode: 0x1084, PortLTPCRCMode: 0x4647, PortMode: 0x4849,
		PacketFormatSupported: 0x000A, PacketFormatEnabled: 0x4C4D, FlitInterleave: 0x1400,
		FlitPreemptMinInitial: 0x5051, FlitPreemptMinTail: 0x5253, FlitPreemptLargePktLimit: 0x54,
		FlitPreemptSmallPktLimit: 0x55, FlitPreemptMaxSmallPktLimit: 0x56, FlitPreemptionLimit: 0x57,
		Reserved4: [4]byte{0x58, 0x59, 0x5A, 0x5B}, PortErrorAction: 0x80000001,
		PassThroughEgressPort: 0x60, PassThroughResDRCtl: 0x61, MKeyLeasePeriod: 0x6263,
		BufferUnits: 0x64656667, Reserved5: [4]byte{0x68, 0x69, 0x6A, 0x6B}, SMLID: 0x00000001,
		MKey: 0x7071727374757677, SubnetPrefix: 0xFE80000000000000,
		NeighMTU: [16]uint8(seq(0x80, 16)), XmitQ: [32]uint8(seq(0x90, 32)),
		IPv6Addr: [16]byte(seq(0xB0, 16)), IPv4Addr: [4]byte{0xC0, 0xA8, 0x00, 0x01},
		Reserved6: [4]byte{0xC4, 0xC5, 0xC6, 0xC7}, Reserved7: [4]byte{0xC8, 0xC9, 0xCA, 0xCB},
		Reserved8: [4]byte{0xCC, 0xCD, 0xCE, 0xCF}, NeighNodeGUID: 0xD0D1D2D3D4D5D6D7,
		IBCapMask: 0xD800000A, Reserved9: [2]byte{0xDC, 0xDD}, OPACapMask: Cap3IsEthOnFabricSupported,
		Reserved10: [4]byte{0xE0, 0xE1, 0xE2, 0xE3}, OverallBufferSpace: 0xE4E5,
		Reserved11: [2]byte{0xE6, 0xE7}, DiagCode: 0xE8E9, ReplayDepthBuffer: 0x80, ReplayDepthWire: 0xEB,
		PortNeighMode: 0xEC, MTUCap: 0x07, RespTimeValue: 0x03, LocalPortNum: 0x01,
		Reserved12: 0xF0, Reserved13: 0xF1,
	}
	w := make([]byte, 242)
	put(w, 0, 0x00, 0xC0, 0x00, 0x42)                           // lid
	put(w, 4, 0x01, 0x02, 0x03, 0x04)                           // flow_control_mask
	put(w, 8, 0x05)                                             // vl.res
	put(w, 9, 0x06)                                             // vl.cap
	put(w, 10, 0x07, 0x08)                                      // vl.high_limit
	put(w, 12, 0x09, 0x0A)                                      // vl.preempt_limit
	put(w, 14, 0x0B)                                            // vl.arb_high_cap
	put(w, 15, 0x0C)                                            // vl.arb_low_cap
	put(w, 16, 0x0D)                                            // port_states.reserved
	put(w, 17, 0x0E)                                            // port_states.ledenable_offlinereason
	put(w, 18, 0x0F)                                            // port_states.reserved2
	put(w, 19, 0x54)                                            // port_states.portphysstate_portstate: LinkUp, Active
	put(w, 20, 0x01)                                            // port_phys_conf
	put(w, 21, 0x0C)                                            // collectivemask_multicastmask
	put(w, 22, 0x43)                                            // mkeyprotect_lmc
	put(w, 23, 0x17)                                            // smsl
	put(w, 24, 0x18)                                            // partenforce_filterraw
	put(w, 25, 0x19)                                            // operational_vls
	put(w, 26, 0x1A, 0x1B)                                      // pkey_8b
	put(w, 28, 0x1C, 0x1D)                                      // pkey_10b
	put(w, 30, 0x1E, 0x1F)                                      // mkey_violations
	put(w, 32, 0x20, 0x21)                                      // pkey_violations
	put(w, 34, 0x22, 0x23)                                      // qkey_violations
	put(w, 36, 0xFF, 0x00, 0x00, 0x01)                          // sm_trap_qp
	put(w, 40, 0xEE, 0x00, 0x00, 0x01)                          // sa_qp
	put(w, 44, 0x2C)                                            // neigh_port_num
	put(w, 45, 0x2D)                                            // link_down_reason
	put(w, 46, 0x2E)                                            // neigh_link_down_reason
	put(w, 47, 0x92)                                            // clientrereg_subnettimeout
	put(w, 48, 0x30, 0x31)                                      // link_speed.supported
	put(w, 50, 0x32, 0x33)                                      // link_speed.enabled
	put(w, 52, 0x34, 0x35)                                      // link_speed.active
	put(w, 54, 0x36, 0x37)                                      // link_width.supported
	put(w, 56, 0x38, 0x39)                                      // link_width.enabled
	put(w, 58, 0x3A, 0x3B)                                      // link_width.active
	put(w, 60, 0x3C, 0x3D)                                      // link_width_downgrade.supported
	put(w, 62, 0x3E, 0x3F)                                      // link_width_downgrade.enabled
	put(w, 64, 0x40, 0x41)                                      // link_width_downgrade.tx_active
	put(w, 66, 0x42, 0x43)                                      // link_width_downgrade.rx_active
	put(w, 68, 0x10, 0x84)                                      // port_link_mode
	put(w, 70, 0x46, 0x47)                                      // port_ltp_crc_mode
	put(w, 72, 0x48, 0x49)                                      // port_mode
	put(w, 74, 0x00, 0x0A)                                      // port_packet_format.supported
	put(w, 76, 0x4C, 0x4D)                                      // port_packet_format.enabled
	put(w, 78, 0x14, 0x00)                                      // flit_control.interleave
	put(w, 80, 0x50, 0x51)                                      // flit_control.preemption.min_initial
	put(w, 82, 0x52, 0x53)                                      // flit_control.preemption.min_tail
	put(w, 84, 0x54)                                            // ...large_pkt_limit
	put(w, 85, 0x55)                                            // ...small_pkt_limit
	put(w, 86, 0x56)                                            // ...max_small_pkt_limit
	put(w, 87, 0x57)                                            // ...preemption_limit
	put(w, 88, 0x58, 0x59, 0x5A, 0x5B)                          // reserved4
	put(w, 92, 0x80, 0x00, 0x00, 0x01)                          // port_error_action
	put(w, 96, 0x60)                                            // pass_through.egress_port
	put(w, 97, 0x61)                                            // pass_through.res_drctl
	put(w, 98, 0x62, 0x63)                                      // mkey_lease_period
	put(w, 100, 0x64, 0x65, 0x66, 0x67)                         // buffer_units
	put(w, 104, 0x68, 0x69, 0x6A, 0x6B)                         // reserved5
	put(w, 108, 0x00, 0x00, 0x00, 0x01)                         // sm_lid
	put(w, 112, 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77) // mkey
	put(w, 120, 0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00) // subnet_prefix
	put(w, 128, seq(0x80, 16)...)                               // neigh_mtu.pvlx_to_mtu
	put(w, 144, seq(0x90, 32)...)                               // xmit_q[].vlstall_hoqlife
	put(w, 176, seq(0xB0, 16)...)                               // ipaddr_ipv6
	put(w, 192, 0xC0, 0xA8, 0x00, 0x01)                         // ipaddr_ipv4
	put(w, 196, 0xC4, 0xC5, 0xC6, 0xC7)                         // reserved6
	put(w, 200, 0xC8, 0xC9, 0xCA, 0xCB)                         // reserved7
	put(w, 204, 0xCC, 0xCD, 0xCE, 0xCF)                         // reserved8
	put(w, 208, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7) // neigh_node_guid
	put(w, 216, 0xD8, 0x00, 0x00, 0x0A)                         // ib_cap_mask: IsSM, IsTrapSupported
	put(w, 220, 0xDC, 0xDD)                                     // reserved9
	put(w, 222, 0x20, 0x00)                                     // opa_cap_mask: IsEthOnFabricSupported
	put(w, 224, 0xE0, 0xE1, 0xE2, 0xE3)                         // reserved10
	put(w, 228, 0xE4, 0xE5)                                     // overall_buffer_space
	put(w, 230, 0xE6, 0xE7)                                     // reserved11
	put(w, 232, 0xE8, 0xE9)                                     // diag_code
	put(w, 234, 0x80)                                           // replay_depth.buffer
	put(w, 235, 0xEB)                                           // replay_depth.wire
	put(w, 236, 0xEC)                                           // port_neigh_mode
	put(w, 237, 0x07)                                           // mtucap
	put(w, 238, 0x03)                                           // resptimevalue
	put(w, 239, 0x01)                                           // local_port_num
	put(w, 240, 0xF0)                                           // reserved12
	put(w, 241, 0xF1)                                           // reserved13
	return golden{name: "PortInfo", val: v, want: w, zero: func() codec { return new(PortInfo) }}
}

// goldenSMPNotice is trap 144 as hfi1_cap_mask_chg sends it.
func goldenSMPNotice() golden {
	v := &SMPNotice{GenericType: NoticeGenericInfo, ProdTypeMSB: 0, ProdTypeLSB: NoticeProdCA,
		TrapNum: TrapChangeCapability, ToggleCount: 0x1234, IssuerLID: 0x00C00007,
		Reserved1: [4]byte{0xA1, 0xA2, 0xA3, 0xA4}, IssuerGID: gidSeq(0x10)}
	put(v.Details[:], 0, 0x00, 0xC0, 0x00, 0x07) // ntc_144.lid
	put(v.Details[:], 4, 0x00, 0x00, 0x00, 0x0A) // ntc_144.new_cap_mask
	put(v.Details[:], 10, 0x20, 0x00)            // ntc_144.cap_mask3
	put(v.Details[:], 12, 0x00, 0x01)            // ntc_144.change_flags
	w := make([]byte, 96)
	put(w, 0, 0x84)                    // generic_type: info
	put(w, 1, 0x00)                    // prod_type_msb
	put(w, 2, 0x00, 0x01)              // prod_type_lsb: CA
	put(w, 4, 0x00, 0x90)              // trap_num 144
	put(w, 6, 0x12, 0x34)              // toggle_count
	put(w, 8, 0x00, 0xC0, 0x00, 0x07)  // issuer_lid
	put(w, 12, 0xA1, 0xA2, 0xA3, 0xA4) // reserved1
	put(w, 16, seq(0x10, 16)...)       // issuer_gid
	put(w, 32, 0x00, 0xC0, 0x00, 0x07) // ntc_144.lid
	put(w, 36, 0x00, 0x00, 0x00, 0x0A) // ntc_144.new_cap_mask
	put(w, 42, 0x20, 0x00)             // ntc_144.cap_mask3
	put(w, 44, 0x00, 0x01)             // ntc_144.change_flags
	return golden{name: "SMPNotice", val: v, want: w, zero: func() codec { return new(SMPNotice) }}
}

func saHeaderVal(m Method) SAHeader {
	return SAHeader{
		MADHeader: MADHeader{BaseVersion: 0x80, MgmtClass: ClassSubnAdm, ClassVersion: 0x80, Method: m,
			TID: 0x0000002A00000001, AttrID: SAAttrPathRecord},
		RMPP:  RMPPHeader{Version: 1, Type: 1, RTimeFlags: 0x0E, SegNum: 1, PayLenNewWin: 0xC8},
		SMKey: 0x0102030405060708, AttrOffset: PathRecordAttrOffset, Reserved: [2]byte{0xAB, 0xCD},
		CompMask: CompMaskDLID | CompMaskSLID,
	}
}

func saHeaderBytes(m byte) []byte {
	w := make([]byte, 56)
	put(w, 0, 0x80, 0x03, 0x80, m)                             // base_version, class SubnAdm, class_version, method
	put(w, 8, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x01)  // tid
	put(w, 16, 0x00, 0x35)                                     // attr_id PathRecord
	put(w, 24, 0x01, 0x01, 0x0E, 0x00)                         // rmpp version, type, rtime_flags, status
	put(w, 28, 0x00, 0x00, 0x00, 0x01)                         // seg_num
	put(w, 32, 0x00, 0x00, 0x00, 0xC8)                         // paylen_newwin
	put(w, 36, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08) // sm_key
	put(w, 44, 0x00, 0x08)                                     // attr_offset: 64 bytes
	put(w, 46, 0xAB, 0xCD)                                     // reserved
	put(w, 48, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30) // comp_mask: DLID, SLID
	return w
}

func goldenSAHeader() golden {
	v := saHeaderVal(MethodGet)
	return golden{name: "SAHeader", val: &v, want: saHeaderBytes(0x01), zero: func() codec { return new(SAHeader) }}
}

func pathRecordVal() PathRecord {
	return PathRecord{
		ServiceID: 0x1000000000000001,
		DGID:      encap.SpecialGID(encap.DefaultSubnetPrefix, 0x00C00002),
		SGID:      encap.SpecialGID(encap.DefaultSubnetPrefix, 0x00C00001),
		DLID:      0x00C00002, SLID: 0x00C00001,
		RawTraffic: true, Reserved48: 5, FlowLabel: 0xABCDE, HopLimit: 1,
		TrafficClass: 0x22, Reversible: true, NumbPath: 0x7F, PKey: 0xFFFF,
		L2_10B: true, L2_16B: true, Reserved56: 2, QOSType: 1, QOSPriority: 0x33,
		Reserved58: 5, SL: 0x1F, Reserved59: 0x44,
		MTUSelector: SelectorExactly, MTU: 5, RateSelector: SelectorExactly, Rate: 16,
		PacketLifeTimeSelector: SelectorExactly, PacketLifeTime: 18, Preference: 0x55,
	}
}

func pathRecordBytes() []byte {
	w := make([]byte, 64)
	put(w, 0, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01)  // service_id
	put(w, 8, 0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00)  // dgid prefix
	put(w, 16, 0x00, 0x06, 0x6A, 0x00, 0x00, 0xC0, 0x00, 0x02) // dgid interface id: OPA_MAKE_ID(dlid)
	put(w, 24, 0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00) // sgid prefix
	put(w, 32, 0x00, 0x06, 0x6A, 0x00, 0x00, 0xC0, 0x00, 0x01) // sgid interface id: OPA_MAKE_ID(slid)
	put(w, 40, 0x00, 0xC0, 0x00, 0x02)                         // dlid (32-bit)
	put(w, 44, 0x00, 0xC0, 0x00, 0x01)                         // slid (32-bit)
	put(w, 48, 0xDA)                                           // raw_traffic 1, reserved 101, flow_label[19:16] 0xA
	put(w, 49, 0xBC, 0xDE)                                     // flow_label[15:0]
	put(w, 51, 0x01)                                           // hop_limit
	put(w, 52, 0x22)                                           // traffic_class
	put(w, 53, 0xFF)                                           // reversible 1, numb_path 0x7F
	put(w, 54, 0xFF, 0xFF)                                     // pkey
	put(w, 56, 0x59)                                           // l2_8B 0, l2_10B 1, l2_9B 0, l2_16B 1, reserved 10, qos_type 01
	put(w, 57, 0x33)                                           // qos_priority
	put(w, 58, 0xBF)                                           // reserved 101, sl 0x1F
	put(w, 59, 0x44)                                           // reserved
	put(w, 60, 0x85)                                           // mtu_selector 2, mtu 5
	put(w, 61, 0x90)                                           // rate_selector 2, rate 16
	put(w, 62, 0x92)                                           // packet_life_time_selector 2, packet_life_time 18
	put(w, 63, 0x55)                                           // preference
	return w
}

func goldenPathRecord() golden {
	v := pathRecordVal()
	return golden{name: "PathRecord", val: &v, want: pathRecordBytes(), zero: func() codec { return new(PathRecord) }}
}

// goldenSAMAD is a PathRecord GetResp carrying one OPA record.
func goldenSAMAD() golden {
	v := &SAMAD{SAHeader: saHeaderVal(MethodGetResp), Data: pathRecordBytes()}
	w := make([]byte, 56+64)
	put(w, 0, saHeaderBytes(0x81)...) // SA header, method GetResp
	put(w, 56, pathRecordBytes()...)  // data: the record
	return golden{name: "SAMAD", val: v, want: w, zero: func() codec { return new(SAMAD) }, variable: true}
}

func goldenIBPathRecord() golden {
	v := &IBPathRecord{
		ServiceID: 0x2000000000000002, DGID: gidSeq(0x10), SGID: gidSeq(0x20), DLID: 0x0102, SLID: 0x0304,
		RawTraffic: false, Reserved44: 3, FlowLabel: 0x12345, HopLimit: 0x40, TrafficClass: 0x50,
		Reversible: true, NumbPath: 1, PKey: 0x8001, QOSClass: 0xABC, SL: 0xD,
		MTUSelector: SelectorBest, MTU: 4, RateSelector: SelectorLessThan, Rate: 7,
		PacketLifeTimeSelector: SelectorGreaterThan, PacketLifeTime: 0x3F, Preference: 0x66,
		Reserved58: [6]byte(seq(0xF1, 6)),
	}
	w := make([]byte, 64)
	put(w, 0, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02) // service_id
	put(w, 8, seq(0x10, 16)...)                               // dgid
	put(w, 24, seq(0x20, 16)...)                              // sgid
	put(w, 40, 0x01, 0x02)                                    // dlid (16-bit)
	put(w, 42, 0x03, 0x04)                                    // slid (16-bit)
	put(w, 44, 0x31)                                          // raw_traffic 0, reserved 011, flow_label[19:16] 0x1
	put(w, 45, 0x23, 0x45)                                    // flow_label[15:0]
	put(w, 47, 0x40)                                          // hop_limit
	put(w, 48, 0x50)                                          // traffic_class
	put(w, 49, 0x81)                                          // reversible 1, numb_path 1
	put(w, 50, 0x80, 0x01)                                    // pkey
	put(w, 52, 0xAB)                                          // qos_class[11:4]
	put(w, 53, 0xCD)                                          // qos_class[3:0], sl 0xD
	put(w, 54, 0xC4)                                          // mtu_selector 3, mtu 4
	put(w, 55, 0x47)                                          // rate_selector 1, rate 7
	put(w, 56, 0x3F)                                          // packet_life_time_selector 0, packet_life_time 0x3F
	put(w, 57, 0x66)                                          // preference
	put(w, 58, seq(0xF1, 6)...)                               // reserved
	return golden{name: "IBPathRecord", val: v, want: w, zero: func() codec { return new(IBPathRecord) }}
}

// goldens lists every hand-written vector; the golden, short-input and fuzz
// tests all start from it.
func goldens() []golden {
	return append([]golden{
		goldenMADHeader(), goldenRMPPHeader(), goldenVendorHeader(), goldenMAD(), goldenTrapMAD(),
		goldenVESWPortTrap(), goldenNotice(), goldenClassPortInfo(), goldenVESWInfo(),
		goldenPerVESWPortInfo(), goldenVESWPortInfo(), goldenMACTableHeader(), goldenMACTableEntry(),
		goldenVESWPortMACEntries(), goldenIfaceMACsHeader(), goldenIfaceMACs(),
		goldenSummaryCounters(), goldenErrorCounters(),
		goldenSMPHeader(), goldenSMPLID(), goldenSMPDR(), goldenNodeInfo(), goldenNodeDescription(),
		goldenPortInfo(), goldenSMPNotice(),
		goldenSAHeader(), goldenSAMAD(), goldenPathRecord(), goldenIBPathRecord(),
	}, switchGoldens()...)
}
