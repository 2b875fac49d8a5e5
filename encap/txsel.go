package encap

import "encoding/binary"

// Transmit helpers that belong to the format (docs/linux-compat.md §2): the
// entropy fold, the default-port flow table, the DLID carried in a locally
// administered MAC, and the SC and RC choices.

// FoldEntropy folds a 32-bit flow hash into the 8-bit VNIC entropy, as
// opa_vnic_calc_entropy: h ^= h>>8; h ^= h>>16; h & 0xFF.
func FoldEntropy(hash uint32) uint8 {
	hash ^= hash >> 8
	hash ^= hash >> 16
	return uint8(hash)
}

// Flow table constants.
const (
	FlowTableSize  = 32   // OPA_VNIC_FLOW_TBL_SIZE
	InvalidPort    = 0xFF // OPA_VNIC_INVALID_PORT
	MaxDefaultPort = 16   // OPA_VESW_MAX_NUM_DEF_PORT
)

// FlowTable maps an entropy value to a default port, built from a vesw's
// def_port_mask. The zero value maps everything to port 0; use NewFlowTable.
type FlowTable [FlowTableSize]uint8

// NewFlowTable builds the table as opa_vnic_process_vema_config: the set bits
// of mask, lowest first, repeated round robin over 32 slots; all InvalidPort
// when mask is 0.
func NewFlowTable(mask uint16) FlowTable {
	var ports [MaxDefaultPort]uint8
	k := 0
	for b := range MaxDefaultPort {
		if mask&(1<<b) != 0 {
			ports[k] = uint8(b)
			k++
		}
	}
	var t FlowTable
	for i := range t {
		if k == 0 {
			t[i] = InvalidPort
		} else {
			t[i] = ports[i%k]
		}
	}
	return t
}

// Port returns the default port for an entropy value, as
// opa_vnic_get_def_port: flow_id = (e & 0xF) + (e >> 4), then flow_tbl[flow_id & 31].
func (t *FlowTable) Port(entropy uint8) uint8 {
	return t[(int(entropy&0xF)+int(entropy>>4))&(FlowTableSize-1)]
}

// IsMulticastMAC reports whether the I/G bit is set (multicast or broadcast).
func IsMulticastMAC(mac []byte) bool { return mac[0]&1 != 0 }

// IsLocalMAC reports whether the U/L bit is set (locally administered).
func IsLocalMAC(mac []byte) bool { return mac[0]&2 != 0 }

// DLIDFromMAC returns the 24-bit LID a locally administered MAC carries in
// bytes 3-5, byte 5 most significant: dmac[5]<<16 | dmac[4]<<8 | dmac[3].
func DLIDFromMAC(mac []byte) uint32 {
	return uint32(mac[5])<<16 | uint32(mac[4])<<8 | uint32(mac[3])
}

// MACForLID derives a port's default MAC: locally administered unicast
// (byte 0 = 0x02), the vesw_id in bytes 1-2 so two ports of one host on
// different vesws differ, and the 24-bit LID in bytes 3-5 (byte 3 lowest), so
// DLIDFromMAC recovers it.
func MACForLID(lid LID, vesw VESWID) [6]byte {
	v := lid.To16B()
	return [6]byte{0x02, byte(vesw >> 8), byte(vesw), byte(v), byte(v >> 8), byte(v >> 16)}
}

// Ethernet types the transmit choices look at.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86DD
	EtherTypeVLAN   = 0x8100
	EtherTypeQinQ   = 0x88A8
	ipProtoTCP      = 6
	ipProtoUDP      = 17
	ethHeaderLen    = 14
	vlanTagLen      = 4
	maxVLANTagsSeen = 8 // bound on stacked tags walked, as a defence against loops
)

// FrameInfo is what the transmit choices need from an Ethernet frame, read
// once. The zero value describes a frame with nothing recognisable.
type FrameInfo struct {
	// Multicast is the destination's I/G bit.
	Multicast bool
	// Tagged and PCP come from the in-band tag at offset 12 (0x8100 or 0x88A8),
	// the one the kernel's SC choice looks at.
	Tagged bool
	PCP    uint8
	// EtherType is the protocol after all VLAN tags (vlan_get_protocol).
	EtherType uint16
	// L3Off is the offset of the IP header, 0 if none was found.
	L3Off int
	// Proto is the IPv4 protocol or the first IPv6 next header.
	Proto uint8
}

// ParseFrame reads what the transmit path needs from frame. It never fails;
// frames too short for a field leave it zero.
func ParseFrame(frame []byte) FrameInfo {
	var fi FrameInfo
	if len(frame) < ethHeaderLen {
		if len(frame) > 0 {
			fi.Multicast = frame[0]&1 != 0
		}
		return fi
	}
	fi.Multicast = frame[0]&1 != 0
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	if (et == EtherTypeVLAN || et == EtherTypeQinQ) && len(frame) >= off+4 {
		fi.Tagged = true
		fi.PCP = frame[off+2] >> 5
	}
	for i := 0; (et == EtherTypeVLAN || et == EtherTypeQinQ) && i < maxVLANTagsSeen; i++ {
		off += vlanTagLen
		if len(frame) < off+2 {
			return fi
		}
		et = binary.BigEndian.Uint16(frame[off:])
	}
	fi.EtherType = et
	l3 := off + 2
	switch et {
	case EtherTypeIPv4:
		if len(frame) >= l3+20 {
			fi.L3Off, fi.Proto = l3, frame[l3+9]
		}
	case EtherTypeIPv6:
		if len(frame) >= l3+40 {
			fi.L3Off, fi.Proto = l3, frame[l3+6]
		}
	}
	return fi
}

// SCMap holds a vesw port's PCP -> SC choices (opa_per_veswport_info).
type SCMap struct {
	PCPToSCUC [8]uint8
	PCPToSCMC [8]uint8
	NonVLANUC uint8
	NonVLANMC uint8
}

// SC chooses the service class as opa_vnic_get_sc: a tagged frame by its PCP,
// an untagged one by the non-VLAN value, multicast and unicast apart.
func (m *SCMap) SC(fi *FrameInfo) uint8 {
	switch {
	case fi.Tagged && fi.Multicast:
		return m.PCPToSCMC[fi.PCP]
	case fi.Tagged:
		return m.PCPToSCUC[fi.PCP]
	case fi.Multicast:
		return m.NonVLANMC
	default:
		return m.NonVLANUC
	}
}

// Bit offsets of the 3-bit routing-control fields in a vesw's rc word
// (encap.h OPA_VNIC_ENCAP_RC_*).
const (
	RCDefault = 0
	RCIPv4    = 4
	RCIPv4UDP = 8
	RCIPv4TCP = 12
	RCIPv6    = 16
	RCIPv6TCP = 20
	RCIPv6UDP = 24
)

// RCClass returns the bit offset of the rc field that applies to a frame, as
// opa_vnic_get_rc (IPv6 looks at the first next header only).
func RCClass(fi *FrameInfo) uint {
	switch fi.EtherType {
	case EtherTypeIPv4:
		switch fi.Proto {
		case ipProtoUDP:
			return RCIPv4UDP
		case ipProtoTCP:
			return RCIPv4TCP
		}
		return RCIPv4
	case EtherTypeIPv6:
		switch fi.Proto {
		case ipProtoTCP:
			return RCIPv6TCP
		case ipProtoUDP:
			return RCIPv6UDP
		}
		return RCIPv6
	}
	return RCDefault
}

// SelectRC extracts the routing control for a frame from a vesw's rc word.
func SelectRC(rc uint32, fi *FrameInfo) uint8 { return uint8(rc >> RCClass(fi) & 7) }

// FlowHash returns a hash of the frame's flow: IP addresses, protocol and, for
// TCP and UDP, ports; for other frames the MAC addresses and EtherType. Packets
// of one flow hash alike, so FoldEntropy keeps a flow on one path. It stands in
// for the kernel's skb_get_hash, whose value was never reproducible anyway.
func FlowHash(frame []byte, fi *FrameInfo) uint32 {
	const prime = 16777619
	h := uint32(2166136261)
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint32(c)) * prime
		}
	}
	var l4 int
	switch {
	case fi.L3Off != 0 && fi.EtherType == EtherTypeIPv4:
		ip := frame[fi.L3Off:]
		mix(ip[12:20])
		h ^= uint32(fi.Proto)
		// Ports only when the datagram is not fragmented (MF clear, offset
		// 0): the first fragment carries the ports and later ones do not,
		// so hashing none of them with ports keeps a datagram on one path.
		if ihl := int(ip[0]&0xF) * 4; ihl >= 20 && ip[6]&0x3F == 0 && ip[7] == 0 {
			l4 = fi.L3Off + ihl
		}
	case fi.L3Off != 0 && fi.EtherType == EtherTypeIPv6:
		mix(frame[fi.L3Off+8 : fi.L3Off+40])
		h ^= uint32(fi.Proto)
		l4 = fi.L3Off + 40
	default:
		if len(frame) >= ethHeaderLen {
			mix(frame[:ethHeaderLen])
		}
		return h
	}
	if l4 != 0 && (fi.Proto == ipProtoTCP || fi.Proto == ipProtoUDP) && len(frame) >= l4+4 {
		mix(frame[l4 : l4+4])
	}
	return h
}
