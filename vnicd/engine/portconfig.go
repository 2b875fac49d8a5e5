package engine

import (
	"net/netip"

	"github.com/opavnic/opavnic/encap"
)

// Port states of opa_per_veswport_info (config_state, oper_state).
const (
	StateDropAll    uint8 = 1
	StateForwarding uint8 = 3
)

// VESWConfig is a virtual Ethernet switch as one of its ports sees it: the
// fields of the kernel's opa_vesw_info (docs/linux-compat.md §4.5).
type VESWConfig struct {
	FabricID    uint16
	VESWID      encap.VESWID
	DefPortMask uint16
	PKey        encap.PKey
	// McastDLID is the 16B multicast LID for multicast and broadcast frames.
	McastDLID uint32
	// UcastDLID are the unknown-unicast DLIDs (16B) of the default ports.
	UcastDLID [encap.MaxDefaultPort]uint32
	// RC is the routing-control word: 3-bit fields at encap.RC* offsets.
	RC     uint32
	EthMTU uint16
}

// VPortConfig is the writable part of the kernel's opa_per_veswport_info.
type VPortConfig struct {
	PortNum     uint32
	BaseMAC     [6]byte
	ConfigState uint8
	// EncapSLID is the SLID the port sends with (16B form).
	EncapSLID uint32
	SC        encap.SCMap
	PCPToVLUC [8]uint8
	PCPToVLMC [8]uint8
	NonVLANVL [2]uint8 // uc, mc
}

// PortConfig is everything the transmit and receive paths of one VNIC port run
// with, as the VEMA agent sets it.
type PortConfig struct {
	VESW VESWConfig
	Port VPortConfig
}

// MACEntry is one MAC-table entry: frames to MAC go to DLID (16B).
type MACEntry struct {
	MAC  [6]byte
	DLID uint32
}

// NetdevConfig is the host side of a VNIC port: how its TAP netdev is named
// and placed. None of it travels in a MAD.
type NetdevConfig struct {
	IfName    string         // "" means vnic%d
	NetNS     string         // "" means vnicd's own; a name under /var/run/netns, pid:N or a path
	Addresses []netip.Prefix // set on the netdev after it comes up
}

// A vesw's eth_mtu: its default and bounds.
const (
	// DefaultEthMTU is a vesw's eth_mtu when the config gives none.
	DefaultEthMTU = 1500
	// MinEthMTU is the smallest eth_mtu (the IPv4 minimum).
	MinEthMTU = 68
	// MaxEthMTU is the largest eth_mtu: a full-size frame, MTU + 18 bytes
	// (VLAN_ETH_HLEN, the receivers' oversize limit), must fit a 16B packet.
	MaxEthMTU = encap.MaxFrameLen - MaxFrameOverMTU
)
