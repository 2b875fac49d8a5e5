package yamlcfg

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/encap"
)

// The values of a virtual Ethernet switch that vnicd's vesw entries and the
// fabric manager's vesws entries write the same way.

// MaxRC is the largest value of one routing-control field (3 bits), MaxSC
// the largest SC or VL in a class map (5 bits).
const (
	MaxRC = 7
	MaxSC = 31
)

// rcUnusedBits are the bits of the rc word outside its 3-bit fields.
const rcUnusedBits = 0xFFFFFFFF &^ 0x07777777

// RCFields are the keys of the map form of rc, with their bit offsets, in
// the order a config writes them.
var RCFields = []struct {
	Key   string
	Shift uint
}{
	{"default", encap.RCDefault},
	{"ipv4", encap.RCIPv4},
	{"ipv4_udp", encap.RCIPv4UDP},
	{"ipv4_tcp", encap.RCIPv4TCP},
	{"ipv6", encap.RCIPv6},
	{"ipv6_tcp", encap.RCIPv6TCP},
	{"ipv6_udp", encap.RCIPv6UDP},
}

// RC parses rc: the routing-control word as an integer, or a mapping from
// traffic class (RCFields) to a 3-bit value. Absent is 0.
func (c *Checker) RC(l Leaf, path string) uint32 {
	n := l.Node()
	if n == nil {
		return 0
	}
	if n.Kind != yaml.MappingNode {
		w := c.Ranged(l, path, 0, 0xFFFFFFFF, 0, true)
		if unused := uint32(w) & rcUnusedBits; unused != 0 {
			c.Failf(path, l, "0x%X sets bits 0x%X, which are not part of a 3-bit field at offsets 0, 4, ..., 24", w, unused)
		}
		return uint32(w)
	}
	var w uint32
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := LeafOf(n.Content[i]), LeafOf(n.Content[i+1])
		key, _ := c.Text(k, path)
		kp := path + "." + key
		j := 0
		for j < len(RCFields) && RCFields[j].Key != key {
			j++
		}
		switch {
		case j == len(RCFields):
			c.Failf(kp, k, "unknown field (rc keys: default, ipv4, ipv4_udp, ipv4_tcp, ipv6, ipv6_tcp, ipv6_udp)")
			return 0
		case seen[key]:
			c.Failf(kp, k, "given twice")
			return 0
		}
		seen[key] = true
		w |= uint32(c.Ranged(val, kp, 0, MaxRC, 0, false)) << RCFields[j].Shift
	}
	return w
}

// RawClassMap is sc or vl as written: PCP-indexed tables for unicast and
// multicast, and the classes of frames without a VLAN tag.
type RawClassMap struct {
	UC        Leaf `yaml:"uc"`
	MC        Leaf `yaml:"mc"`
	NonVLANUC Leaf `yaml:"non_vlan_uc"`
	NonVLANMC Leaf `yaml:"non_vlan_mc"`
}

// ClassMap parses sc or vl: 8-entry uc and mc lists and two scalars, each
// 0..MaxSC; absent values are 0.
func (c *Checker) ClassMap(r *RawClassMap, path string) (uc, mc [8]uint8, nonUC, nonMC uint8) {
	table := func(l Leaf, p string) (t [8]uint8) {
		if !l.Present() {
			return t
		}
		es := c.List(l, p)
		if len(es) != len(t) {
			// Not 8 whether or not an earlier field failed: t holds 8.
			if !c.Failed() {
				c.Failf(p, l, "must list 8 values (PCP 0..7), not %d", len(es))
			}
			return t
		}
		for i, e := range es {
			ep := fmt.Sprintf("%s[%d]", p, i)
			if c.Required(e, ep) {
				t[i] = uint8(c.Ranged(e, ep, 0, MaxSC, 0, false))
			}
		}
		return t
	}
	uc = table(r.UC, path+".uc")
	mc = table(r.MC, path+".mc")
	nonUC = uint8(c.Ranged(r.NonVLANUC, path+".non_vlan_uc", 0, MaxSC, 0, false))
	nonMC = uint8(c.Ranged(r.NonVLANMC, path+".non_vlan_mc", 0, MaxSC, 0, false))
	return uc, mc, nonUC, nonMC
}

// MulticastLID parses a 16B multicast group LID (0xF00000..0xF7FFFF); 0
// when absent or bad. A 32-bit multicast LID whose 16B form is a group LID
// is refused with that form in the message.
func (c *Checker) MulticastLID(l Leaf, path string) uint32 {
	v, ok := c.Number(l, path)
	switch {
	case !ok:
		return 0
	case v >= uint64(encap.LID16BMulticast) && v < uint64(encap.LID16BCollective):
		return uint32(v)
	case v >= uint64(encap.LIDMulticastBase) &&
		v-uint64(encap.LIDMulticastBase) < uint64(encap.LID16BCollective-encap.LID16BMulticast):
		c.Failf(path, l, "0x%X is a 32-bit multicast LID; write its 16B form 0x%X", v, encap.LID(v).To16B())
	default:
		c.Failf(path, l, "0x%X is not a 16B multicast LID (0xF00000..0xF7FFFF; collective and permissive LIDs are not groups)", v)
	}
	return 0
}
