package topology

import (
	"fmt"
	"net/netip"
)

// FatTreeSpec shapes a two-level fat tree: every leaf cabled to every
// spine, HostsPerLeaf hosts on each leaf.
type FatTreeSpec struct {
	Leaves, Spines, HostsPerLeaf int
	// SwitchAddress is the address every switch listens on; switch i (the
	// leaves first, then the spines) takes ports from base port
	// DefaultBasePort + 256*i.
	SwitchAddress netip.Addr
	// HostEndpoint gives host i's HFI endpoint (hosts numbered leaf by
	// leaf from 0).
	HostEndpoint func(i int) netip.AddrPort
}

// FatTree writes the topology of a two-level fat tree: leaves leaf1..,
// spines spine1.., hosts host1..; a leaf's hosts are on its ports 1..H and
// its spines on H+1..H+S, and spine s's leaf l is on its port l.
func FatTree(spec FatTreeSpec) (*Topology, error) {
	l, s, h := spec.Leaves, spec.Spines, spec.HostsPerLeaf
	switch {
	case l < 1 || s < 0 || h < 0:
		return nil, fmt.Errorf("topology: fat tree of %d leaves, %d spines, %d hosts a leaf", l, s, h)
	case h+s > MaxPorts || l > MaxPorts:
		return nil, fmt.Errorf("topology: a leaf needs %d ports and a spine %d: at most %d", h+s, l, MaxPorts)
	case (l+s)*256+DefaultBasePort > 65535:
		return nil, fmt.Errorf("topology: %d switches do not fit the UDP ports of one address", l+s)
	case !spec.SwitchAddress.IsValid() || spec.HostEndpoint == nil:
		return nil, fmt.Errorf("topology: a fat tree needs the switches' address and the hosts' endpoints")
	}
	t := &Topology{}
	add := func(name string, ports int) {
		i := len(t.Switches)
		t.Switches = append(t.Switches, Switch{Name: name, NumPorts: ports, Address: spec.SwitchAddress,
			BasePort: uint16(DefaultBasePort + 256*i)})
	}
	for i := 1; i <= l; i++ {
		add(fmt.Sprintf("leaf%d", i), max(h+s, 1))
	}
	for i := 1; i <= s; i++ {
		add(fmt.Sprintf("spine%d", i), l)
	}
	for li := 1; li <= l; li++ {
		for hi := 1; hi <= h; hi++ {
			n := (li-1)*h + hi
			name := fmt.Sprintf("host%d", n)
			t.Hosts = append(t.Hosts, Host{Name: name, Endpoint: spec.HostEndpoint(n - 1)})
			t.Cables = append(t.Cables, Cable{A: End{Switch: fmt.Sprintf("leaf%d", li), Port: hi}, B: End{Host: name}})
		}
		for si := 1; si <= s; si++ {
			t.Cables = append(t.Cables, Cable{A: End{Switch: fmt.Sprintf("leaf%d", li), Port: h + si}, B: End{Switch: fmt.Sprintf("spine%d", si), Port: li}})
		}
	}
	// Through the parser, so that a generated file is checked as a
	// written one is, and GUIDs are filled in.
	return Parse(t.Marshal())
}
