package fm

// The fabric config: the YAML file the fabric manager starts from. Every
// field is documented on the Go types below and in configs/README.md ("Fabric
// manager"); configs/fabric.example.yaml shows them all.
//
// Reading a file takes the three steps vnicd's config takes: ${NAME} and
// ${NAME:-default} are expanded, yaml.v3 decodes the text with KnownFields
// into raw structs whose leaves are YAML nodes (so unknown keys are errors and
// every value keeps its line), and build checks and defaults each value,
// stopping at the first problem with a *ConfigError naming the field.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/yamlcfg"
	"github.com/opavnic/opavnic/vema"
)

// Config defaults and bounds.
const (
	// DefaultUDPPort is the FM's UDP port when fm.listen names none.
	DefaultUDPPort = 4793
	// DefaultLID is the FM's own LID (fm.lid).
	DefaultLID = 1
	// DefaultPoolStart and DefaultPoolEnd bound the LID pool when the config
	// gives none: every 24-bit unicast LID from 0x10, so a large fabric runs
	// into extended LIDs (>= 0xC000) as a matter of course.
	DefaultPoolStart = 0x10
	DefaultPoolEnd   = 0xEFFFFF
	// DefaultControlDir is where the default control socket lives.
	DefaultControlDir = "/run/opavnic"
	// DefaultEthMTU is a vesw's eth_mtu when the config gives none.
	DefaultEthMTU = 1500
	// MaxVPort is the largest vport index: the VEMA advertises 255 vports
	// (OPA_VNIC_MAX_NUM_VPORT), indices 0..254.
	MaxVPort = vema.MaxVPort
	// MaxFabricID is the largest fabric_id (10 bits).
	MaxFabricID = 1023

	maxName       = 64 // node names: a NodeDescription holds 64 bytes
	maxSocketPath = 107
	minEthMTU     = 68
	maxEthMTU     = encap.MaxFrameLen - 18
)

// Config is a fabric configuration, every value typed, validated and
// defaulted. ParseConfig and LoadConfig make one.
type Config struct {
	FM    FMConfig
	Pool  LIDPool
	Nodes []NodeConfig
	VESWs []VESWConfig
}

// FMConfig is the `fm` section: the manager's own identity and sockets.
type FMConfig struct {
	// Name names the FM in logs and in the default control socket path.
	// Required.
	Name string
	// GUID is the FM port's GUID; default derived from Name (encap.GUIDFromName of the name).
	GUID uint64
	// LID is the FM's LID, default 1. Nodes send announces and SA queries to it.
	LID uint32
	// Listen is the UDP address of the FM's HFI, default [::]:4793.
	Listen netip.AddrPort
	// SubnetPrefix is the GID prefix set in every port, default fe80::.
	SubnetPrefix uint64
	// ControlSocket is the Unix control socket, default
	// /run/opavnic/opafm-<name>.sock.
	ControlSocket string
}

// LIDPool is the range of LIDs handed out to nodes without a fixed LID,
// inclusive. Default 0x10..0xEFFFFF.
type LIDPool struct{ Start, End uint32 }

// Contains reports whether lid is in the pool.
func (p LIDPool) Contains(lid uint32) bool { return lid >= p.Start && lid <= p.End }

// NodeConfig is one entry of `nodes`: a host the fabric expects. A joining
// node matches it by GUID when one is given, else by its NodeDescription
// (vnicd's node name). Nodes not listed may still join and get pool LIDs.
type NodeConfig struct {
	Name string
	GUID uint64 // 0: match by name
	LID  uint32 // 0: from the pool
}

// VESWConfig is one virtual Ethernet switch.
type VESWConfig struct {
	ID        encap.VESWID
	Name      string
	FabricID  uint16
	PKey      encap.PKey
	EthMTU    uint16
	McastDLID uint32 // 16B multicast LID, 0 for none
	// DefaultPorts are the unknown-unicast DLIDs by default-port index.
	DefaultPorts []DefaultPort
	RC           uint32
	SC, VL       ClassMap
	AdminUp      bool
	Members      []Member
}

// DefaultPort is one default (unknown-unicast) port: a fixed DLID, or the LID
// of a node, resolved when the EM pushes.
type DefaultPort struct {
	Index uint8
	DLID  uint32
	Node  string
}

// ClassMap is a PCP -> SC (or VL) map: unicast and multicast tables and the
// values for untagged frames.
type ClassMap struct {
	UC, MC    [8]uint8
	NonVLANUC uint8
	NonVLANMC uint8
}

// Member is one port of a vesw: a node's vport.
type Member struct {
	Node  string
	VPort uint8
	// MAC is a fixed MAC; zero means the derived one (encap.MACForLID).
	MAC [6]byte
	// IPs are informational hints, shown in status only.
	IPs []string
}

// ConfigError is a config that cannot be used: which field, why, and where.
// Its message starts "fabric config: ".
type ConfigError = yamlcfg.Error

// LoadConfig reads and parses the file at path. A read error comes back as
// os.ReadFile gives it; everything else is a *ConfigError.
func LoadConfig(path string) (*Config, error) { return loader.Load(path) }

// ParseConfig parses a config's text, expanding ${NAME} and ${NAME:-default}
// from the environment. The error is a *ConfigError.
func ParseConfig(data []byte) (*Config, error) { return loader.Parse(data, os.LookupEnv) }

// loader reads the file: its errors say "fabric config: ".
var loader = yamlcfg.Loader[rawConfig, Config]{Config: "fabric config", NotMapping: "the file must be a mapping (fm, lid_pool, nodes, vesws)", Build: (*rawConfig).build}

// DefaultControlSocket returns the control socket path used when the config
// gives none.
func DefaultControlSocket(name string) string {
	return DefaultControlDir + "/opafm-" + name + ".sock"
}

// Summary describes in a few lines what the config sets up: the FM's
// identity, the LID pool, the nodes, and each vesw with its members.
func (c *Config) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fm %s lid %v guid 0x%016X listen %v subnet_prefix %s control %s",
		c.FM.Name, encap.LID(c.FM.LID), c.FM.GUID, c.FM.Listen, encap.FormatSubnetPrefix(c.FM.SubnetPrefix), c.FM.ControlSocket)
	fmt.Fprintf(&b, "\nlid_pool %v..%v", encap.LID(c.Pool.Start), encap.LID(c.Pool.End))
	for _, n := range c.Nodes {
		lid, guid := "pool", "by name"
		if n.LID != 0 {
			lid = encap.LID(n.LID).String()
		}
		if n.GUID != 0 {
			guid = fmt.Sprintf("0x%016X", n.GUID)
		}
		fmt.Fprintf(&b, "\nnode %s lid %s guid %s", n.Name, lid, guid)
	}
	for _, v := range c.VESWs {
		state := "up"
		if !v.AdminUp {
			state = "down"
		}
		fmt.Fprintf(&b, "\nvesw %d %s pkey %v mtu %d mcast 0x%X %s members", v.ID, v.Name, v.PKey, v.EthMTU, v.McastDLID, state)
		if len(v.Members) == 0 {
			b.WriteString(" -")
		}
		for _, m := range v.Members {
			fmt.Fprintf(&b, " %s/%d", m.Node, m.VPort)
		}
	}
	return b.String()
}

// Node returns the configured node of that name.
func (c *Config) Node(name string) (NodeConfig, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeConfig{}, false
}

// --- YAML decoding (internal/yamlcfg, as vnicd's config) ---

// leaf holds the YAML node of one value as written; a missing or null value
// leaves it zero.
type leaf = yamlcfg.Leaf

type rawConfig struct {
	FM    rawFM     `yaml:"fm"`
	Pool  rawPool   `yaml:"lid_pool"`
	Nodes []rawNode `yaml:"nodes"`
	VESWs []rawVESW `yaml:"vesws"`
}

type rawFM struct {
	Name          leaf `yaml:"name"`
	GUID          leaf `yaml:"guid"`
	LID           leaf `yaml:"lid"`
	Listen        leaf `yaml:"listen"`
	SubnetPrefix  leaf `yaml:"subnet_prefix"`
	ControlSocket leaf `yaml:"control_socket"`
}

type rawPool struct {
	Start leaf `yaml:"start"`
	End   leaf `yaml:"end"`
}

type rawNode struct {
	Name leaf `yaml:"name"`
	GUID leaf `yaml:"guid"`
	LID  leaf `yaml:"lid"`
}

type rawVESW struct {
	ID           leaf         `yaml:"id"`
	Name         leaf         `yaml:"name"`
	FabricID     leaf         `yaml:"fabric_id"`
	PKey         leaf         `yaml:"pkey"`
	EthMTU       leaf         `yaml:"eth_mtu"`
	McastDLID    leaf         `yaml:"mcast_dlid"`
	DefaultPorts []rawDefPort `yaml:"default_ports"`
	RC           leaf         `yaml:"rc"`
	SC           rawClassMap  `yaml:"sc"`
	VL           rawClassMap  `yaml:"vl"`
	AdminState   leaf         `yaml:"admin_state"`
	Members      []rawMember  `yaml:"members"`
}

type rawDefPort struct {
	Index leaf `yaml:"index"`
	DLID  leaf `yaml:"dlid"`
	Node  leaf `yaml:"node"`
}

type rawClassMap = yamlcfg.RawClassMap

type rawMember struct {
	Node  leaf `yaml:"node"`
	VPort leaf `yaml:"vport"`
	MAC   leaf `yaml:"mac"`
	IP    leaf `yaml:"ip"`
}

// --- building ---

// checker keeps the first problem found (yamlcfg.Checker, which also checks
// the syntax of single values, lists and integers).
type checker struct{ yamlcfg.Checker }

func (c *checker) name(l leaf, path string) string {
	s, ok := c.Text(l, path)
	if !ok {
		c.Failf(path, l, "is required")
		return ""
	}
	switch {
	case s == "":
		c.Failf(path, l, "must not be empty")
	case len(s) > maxName:
		c.Failf(path, l, "is longer than %d bytes", maxName)
	case strings.ContainsRune(s, '/') || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		c.Failf(path, l, "%q: must not contain /, white space or a control character", s)
	}
	return s
}

func (r *rawConfig) build() (*Config, error) {
	c := &checker{}
	cfg := &Config{}
	cfg.FM = c.buildFM(&r.FM)
	cfg.Pool.Start = uint32(c.Ranged(r.Pool.Start, "lid_pool.start", 1, DefaultPoolEnd, DefaultPoolStart, true))
	cfg.Pool.End = uint32(c.Ranged(r.Pool.End, "lid_pool.end", 1, DefaultPoolEnd, DefaultPoolEnd, true))
	if !c.Failed() && cfg.Pool.End < cfg.Pool.Start {
		c.Failf("lid_pool.end", r.Pool.End, "0x%X is below lid_pool.start 0x%X", cfg.Pool.End, cfg.Pool.Start)
	}
	if !c.Failed() && cfg.Pool.Contains(cfg.FM.LID) && cfg.Pool.Start == cfg.Pool.End {
		c.Failf("lid_pool", leaf{}, "holds only the FM's own LID")
	}
	names := map[string]bool{}
	// One GUID names one port: the SA answers a node's GID with its LID.
	guids := map[uint64]string{cfg.FM.GUID: "the FM (fm.guid)"}
	lids := map[uint32]string{cfg.FM.LID: "the FM (fm.lid)"}
	for i := range r.Nodes {
		p := fmt.Sprintf("nodes[%d]", i)
		rn := &r.Nodes[i]
		if i == MaxNodes && !c.Failed() {
			c.Failf(p, rn.Name, "more than %d nodes: the SM keeps at most %d (with the FM, a directory generation's %d LIDs)",
				MaxNodes, MaxNodes, vema.MaxDirEntries)
		}
		n := NodeConfig{Name: c.name(rn.Name, p+".name")}
		if names[n.Name] && !c.Failed() {
			c.Failf(p+".name", rn.Name, "node %q is listed twice", n.Name)
		}
		names[n.Name] = true
		if rn.GUID.Present() {
			n.GUID = c.Ranged(rn.GUID, p+".guid", 1, 1<<64-1, 0, true)
			if o, dup := guids[n.GUID]; dup && !c.Failed() {
				c.Failf(p+".guid", rn.GUID, "GUID 0x%X is also %s's", n.GUID, o)
			}
			guids[n.GUID] = fmt.Sprintf("node %q", n.Name)
		}
		if rn.LID.Present() {
			n.LID = uint32(c.Ranged(rn.LID, p+".lid", 1, DefaultPoolEnd, 0, true))
			if o, dup := lids[n.LID]; dup && !c.Failed() {
				c.Failf(p+".lid", rn.LID, "LID 0x%X is already %s's", n.LID, o)
			}
			lids[n.LID] = fmt.Sprintf("node %q", n.Name)
		}
		cfg.Nodes = append(cfg.Nodes, n)
	}
	ids := map[encap.VESWID]bool{}
	type port struct {
		node  string
		vport uint8
	}
	ports := map[port]encap.VESWID{} // a VEMA vport is one port of one vesw
	for i := range r.VESWs {
		v := c.buildVESW(&r.VESWs[i], fmt.Sprintf("vesws[%d]", i), names)
		if ids[v.ID] && !c.Failed() {
			c.Failf(fmt.Sprintf("vesws[%d].id", i), r.VESWs[i].ID, "vesw %d is declared twice", v.ID)
		}
		ids[v.ID] = true
		for j, m := range v.Members {
			if o, dup := ports[port{m.Node, m.VPort}]; dup && o != v.ID && !c.Failed() {
				c.Failf(fmt.Sprintf("vesws[%d].members[%d]", i, j), r.VESWs[i].Members[j].Node,
					"node %q vport %d is already a member of vesw %d: a vport belongs to one vesw", m.Node, m.VPort, o)
			}
			ports[port{m.Node, m.VPort}] = v.ID
		}
		cfg.VESWs = append(cfg.VESWs, v)
	}
	if !c.Failed() {
		c.checkGroups(r, cfg)
	}
	if c.Failed() {
		return nil, c.Err()
	}
	return cfg, nil
}

// checkGroups holds the vesws' multicast groups to the directory's bounds
// (vema.MaxDirGroups groups, vema.MaxDirGroupMembers member nodes each): a
// directory beyond them could not be pushed at all.
func (c *checker) checkGroups(r *rawConfig, cfg *Config) {
	groups := map[uint32]map[string]bool{} // mcast_dlid -> member nodes
	for i, v := range cfg.VESWs {
		if v.McastDLID == 0 {
			continue
		}
		g := groups[v.McastDLID]
		if g == nil {
			if len(groups) == vema.MaxDirGroups {
				c.Failf(fmt.Sprintf("vesws[%d].mcast_dlid", i), r.VESWs[i].McastDLID,
					"0x%X would be multicast group %d: the directory holds at most %d", v.McastDLID, len(groups)+1, vema.MaxDirGroups)
				return
			}
			g = map[string]bool{}
			groups[v.McastDLID] = g
		}
		for j, m := range v.Members {
			g[m.Node] = true
			if len(g) > vema.MaxDirGroupMembers {
				c.Failf(fmt.Sprintf("vesws[%d].members[%d].node", i, j), r.VESWs[i].Members[j].Node,
					"node %q would be member %d of multicast group 0x%X: a directory group holds at most %d",
					m.Node, len(g), v.McastDLID, vema.MaxDirGroupMembers)
				return
			}
		}
	}
}

func (c *checker) buildFM(r *rawFM) FMConfig {
	f := FMConfig{Name: c.name(r.Name, "fm.name"), SubnetPrefix: encap.DefaultSubnetPrefix}
	f.GUID = uint64(encap.GUIDFromName(f.Name))
	if r.GUID.Present() {
		f.GUID = c.Ranged(r.GUID, "fm.guid", 1, 1<<64-1, f.GUID, true)
	}
	f.LID = uint32(c.Ranged(r.LID, "fm.lid", 1, DefaultPoolEnd, DefaultLID, true))
	f.Listen = yamlcfg.Parsed(&c.Checker, r.Listen, "fm.listen", netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultUDPPort), parseListen)
	f.SubnetPrefix = yamlcfg.Parsed(&c.Checker, r.SubnetPrefix, "fm.subnet_prefix", encap.DefaultSubnetPrefix, encap.ParseSubnetPrefix)
	f.ControlSocket = DefaultControlSocket(f.Name)
	if s, _ := c.Text(r.ControlSocket, "fm.control_socket"); s != "" {
		switch {
		case len(s) < 2 || s[0] != '/' && s[0] != '@':
			c.Failf("fm.control_socket", r.ControlSocket, "%q must be an absolute path (or @name for an abstract socket)", s)
		case len(s) > maxSocketPath:
			c.Failf("fm.control_socket", r.ControlSocket, "is longer than %d bytes", maxSocketPath)
		case strings.ContainsFunc(s, unicode.IsControl):
			c.Failf("fm.control_socket", r.ControlSocket, "contains a control character")
		}
		f.ControlSocket = s
	}
	return f
}

// parseListen parses HOST:PORT or HOST (port 4793); [::] and 0.0.0.0 listen
// everywhere. An IPv6 link-local or zoned address is refused (hfi.Scoped):
// the UDP transport carries no zone, and nodes could not reach it; so is a
// multicast address, as vnicd's node.listen.
func parseListen(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err == nil && ap.Port() == 0 {
		return ap, errors.New("port 0")
	}
	if err != nil {
		a, err := netip.ParseAddr(strings.Trim(s, "[]"))
		if err != nil {
			return netip.AddrPort{}, errors.New("expected ADDRESS:PORT or ADDRESS")
		}
		if err := hfi.AmbiguousIPv6(s); err != nil {
			return netip.AddrPort{}, err
		}
		ap = netip.AddrPortFrom(a, DefaultUDPPort)
	}
	if ap.Addr().IsMulticast() {
		// Go binds a multicast address as the wildcard, and directory()
		// would push the group as the FM's endpoint.
		return netip.AddrPort{}, errors.New("a multicast address")
	}
	if hfi.Scoped(ap.Addr()) {
		return netip.AddrPort{}, errors.New("an IPv6 link-local or zoned address: the UDP transport carries no zone (scope id); use a global or ULA address")
	}
	return ap, nil
}

func (c *checker) buildVESW(r *rawVESW, path string, nodes map[string]bool) VESWConfig {
	var v VESWConfig
	if c.Required(r.ID, path+".id") {
		v.ID = encap.VESWID(c.Ranged(r.ID, path+".id", 1, uint64(encap.VESWIDMask), 0, false))
	}
	v.Name = fmt.Sprintf("vesw%d", v.ID)
	if r.Name.Present() {
		v.Name = c.name(r.Name, path+".name")
	}
	v.FabricID = uint16(c.Ranged(r.FabricID, path+".fabric_id", 0, MaxFabricID, 0, false))
	if c.Required(r.PKey, path+".pkey") {
		v.PKey = encap.PKey(c.Ranged(r.PKey, path+".pkey", 0, 0xFFFF, 0, true))
		if !v.PKey.IsValid() && !c.Failed() {
			c.Failf(path+".pkey", r.PKey, "0x%04X has no partition (the low 15 bits are 0)", uint16(v.PKey))
		}
	}
	v.EthMTU = uint16(c.Ranged(r.EthMTU, path+".eth_mtu", minEthMTU, maxEthMTU, DefaultEthMTU, false))
	if v0, ok := c.Number(r.McastDLID, path+".mcast_dlid"); ok && v0 != 0 { // 0: no group
		v.McastDLID = c.MulticastLID(r.McastDLID, path+".mcast_dlid")
	}
	seen := uint32(0)
	for i, d := range r.DefaultPorts {
		dp := fmt.Sprintf("%s.default_ports[%d]", path, i)
		if !c.Required(d.Index, dp+".index") {
			break
		}
		p := DefaultPort{Index: uint8(c.Ranged(d.Index, dp+".index", 0, encap.MaxDefaultPort-1, 0, false))}
		if seen&(1<<p.Index) != 0 {
			c.Failf(dp+".index", d.Index, "default port %d is given twice", p.Index)
		}
		seen |= 1 << p.Index
		switch {
		case d.DLID.Present() && d.Node.Present():
			c.Failf(dp, d.DLID, "give dlid or node, not both")
		case d.DLID.Present():
			p.DLID = uint32(c.Ranged(d.DLID, dp+".dlid", 1, DefaultPoolEnd, 0, true))
		case d.Node.Present():
			p.Node = c.name(d.Node, dp+".node")
			if !nodes[p.Node] {
				c.Failf(dp+".node", d.Node, "node %q is not listed under nodes", p.Node)
			}
		default:
			c.Failf(dp, d.Index, "needs dlid or node")
		}
		v.DefaultPorts = append(v.DefaultPorts, p)
	}
	v.RC = c.RC(r.RC, path+".rc")
	v.SC.UC, v.SC.MC, v.SC.NonVLANUC, v.SC.NonVLANMC = c.ClassMap(&r.SC, path+".sc")
	v.VL.UC, v.VL.MC, v.VL.NonVLANUC, v.VL.NonVLANMC = c.ClassMap(&r.VL, path+".vl")
	v.AdminUp = true
	if s, _ := c.Text(r.AdminState, path+".admin_state"); s != "" {
		switch s {
		case "up":
		case "down":
			v.AdminUp = false
		default:
			c.Failf(path+".admin_state", r.AdminState, "%q: must be up or down", s)
		}
	}
	type key struct {
		node  string
		vport uint8
	}
	members := map[key]bool{}
	macs := map[[6]byte]int{} // fixed MAC -> the member that has it
	for i := range r.Members {
		mp := fmt.Sprintf("%s.members[%d]", path, i)
		rm := &r.Members[i]
		if i == vema.MACTableMaxEntries && !c.Failed() {
			c.Failf(mp, rm.Node, "more than %d members: each may need an entry in the vesw's MAC table, which holds %d (OPA_VNIC_MAC_TBL_MAX_ENTRIES)",
				vema.MACTableMaxEntries, vema.MACTableMaxEntries)
		}
		m := Member{Node: c.name(rm.Node, mp+".node")}
		if m.Node != "" && !nodes[m.Node] {
			c.Failf(mp+".node", rm.Node, "node %q is not listed under nodes", m.Node)
		}
		if c.Required(rm.VPort, mp+".vport") {
			m.VPort = uint8(c.Ranged(rm.VPort, mp+".vport", 0, MaxVPort, 0, false))
		}
		if members[key{m.Node, m.VPort}] {
			c.Failf(mp, rm.Node, "node %q vport %d is listed twice", m.Node, m.VPort)
		}
		members[key{m.Node, m.VPort}] = true
		if s, _ := c.Text(rm.MAC, mp+".mac"); s != "" {
			mac, err := parseMAC(s)
			if err != nil {
				c.Failf(mp+".mac", rm.MAC, "%q: %v", s, err)
			} else if j, dup := macs[mac]; dup {
				// Every member's MAC goes into the vesw's MAC table: two
				// entries for one MAC leave its frames to whichever the
				// node's lookup finds first.
				c.Failf(mp+".mac", rm.MAC, "%q is already members[%d]'s mac: two ports of one vesw cannot share a MAC", s, j)
			} else {
				macs[mac] = i
			}
			m.MAC = mac
		}
		if rm.IP.Present() {
			ips := []leaf{rm.IP}
			if rm.IP.Node().Kind == yaml.SequenceNode {
				ips = c.List(rm.IP, mp+".ip")
			}
			for j, l := range ips {
				s, _ := c.Text(l, fmt.Sprintf("%s.ip[%d]", mp, j))
				if _, err := netip.ParsePrefix(s); err != nil {
					if _, err := netip.ParseAddr(s); err != nil {
						c.Failf(fmt.Sprintf("%s.ip[%d]", mp, j), l, "%q is not an address or address/prefix", s)
					}
				}
				m.IPs = append(m.IPs, s)
			}
		}
		v.Members = append(v.Members, m)
	}
	return v
}

// parseMAC parses xx:xx:xx:xx:xx:xx; the MAC must be unicast and not zero.
func parseMAC(s string) ([6]byte, error) {
	var mac [6]byte
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return mac, errors.New("expected xx:xx:xx:xx:xx:xx")
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil || len(p) != 2 {
			return mac, errors.New("expected xx:xx:xx:xx:xx:xx")
		}
		mac[i] = byte(v)
	}
	switch {
	case mac == [6]byte{}:
		return mac, errors.New("the zero MAC deletes a table entry; it cannot be a port's MAC")
	case mac[0]&1 != 0:
		return mac, errors.New("a multicast MAC cannot be a port's MAC")
	}
	return mac, nil
}
