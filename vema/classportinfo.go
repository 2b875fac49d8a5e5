package vema

import "github.com/opavnic/opavnic/encap"

// ClassPortInfo values (ib_mad.h, opa_vnic_vema.c).
const (
	// CPICapTrap is cap_mask bit 0: the agent generates traps
	// (OPA_VNIC_CLASS_CAP_TRAP).
	CPICapTrap uint16 = 0x0001
	// VEMAMaxVPorts is the vport count the VEMA advertises in cap_mask
	// bits 15:8 (OPA_VNIC_MAX_NUM_VPORT).
	VEMAMaxVPorts = 255
	// MaxVPort is the largest vport index a VESWPortInfo Set creates: the
	// 255 vports advertised are indices 0..254, and a Set of attr_mod &
	// 0xFF = 255 answers StatusInvalidAttrValue and creates nothing. This
	// is opavnic's bound, not the kernel's: vema_add_vport's idr_alloc takes
	// 255 like any index, and a Linux node would make the VNIC (README,
	// Limits: VNICs per node).
	MaxVPort = VEMAMaxVPorts - 1
	// VEMACPICapMask is the cap_mask a VEMA Get returns: 0xFF01.
	VEMACPICapMask uint16 = CPICapTrap | VEMAMaxVPorts<<8
	// VEMACPIRespTime is the response time a VEMA Get returns (4.096 us *
	// 2^18, about 1.07 s), with cap_mask2 0.
	VEMACPIRespTime uint8 = 18
	// CPICapMask2PRSupport is cap_mask2 bit 26
	// (OPA_CLASS_PORT_INFO_PR_SUPPORT): the SA answers OPA PathRecords. As
	// cap_mask2 sits in bits 31:5 of cap_mask2_resp_time, it is bit 31 of that
	// word.
	CPICapMask2PRSupport uint32 = 1 << 26

	cpiRespTimeBits = 5
	cpiRespTimeMask = 1<<cpiRespTimeBits - 1
)

// ClassPortInfo is struct opa_class_port_info (80 bytes), the VEMA's
// ClassPortInfo (docs/linux-compat.md §4.5) and the OPA SA's (§10.5):
//
//	off size field                  off size field
//	  0    1 base_version            40   16 trap_gid
//	  1    1 class_version           56    4 trap_tc_fl
//	  2    2 cap_mask                60    4 trap_lid (32-bit)
//	  4    4 cap_mask2_resp_time     64    4 trap_hl_qp
//	  8   16 redirect_gid            68    4 trap_qkey
//	 24    4 redirect_tc_fl          72    2 trap_pkey
//	 28    4 redirect_lid (32-bit)   74    2 redirect_pkey
//	 32    4 redirect_sl_qp          76    1 trap_sl_rsvd (SL in bits 7:3)
//	 36    4 redirect_qkey           77    3 reserved
//
// A VEMA Set stores all 80 bytes; its traps go to TrapLID with SL TrapSL().
type ClassPortInfo struct {
	BaseVersion      uint8
	ClassVersion     uint8
	CapMask          uint16
	CapMask2RespTime uint32
	RedirectGID      encap.GID
	RedirectTCFL     uint32
	RedirectLID      encap.LID
	RedirectSLQP     uint32
	RedirectQKey     uint32
	TrapGID          encap.GID
	TrapTCFL         uint32
	TrapLID          encap.LID
	TrapHLQP         uint32
	TrapQKey         uint32
	TrapPKey         encap.PKey
	RedirectPKey     encap.PKey
	TrapSLRsvd       uint8
	Reserved         [3]byte
}

// RespTime returns the response time value, bits 4:0 of cap_mask2_resp_time.
func (c *ClassPortInfo) RespTime() uint8 { return uint8(c.CapMask2RespTime & cpiRespTimeMask) }

// SetRespTime sets bits 4:0 of cap_mask2_resp_time (the value is masked to 5
// bits, as ib_set_cpi_resp_time).
func (c *ClassPortInfo) SetRespTime(t uint8) {
	c.CapMask2RespTime = c.CapMask2RespTime&^cpiRespTimeMask | uint32(t)&cpiRespTimeMask
}

// CapMask2 returns the 27-bit cap_mask2, bits 31:5 of cap_mask2_resp_time
// (opa_get_cpi_capmask2).
func (c *ClassPortInfo) CapMask2() uint32 { return c.CapMask2RespTime >> cpiRespTimeBits }

// SetCapMask2 sets bits 31:5 of cap_mask2_resp_time (bits of m above 26 are
// dropped, as ib_set_cpi_capmask2).
func (c *ClassPortInfo) SetCapMask2(m uint32) {
	c.CapMask2RespTime = c.CapMask2RespTime&cpiRespTimeMask | m<<cpiRespTimeBits
}

// SupportsOPAPathRecord reports cap_mask2 bit 26, which the kernel requires
// before it sends OPA (32-bit LID) PathRecord queries.
func (c *ClassPortInfo) SupportsOPAPathRecord() bool {
	return c.CapMask2()&CPICapMask2PRSupport != 0
}

// TrapSL returns the trap service level, bits 7:3 of trap_sl_rsvd
// (GET_TRAP_SL_FROM_CLASS_PORT_INFO).
func (c *ClassPortInfo) TrapSL() uint8 { return c.TrapSLRsvd >> 3 & 0x1F }

// SetTrapSL sets bits 7:3 of trap_sl_rsvd (sl masked to 5 bits).
func (c *ClassPortInfo) SetTrapSL(sl uint8) { c.TrapSLRsvd = c.TrapSLRsvd&7 | (sl&0x1F)<<3 }

// TrapQP returns the 24-bit QP of trap_hl_qp.
func (c *ClassPortInfo) TrapQP() uint32 { return c.TrapHLQP & 0xFFFFFF }

// TrapHopLimit returns bits 31:24 of trap_hl_qp.
func (c *ClassPortInfo) TrapHopLimit() uint8 { return uint8(c.TrapHLQP >> 24) }

// AppendBinary appends the 80-byte ClassPortInfo to b.
func (c *ClassPortInfo) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, c.BaseVersion, c.ClassVersion)   // 0, 1
	b = be.AppendUint16(b, c.CapMask)              // 2
	b = be.AppendUint32(b, c.CapMask2RespTime)     // 4
	b = append(b, c.RedirectGID[:]...)             // 8
	b = be.AppendUint32(b, c.RedirectTCFL)         // 24
	b = be.AppendUint32(b, uint32(c.RedirectLID))  // 28
	b = be.AppendUint32(b, c.RedirectSLQP)         // 32
	b = be.AppendUint32(b, c.RedirectQKey)         // 36
	b = append(b, c.TrapGID[:]...)                 // 40
	b = be.AppendUint32(b, c.TrapTCFL)             // 56
	b = be.AppendUint32(b, uint32(c.TrapLID))      // 60
	b = be.AppendUint32(b, c.TrapHLQP)             // 64
	b = be.AppendUint32(b, c.TrapQKey)             // 68
	b = be.AppendUint16(b, uint16(c.TrapPKey))     // 72
	b = be.AppendUint16(b, uint16(c.RedirectPKey)) // 74
	b = append(b, c.TrapSLRsvd)                    // 76
	return append(b, c.Reserved[:]...), nil        // 77
}

// MarshalBinary returns the 80-byte ClassPortInfo.
func (c *ClassPortInfo) MarshalBinary() ([]byte, error) {
	return marshal(ClassPortInfoLen, c.AppendBinary)
}

// UnmarshalBinary decodes the first 80 bytes of b.
func (c *ClassPortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < ClassPortInfoLen {
		return errShort("ClassPortInfo", ClassPortInfoLen, len(b))
	}
	d := dec{b}
	c.BaseVersion = d.u8()
	c.ClassVersion = d.u8()
	c.CapMask = d.u16()
	c.CapMask2RespTime = d.u32()
	d.read(c.RedirectGID[:])
	c.RedirectTCFL = d.u32()
	c.RedirectLID = encap.LID(d.u32())
	c.RedirectSLQP = d.u32()
	c.RedirectQKey = d.u32()
	d.read(c.TrapGID[:])
	c.TrapTCFL = d.u32()
	c.TrapLID = encap.LID(d.u32())
	c.TrapHLQP = d.u32()
	c.TrapQKey = d.u32()
	c.TrapPKey = encap.PKey(d.u16())
	c.RedirectPKey = encap.PKey(d.u16())
	c.TrapSLRsvd = d.u8()
	d.read(c.Reserved[:])
	return nil
}
