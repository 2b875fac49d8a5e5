package config

import (
	"fmt"
	"net/netip"

	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// NetdevFor is the netdev of vport: from vnics, else from netdevs, else
// vnic<vport> in vnicd's own namespace.
func (c *Config) NetdevFor(vport uint8) engine.NetdevConfig {
	for _, v := range c.VNICs {
		if v.VPort == vport {
			return v.Netdev
		}
	}
	if n, ok := c.Netdevs[vport]; ok {
		return n
	}
	return engine.NetdevConfig{IfName: fmt.Sprintf("vnic%d", vport)}
}

// Directory builds the HFI directory of a config: every peer and the node
// itself, and the multicast groups; in managed mode, the FM too.
func (c *Config) Directory() (*hfi.Directory, error) {
	eps := make(map[uint32]netip.AddrPort, len(c.Peers)+1)
	for _, p := range c.Peers {
		eps[p.LID.To16B()] = p.Addr
	}
	if c.Node.Managed() {
		eps[c.Node.FMLID.To16B()] = c.Node.FabricManager
	}
	if c.Node.LID != 0 && c.Node.Listen.Addr().IsValid() && !c.Node.Listen.Addr().IsUnspecified() {
		eps[c.Node.LID.To16B()] = c.Node.Listen
	}
	groups := make(map[uint32][]uint32, len(c.Multicast))
	for _, g := range c.Multicast {
		groups[g.LID] = g.Members
	}
	return hfi.NewDirectory(eps, groups)
}

// UnderlayIPHeaderLen is the IP header of the underlay's datagrams: 40
// bytes for IPv6, 20 for IPv4. The family is the listen address's, or with
// the unspecified [::] (dual-stack, the default) the first peer's, whose
// route warnMTU checks.
func (c *Config) UnderlayIPHeaderLen() int {
	a := c.Node.Listen.Addr()
	if a == netip.IPv6Unspecified() && len(c.Peers) > 0 {
		a = c.Peers[0].Addr.Addr()
	}
	if a.Is6() && !a.Is4In6() {
		return 40
	}
	return 20
}
