package e2etest

import (
	"fmt"
	"slices"
	"strings"
)

// Host is a vnicd config. A static host has its LID, peers, multicast
// groups and VNICs; a managed one has a FabricManager, and Netdevs for the
// ports the EM makes.
type Host struct {
	Name string
	// LID is node.lid; 0 leaves it out (a managed host is given one).
	LID int
	// Listen is node.listen ("" leaves it out: the wildcard address).
	Listen string
	// FabricManager is node.fabric_manager ("" leaves it out: static).
	FabricManager string
	// BusyPoll is node.busy_poll ("" leaves it out).
	BusyPoll string
	// Queues is node.queues (0 leaves it out).
	Queues int
	// Peers maps a LID to its endpoint.
	Peers map[int]string
	// Groups maps a multicast LID to its members.
	Groups map[int][]int
	// Socket is control.socket; Launch fills in one of its own when empty.
	Socket  string
	VNICs   []VNIC
	Netdevs []Netdev
}

// VNIC is one configured VNIC of a static host.
type VNIC struct {
	VPort, VESW, PKey, Mcast int
	IfName, NetNS            string
	Addrs                    []string
	// EthMTU is the vesw's eth_mtu; 0 is 1400.
	EthMTU int
	// Drop makes the port's config_state drop_all.
	Drop bool
}

// Netdev is how a managed host names and places the netdev of one of the
// ports the EM makes (netdevs: VPORT).
type Netdev struct {
	VPort         int
	IfName, NetNS string
	Addrs         []string
}

// YAML returns h as vnicd's config file.
func (h Host) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node:\n  name: %s\n", h.Name)
	if h.LID != 0 {
		fmt.Fprintf(&b, "  lid: %#x\n", h.LID)
	}
	if h.Listen != "" {
		fmt.Fprintf(&b, "  listen: %q\n", h.Listen)
	}
	if h.FabricManager != "" {
		fmt.Fprintf(&b, "  fabric_manager: %q\n", h.FabricManager)
	}
	if h.BusyPoll != "" {
		fmt.Fprintf(&b, "  busy_poll: %s\n", h.BusyPoll)
	}
	if h.Queues != 0 {
		fmt.Fprintf(&b, "  queues: %d\n", h.Queues)
	}
	if len(h.Peers) > 0 {
		b.WriteString("peers:\n")
		for _, lid := range sortedKeys(h.Peers) {
			fmt.Fprintf(&b, "  - {lid: %#x, address: %q}\n", lid, h.Peers[lid])
		}
	}
	if len(h.Groups) > 0 {
		b.WriteString("multicast:\n")
		for _, lid := range sortedKeys(h.Groups) {
			var ms []string
			for _, m := range h.Groups[lid] {
				ms = append(ms, fmt.Sprintf("%#x", m))
			}
			fmt.Fprintf(&b, "  - {lid: %#x, members: [%s]}\n", lid, strings.Join(ms, ", "))
		}
	}
	fmt.Fprintf(&b, "control:\n  socket: %q\n", h.Socket)
	if len(h.VNICs) > 0 {
		b.WriteString("vnics:\n")
	}
	for _, v := range h.VNICs {
		state := "forwarding"
		if v.Drop {
			state = "drop_all"
		}
		mtu := v.EthMTU
		if mtu == 0 {
			mtu = 1400
		}
		fmt.Fprintf(&b, "  - vport: %d\n    vesw: {id: %d, pkey: %#x, eth_mtu: %d, mcast_dlid: %#x, config_state: %s}\n",
			v.VPort, v.VESW, v.PKey, mtu, v.Mcast, state)
		fmt.Fprintf(&b, "    port:\n%s", port(v.IfName, v.NetNS, v.Addrs, "      "))
	}
	if len(h.Netdevs) > 0 {
		b.WriteString("netdevs:\n")
	}
	for _, n := range h.Netdevs {
		fmt.Fprintf(&b, "  %d:\n%s", n.VPort, port(n.IfName, n.NetNS, n.Addrs, "    "))
	}
	return b.String()
}

// port is the YAML of a netdev's name, namespace and addresses, indented.
func port(ifname, netns string, addrs []string, indent string) string {
	s := ""
	if ifname != "" {
		s += fmt.Sprintf("%sifname: %s\n", indent, ifname)
	}
	if netns != "" {
		s += fmt.Sprintf("%snetns: %q\n", indent, netns)
	}
	if len(addrs) > 0 {
		s += fmt.Sprintf("%saddresses: [%s]\n", indent, strings.Join(addrs, ", "))
	}
	return s
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FabricNodes is the start of an opafm fabric config, up to its vesws'
// list: an FM named fm (with LID lid; 0 leaves it out) listening at listen
// with control socket socket, a LID pool 0xC000-0xC0FF, and nodes host-a
// (LID 0x10) and host-b (given one from the pool). The vesws' items follow.
func FabricNodes(listen, socket string, lid int) string {
	var b strings.Builder
	b.WriteString("fm:\n  name: fm\n")
	if lid != 0 {
		fmt.Fprintf(&b, "  lid: %d\n", lid)
	}
	fmt.Fprintf(&b, "  listen: %q\n  control_socket: %q\n", listen, socket)
	b.WriteString("lid_pool: {start: 0xC000, end: 0xC0FF}\nnodes:\n  - {name: host-a, lid: 0x10}\n  - {name: host-b}\nvesws:\n")
	return b.String()
}
