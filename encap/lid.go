package encap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
)

// LID is a local identifier in the kernel's 32-bit LID space (docs/linux-compat.md §7):
//
//	0                        invalid
//	0x00000001..0xEFFFFFFF   unicast
//	0xF0000000..0xFFFFFFFE   multicast
//	0xFFFFFFFF               permissive
//
// A 16B header carries only 24 bits; To16B and LIDFrom16B convert (docs/wire.md §6).
// The zero value is the invalid LID.
type LID uint32

const (
	// LIDPermissive is the 32-bit permissive LID.
	LIDPermissive LID = 0xFFFFFFFF
	// LIDMulticastBase is the first 32-bit multicast LID (opa_get_mcast_base(4)).
	LIDMulticastBase LID = 0xF0000000
	// LIDExtendedBase is the first unicast LID that does not fit a 9B header.
	LIDExtendedBase LID = 0xC000
	// LIDMaxUnicast16B is the largest unicast LID a 16B header can carry.
	LIDMaxUnicast16B LID = 0xEFFFFF
)

// 16B (24-bit) LID ranges (docs/wire.md §6).
const (
	LID16BMask         uint32 = 0xFFFFFF
	LID16BMulticast    uint32 = 0xF00000 // first multicast
	LID16BCollective   uint32 = 0xF80000 // first collective
	LID16BPermissive   uint32 = 0xFFFFFF
	lid16BMaxUnicast   uint32 = 0xEFFFFF
	lid32MulticastDiff uint32 = 0xF0000000 - 0xF00000
)

// IsValid reports whether l is not the invalid LID 0.
func (l LID) IsValid() bool { return l != 0 }

// IsUnicast reports whether l is a unicast LID in the 32-bit space.
func (l LID) IsUnicast() bool { return l != 0 && l < LIDMulticastBase }

// IsMulticast reports whether l is a 32-bit multicast LID (permissive excluded).
func (l LID) IsMulticast() bool { return l >= LIDMulticastBase && l != LIDPermissive }

// IsPermissive reports whether l is the 32-bit permissive LID.
func (l LID) IsPermissive() bool { return l == LIDPermissive }

// IsExtended reports whether l is a unicast LID that needs 16B (>= 0xC000), as
// the kernel's opa_is_extended_lid.
func (l LID) IsExtended() bool { return l.IsUnicast() && l >= LIDExtendedBase }

// Fits16B reports whether l survives the conversion to a 16B LID and back:
// unicast up to 0xEFFFFF, multicast 0xF0000000..0xF00FFFFE (the 16B multicast
// and collective range), and permissive.
func (l LID) Fits16B() bool {
	switch {
	case l.IsUnicast():
		return uint32(l) <= lid16BMaxUnicast
	case l.IsPermissive():
		return true
	default:
		return uint32(l)-lid32MulticastDiff < LID16BPermissive
	}
}

// To16B converts l to the 24-bit form a 16B header carries, as the kernel's
// __opa_get_lid(lid, OPA_16B): multicast lid-0xF0000000+0xF00000, otherwise
// lid & 0xFFFFFF (so 32-bit permissive becomes 0xFFFFFF).
func (l LID) To16B() uint32 {
	if l.IsMulticast() {
		return (uint32(l) - lid32MulticastDiff) & LID16BMask
	}
	return uint32(l) & LID16BMask
}

// LIDFrom16B converts a 24-bit 16B LID to the 32-bit space: 16B multicast and
// collective LIDs map into 0xF0000000.., 0xFFFFFF to the permissive LID.
func LIDFrom16B(v uint32) LID {
	v &= LID16BMask
	switch {
	case v == LID16BPermissive:
		return LIDPermissive
	case v >= LID16BMulticast:
		return LID(v + lid32MulticastDiff)
	default:
		return LID(v)
	}
}

// Is16BUnicast reports whether a 24-bit LID is unicast (1..0xEFFFFF).
func Is16BUnicast(v uint32) bool { return v != 0 && v <= lid16BMaxUnicast }

// Is16BMulticast reports whether a 24-bit LID is multicast or collective
// (0xF00000..0xFFFFFE), as hfi1_is_16B_mcast.
func Is16BMulticast(v uint32) bool { return v >= LID16BMulticast && v < LID16BPermissive }

// String formats l as 0x-prefixed hex.
func (l LID) String() string { return "0x" + strings.ToUpper(strconv.FormatUint(uint64(l), 16)) }

// ErrBadLID is returned by ParseLID for text that is not a LID.
var ErrBadLID = errors.New("encap: bad LID")

// ParseLID parses a LID written in decimal or 0x-hex. It rejects 0. A leading
// zero does not make a number octal ("010" is ten), and no other prefix or
// digit separator is accepted.
func ParseLID(s string) (LID, error) {
	t, base := strings.TrimSpace(s), 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t, base = t[2:], 16
	}
	v, err := strconv.ParseUint(t, base, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%w: %q", ErrBadLID, s)
	}
	return LID(v), nil
}

// GID is a 128-bit global identifier: subnet prefix (bytes 0-7) and interface
// ID (bytes 8-15), both big-endian.
type GID [16]byte

// OPASpecialOUI is the OUI in the interface ID of a special (OPA) GID.
const OPASpecialOUI = 0x00066A

// DefaultSubnetPrefix is the link-local prefix fe80::/64.
const DefaultSubnetPrefix uint64 = 0xFE80000000000000

// ParseSubnetPrefix parses a GID subnet prefix written as an IPv6 address
// whose low 64 bits are zero ("fe80::", "fec0:0:0:1::"), optionally with the
// prefix length 64 ("fe80::/64"). A zone, an IPv4 (or IPv4-mapped) address
// or another prefix length is an error.
func ParseSubnetPrefix(s string) (uint64, error) {
	a, err := netip.ParseAddr(s)
	if strings.Contains(s, "/") {
		p, perr := netip.ParsePrefix(s)
		if perr == nil && p.Bits() != 64 {
			return 0, errors.New("the prefix length must be 64")
		}
		a, err = p.Addr(), perr
	}
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return 0, errors.New("not an IPv6 prefix such as fe80:: or fe80::/64")
	}
	b := a.As16()
	if binary.BigEndian.Uint64(b[8:]) != 0 {
		return 0, errors.New("the low 64 bits (the interface ID half) must be zero")
	}
	return binary.BigEndian.Uint64(b[:8]), nil
}

// FormatSubnetPrefix formats a subnet prefix as ParseSubnetPrefix takes it,
// without the length ("fe80::").
func FormatSubnetPrefix(p uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], p)
	return netip.AddrFrom16(b).String()
}

// SpecialGID builds the "special GID" that carries a 32-bit LID in path records
// (docs/wire.md §6, OPA_MAKE_ID): prefix, then 00 06 6A 00 and the LID big-endian.
func SpecialGID(prefix uint64, lid LID) GID {
	var g GID
	binary.BigEndian.PutUint64(g[0:8], prefix)
	binary.BigEndian.PutUint64(g[8:16], OPASpecialOUI<<40|uint64(lid))
	return g
}

// Prefix returns the subnet prefix.
func (g GID) Prefix() uint64 { return binary.BigEndian.Uint64(g[0:8]) }

// InterfaceID returns the interface ID.
func (g GID) InterfaceID() uint64 { return binary.BigEndian.Uint64(g[8:16]) }

// IsOPA reports whether g is a special GID (ib_is_opa_gid: the top 24 bits of
// the interface ID are 0x00066A).
func (g GID) IsOPA() bool { return g.InterfaceID()>>40 == OPASpecialOUI }

// LID returns the LID a special GID carries (its low 32 bits), or 0 when g is
// not a special GID.
func (g GID) LID() LID {
	if !g.IsOPA() {
		return 0
	}
	return LID(uint32(g.InterfaceID()))
}

// String formats g as an IPv6 address.
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// PKey is a partition key. The high bit is the full-membership bit.
type PKey uint16

// Well-known partition keys.
const (
	PKeyDefault        PKey = 0xFFFF // full management
	PKeyLimited        PKey = 0x7FFF // limited management
	pkeyMembershipMask PKey = 0x8000
)

// Base returns the key without the membership bit.
func (p PKey) Base() PKey { return p &^ pkeyMembershipMask }

// IsValid reports whether p is usable (its base is not 0).
func (p PKey) IsValid() bool { return p.Base() != 0 }

// String formats p as 0x-prefixed 4-digit hex.
func (p PKey) String() string { return fmt.Sprintf("0x%04X", uint16(p)) }

// VESWID identifies a virtual Ethernet switch. Receivers use the low 12 bits.
type VESWID uint16

// VESWIDMask is the part of a vesw_id a receiver looks at.
const VESWIDMask VESWID = 0xFFF

// IsValid reports whether v is usable by a port: 1..4095 (vesw_id 0 fails
// hfi1_vnic_up, and higher values can never receive).
func (v VESWID) IsValid() bool { return v != 0 && v <= VESWIDMask }

// MarshalText formats l as String does, so LIDs read as hex in JSON and YAML.
func (l LID) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a LID as ParseLID does.
func (l *LID) UnmarshalText(b []byte) error {
	v, err := ParseLID(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// GUID is a 64-bit globally unique identifier (node, port or system image).
type GUID uint64

// String formats g as 0x-prefixed 16-digit hex.
func (g GUID) String() string { return fmt.Sprintf("0x%016x", uint64(g)) }

// MarshalText formats g as String does.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// GUIDFromName derives a GUID from a name, for a daemon whose config gives
// none: the 64-bit FNV-1a hash of the name with the low two bits of its top
// byte set to binary 10, which makes it a locally administered, individual
// EUI-64 and never 0. vnicd and the FM derive their GUIDs alike.
func GUIDFromName(name string) GUID {
	h := fnv.New64a()
	h.Write([]byte(name))
	return GUID(h.Sum64()&^(3<<56) | 2<<56)
}
