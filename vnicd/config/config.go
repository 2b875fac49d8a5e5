package config

// Static-mode configuration: the YAML file a node's vnicd starts from, its
// environment expansion, defaults and validation. configs/README.md is the
// reference for every field; configs/vnicd.example.yaml shows them all.
//
// Reading a file takes three steps:
//
//  1. ${NAME} and ${NAME:-default} in the text are replaced (yamlcfg.Decode,
//     the rules of internal/envexpand).
//  2. yaml.v3 decodes the text, with KnownFields, into raw structs whose
//     leaves are the YAML nodes themselves (type leaf), so an unknown key is
//     an error while every value keeps its line for the messages.
//  3. build turns the raw tree into a Config, applying defaults and checking
//     each value and the cross references (peers, groups, DLIDs), and stops
//     at the first problem with a *Error naming the field.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/yamlcfg"
	"github.com/opavnic/opavnic/vema"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// Config defaults and bounds (configs/README.md).
const (
	// DefaultUDPPort is the UDP port of the software HFI and of peers whose
	// address names no port.
	DefaultUDPPort = 4793
	// MaxVPort is the largest vport index: the VEMA advertises 255 vports
	// (OPA_VNIC_MAX_NUM_VPORT), indices 0..254.
	MaxVPort = vema.MaxVPort
	// MaxFabricID is the largest fabric_id (10 bits).
	MaxFabricID = 1023
	// DefaultControlDir is where the default control socket lives.
	DefaultControlDir = ctl.DefaultDir

	vlanEthHLen    = 18  // Ethernet header with a VLAN tag: MTU + 18 is a full-size frame
	maxNodeName    = 64  // node.name and peers[].name
	maxIfName      = 15  // IFNAMSIZ - 1
	maxNetNSName   = 255 // NAME_MAX
	maxSocketPath  = 107 // sizeof(sun_path) - 1
	maxVL          = 31
	maxPeers       = vema.MaxDirEntries - 1 // the node's own LID is the directory's other entry
	netnsCanonical = "/run/netns/"          // /var/run is a link to /run on every current distribution
)

// Config is a node's static-mode configuration, every value typed, validated
// and defaulted. Parse and Load make one; Marshal writes it back.
type Config struct {
	Node NodeConfig
	// TrustedManagers are the endpoints a static node takes management
	// Get/Set MADs from (docs/management.md §6); nil when there are none.
	TrustedManagers []netip.AddrPort
	// Netdevs names, places and addresses the netdevs of vports the EM
	// creates (managed mode), by vport index; nil when there are none.
	Netdevs   map[uint8]engine.NetdevConfig
	Peers     []Peer           // nil when there are none
	Multicast []MulticastGroup // nil when there are none
	Control   ControlConfig
	VNICs     []VNICConfig // nil when there are none
}

// NodeConfig is this node and its software HFI.
type NodeConfig struct {
	Name string
	// GUID is the node GUID, never 0 (derived from Name when not given; see
	// encap.GUIDFromName of the name).
	GUID uint64
	// LID is the node's 16B unicast LID (1..0xEFFFFF), in the 32-bit space
	// where unicast LIDs have the same value.
	LID encap.LID
	// Listen is the UDP address of the software HFI. With no address in the
	// config it is [::] (net.ListenUDP("udp", ...) opens it dual-stack).
	Listen netip.AddrPort
	// SubnetPrefix is the high 64 bits of the port GID (fe80:: by default).
	SubnetPrefix uint64
	VerifyICRC   bool
	// BusyPoll is the data plane's busy-poll window (Engine.SetBusyPoll);
	// 0, the default, is off.
	BusyPoll time.Duration
	// Queues is how many queues the data plane has (1..hfi.MaxQueues), or
	// QueuesAuto, the default: a poll loop each, with its own UDP socket of
	// the HFI's address and its own fd of every multiqueue TAP
	// (Engine.EnableQueues).
	Queues int
	// UnderlayInterface names the interface whose MTU the daemon checks; ""
	// means the one that routes to the first peer.
	UnderlayInterface string
	// FabricManager is the FM's UDP endpoint (managed mode); the zero value
	// means static mode. In managed mode LID may be 0: wait for the SM.
	FabricManager netip.AddrPort
	// FMLID is the FM's LID (16B unicast), 1 by default.
	FMLID encap.LID
}

// QueuesAuto is NodeConfig.Queues for node.queues "auto" (the default):
// the daemon picks one queue per CPU, at most MaxAutoQueues, or one when
// the underlay device merges datagrams (autoQueues).
const QueuesAuto = 0

// Managed reports whether the node is in managed mode.
func (n *NodeConfig) Managed() bool { return n.FabricManager.IsValid() }

// Peer is one entry of the static directory: a 16B unicast LID and the UDP
// endpoint of the host that has it.
type Peer struct {
	LID  encap.LID
	Addr netip.AddrPort // IPv4-mapped addresses are unmapped
	Name string         // a label for logs, may be ""
}

// MulticastGroup is a 16B multicast LID and the node LIDs (16B unicast, this
// node's or peers') that receive it.
type MulticastGroup struct {
	LID     uint32
	Members []uint32
}

// ControlConfig is the local control interface.
type ControlConfig struct {
	// Socket is the Unix socket path (or @abstract name); never "" after
	// parsing: the default is /run/opavnic/vnicd-<node.name>.sock.
	Socket string
}

// VNICConfig is one VNIC port: what its VEMA agent is set to (Port), its
// netdev, and the static MAC table.
type VNICConfig struct {
	VPort    uint8
	Port     engine.PortConfig
	Netdev   engine.NetdevConfig // IfName always set after parsing
	MACTable []engine.MACEntry   // nil when there are none
}

// Error is a config that cannot be used: which field, why, and where.
// Everything Parse and Load reject comes out as one (except the file read
// error of Load); find it with errors.As. Its message is "config: <field>:
// <reason>", with " (line N)" when the line is known; without a field,
// "config: line N: <reason>".
type Error = yamlcfg.Error

// Load reads and parses the config file at path. A read error is
// returned as os.ReadFile gives it (it names the file); everything else is a
// *Error, which does not name the file.
func Load(path string) (*Config, error) { return loader.Load(path) }

// Parse parses a config file's text: it expands ${NAME} and
// ${NAME:-default} from the process environment, decodes the YAML (unknown
// fields are errors), applies the defaults and validates everything. The
// error is a *Error.
func Parse(data []byte) (*Config, error) {
	return loader.Parse(data, os.LookupEnv)
}

// loader reads the file: its errors say "config: ".
var loader = yamlcfg.Loader[rawConfig, Config]{Config: "config", NotMapping: "the file must be a mapping (node, peers, multicast, control, vnics)", Build: (*rawConfig).build}

// DefaultControlSocket returns the control socket path used when the config
// gives none.
func DefaultControlSocket(nodeName string) string {
	return DefaultControlDir + "/vnicd-" + nodeName + ".sock"
}

// --- YAML decoding ---

// leaf holds the YAML node of one value as written, so that build can apply
// the field's own syntax and report its line. A missing or null value leaves
// it zero.
type leaf = yamlcfg.Leaf

// The raw tree: structs where the file has mappings with fixed keys (so that
// KnownFields rejects unknown ones), leaves for every value.
type rawConfig struct {
	Node            rawNode              `yaml:"node"`
	TrustedManagers leaf                 `yaml:"trusted_managers"`
	Netdevs         map[string]rawNetdev `yaml:"netdevs"`
	Peers           []rawPeer            `yaml:"peers"`
	Multicast       []rawGroup           `yaml:"multicast"`
	Control         rawControl           `yaml:"control"`
	VNICs           []rawVNIC            `yaml:"vnics"`
}

type rawNode struct {
	Name              leaf `yaml:"name"`
	GUID              leaf `yaml:"guid"`
	LID               leaf `yaml:"lid"`
	Listen            leaf `yaml:"listen"`
	SubnetPrefix      leaf `yaml:"subnet_prefix"`
	VerifyICRC        leaf `yaml:"verify_icrc"`
	BusyPoll          leaf `yaml:"busy_poll"`
	Queues            leaf `yaml:"queues"`
	UnderlayInterface leaf `yaml:"underlay_interface"`
	FabricManager     leaf `yaml:"fabric_manager"`
	FMLID             leaf `yaml:"fm_lid"`
}

type rawNetdev struct {
	IfName    leaf `yaml:"ifname"`
	NetNS     leaf `yaml:"netns"`
	Addresses leaf `yaml:"addresses"`
}

type rawPeer struct {
	LID     leaf `yaml:"lid"`
	Address leaf `yaml:"address"`
	Name    leaf `yaml:"name"`
}

type rawGroup struct {
	LID     leaf `yaml:"lid"`
	Members leaf `yaml:"members"`
}

type rawControl struct {
	Socket leaf `yaml:"socket"`
}

type rawVNIC struct {
	VPort leaf    `yaml:"vport"`
	VESW  rawVESW `yaml:"vesw"`
	Port  rawPort `yaml:"port"`
}

type rawVESW struct {
	ID           leaf         `yaml:"id"`
	FabricID     leaf         `yaml:"fabric_id"`
	PKey         leaf         `yaml:"pkey"`
	EthMTU       leaf         `yaml:"eth_mtu"`
	McastDLID    leaf         `yaml:"mcast_dlid"`
	DefaultPorts []rawDefPort `yaml:"default_ports"`
	RC           leaf         `yaml:"rc"`
	SC           rawClassMap  `yaml:"sc"`
	VL           rawClassMap  `yaml:"vl"`
	ConfigState  leaf         `yaml:"config_state"`
}

type rawClassMap = yamlcfg.RawClassMap

type rawDefPort struct {
	Index leaf `yaml:"index"`
	DLID  leaf `yaml:"dlid"`
}

type rawPort struct {
	PortNum   leaf          `yaml:"port_num"`
	MAC       leaf          `yaml:"mac"`
	IfName    leaf          `yaml:"ifname"`
	NetNS     leaf          `yaml:"netns"`
	Addresses leaf          `yaml:"addresses"`
	MACTable  []rawMACEntry `yaml:"mac_table"`
}

type rawMACEntry struct {
	MAC  leaf `yaml:"mac"`
	DLID leaf `yaml:"dlid"`
}

// --- building and validation ---

// checker keeps the first problem found (yamlcfg.Checker, which also checks
// the syntax of single values, lists and integers); its helpers return zero
// values once there is one, and build returns it at the end.
type checker struct{ yamlcfg.Checker }

// unicastLID parses a 16B unicast LID; 0 when absent or bad.
func (c *checker) unicastLID(l leaf, path string) uint32 {
	v, ok := c.Number(l, path)
	switch {
	case !ok:
		return 0
	case v == 0:
		c.Failf(path, l, "0 is not a LID")
	case v <= uint64(encap.LIDMaxUnicast16B):
		return uint32(v)
	case v <= uint64(encap.LID16BMask):
		c.Failf(path, l, "0x%X is not a unicast LID (16B unicast is 0x1..0xEFFFFF)", v)
	default:
		c.Failf(path, l, "0x%X is not a 16B LID (unicast is 0x1..0xEFFFFF)", v)
	}
	return 0
}

func (r *rawConfig) build() (*Config, error) {
	c := &checker{}
	cfg := &Config{}
	cfg.Node = c.buildNode(&r.Node)
	if c.Failed() {
		return nil, c.Err()
	}
	// known maps a unicast LID to the path of the field that declares it.
	known := map[uint32]string{uint32(cfg.Node.LID): "node.lid"}
	cfg.Peers = c.buildPeers(r.Peers, known, cfg.Node.Listen)
	if cfg.Node.Managed() {
		// The directory maps node.fm_lid to node.fabric_manager: a peer
		// with that LID would be dropped from it.
		for i, p := range cfg.Peers {
			if p.LID == cfg.Node.FMLID {
				c.Failf(fmt.Sprintf("peers[%d].lid", i), r.Peers[i].LID, "%v is node.fm_lid, the FM's LID", p.LID)
			}
		}
	}
	groups := map[uint32][]uint32{}
	cfg.Multicast = c.buildGroups(r.Multicast, known, groups)
	if c.Failed() {
		return nil, c.Err()
	}
	cfg.Control.Socket = c.buildSocket(r.Control.Socket, cfg.Node.Name)
	cfg.TrustedManagers = c.buildTrusted(r.TrustedManagers, cfg.Node.Managed())
	var netdevLeaves map[uint8]netdevEntry
	cfg.Netdevs, netdevLeaves = c.buildNetdevs(r.Netdevs, cfg.Node.Managed(), cfg.Node.UnderlayInterface)
	cfg.VNICs = c.buildVNICs(r.VNICs, cfg, known, groups)
	if !c.Failed() {
		c.checkNetdevsVsVNICs(cfg, netdevLeaves)
	}
	if c.Failed() {
		return nil, c.Err()
	}
	return cfg, nil
}

var reName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (c *checker) name(l leaf, path string) string {
	s, _ := c.Text(l, path)
	switch {
	case len(s) > maxNodeName:
		c.Failf(path, l, "longer than %d bytes", maxNodeName)
	case s != "" && !reName.MatchString(s):
		c.Failf(path, l, "%q: only letters, digits, '.', '_' and '-'", s)
	}
	return s
}

func (c *checker) buildNode(r *rawNode) NodeConfig {
	n := NodeConfig{SubnetPrefix: encap.DefaultSubnetPrefix, VerifyICRC: true}
	if c.Required(r.Name, "node.name") {
		if n.Name = c.name(r.Name, "node.name"); n.Name == "" {
			c.Failf("node.name", r.Name, "must not be empty")
		}
	}
	n.GUID = uint64(encap.GUIDFromName(n.Name))
	if v, ok := c.Number(r.GUID, "node.guid"); ok {
		if v == 0 {
			c.Failf("node.guid", r.GUID, "0 is not a GUID")
		}
		n.GUID = v
	}
	n.FMLID = 1
	if r.FMLID.Present() {
		if l := c.unicastLID(r.FMLID, "node.fm_lid"); l != 0 {
			n.FMLID = encap.LID(l)
		}
	}
	n.Listen = yamlcfg.Parsed(&c.Checker, r.Listen, "node.listen", netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultUDPPort), parseListen)
	if s, _ := c.Text(r.FabricManager, "node.fabric_manager"); s != "" {
		ap, err := resolveEndpoint(s, listenNetwork(n.Listen))
		switch {
		case err != nil:
			c.Failf("node.fabric_manager", r.FabricManager, "%q: %v", s, err)
		case !listenReaches(n.Listen, ap.Addr()):
			c.Failf("node.fabric_manager", r.FabricManager, "%q: %s", s, familyMismatch(n.Listen, ap))
		}
		n.FabricManager = ap
	}
	if n.Managed() {
		// Optional: absent, null or 0 waits for the SM to set the LID.
		if v, ok := c.Number(r.LID, "node.lid"); ok && v != 0 {
			n.LID = encap.LID(c.unicastLID(r.LID, "node.lid"))
			if n.LID != 0 && n.LID == n.FMLID {
				c.Failf("node.lid", r.LID, "%v is node.fm_lid, the FM's LID", n.LID)
			}
		}
	} else if c.Required(r.LID, "node.lid") {
		n.LID = encap.LID(c.unicastLID(r.LID, "node.lid"))
	}
	n.SubnetPrefix = yamlcfg.Parsed(&c.Checker, r.SubnetPrefix, "node.subnet_prefix", n.SubnetPrefix, encap.ParseSubnetPrefix)
	if s, ok := c.Text(r.VerifyICRC, "node.verify_icrc"); ok {
		switch s {
		case "true", "True", "TRUE":
			n.VerifyICRC = true
		case "false", "False", "FALSE":
			n.VerifyICRC = false
		default:
			c.Failf("node.verify_icrc", r.VerifyICRC, "%q: must be true or false", s)
		}
	}
	if s, _ := c.Text(r.BusyPoll, "node.busy_poll"); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			c.Failf("node.busy_poll", r.BusyPoll, "%q: not a duration (0, 500us, 1ms, ...)", s)
		case d < 0 || d > engine.MaxBusyPoll:
			c.Failf("node.busy_poll", r.BusyPoll, "%q: must be 0 (off) to %v", s, engine.MaxBusyPoll)
		default:
			n.BusyPoll = d
		}
	}
	switch s, ok := c.Text(r.Queues, "node.queues"); {
	case !ok:
	case s == "auto":
		n.Queues = QueuesAuto
	case s == "" || s[0] < '0' || s[0] > '9':
		c.Failf("node.queues", r.Queues, "%q: must be auto or a number of queues, 1..%d", s, hfi.MaxQueues)
	default:
		n.Queues = int(c.Ranged(r.Queues, "node.queues", 1, hfi.MaxQueues, 1, false))
	}
	if s, _ := c.Text(r.UnderlayInterface, "node.underlay_interface"); s != "" {
		if err := checkIfName(s); err != nil {
			c.Failf("node.underlay_interface", r.UnderlayInterface, "%q: %v", s, err)
		}
		n.UnderlayInterface = s
	}
	return n
}

// parseEndpoint parses an IP literal with an optional port ("10.0.0.1",
// "10.0.0.1:4793", "::1", "[::1]", "[::1]:4793"). Host names are not
// resolved. The port defaults to DefaultUDPPort and may not be 0. An IPv6
// link-local or zoned address is refused (errScoped).
func parseEndpoint(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		a := s
		if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
			a = a[1 : len(a)-1]
		}
		addr, err := netip.ParseAddr(a)
		if err != nil {
			return netip.AddrPort{}, errors.New("not an IP address with an optional port (host names are not resolved)")
		}
		if err := hfi.AmbiguousIPv6(s); err != nil {
			return netip.AddrPort{}, err
		}
		ap = netip.AddrPortFrom(addr, DefaultUDPPort)
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, errors.New("port 0")
	}
	if ap.Addr().IsMulticast() {
		return netip.AddrPort{}, errors.New("a multicast address")
	}
	if hfi.Scoped(ap.Addr()) {
		return netip.AddrPort{}, errScoped
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// errScoped refuses an underlay address the UDP transport cannot carry
// (hfi.Scoped).
var errScoped = errors.New("an IPv6 link-local or zoned address: the UDP transport carries no zone (scope id); use a global or ULA address")

// parseListen is parseEndpoint that also takes ":port" for every address.
func parseListen(s string) (netip.AddrPort, error) {
	if strings.HasPrefix(s, ":") && !strings.HasPrefix(s, "::") {
		p, err := strconv.ParseUint(s[1:], 10, 16)
		if err != nil || p == 0 {
			return netip.AddrPort{}, errors.New("bad port")
		}
		return netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(p)), nil
	}
	return parseEndpoint(s)
}

func (c *checker) buildPeers(raw []rawPeer, known map[uint32]string, listen netip.AddrPort) []Peer {
	var peers []Peer
	addrs := map[netip.AddrPort]string{}
	if !listen.Addr().IsUnspecified() {
		// The directory maps node.lid to it (Config.Directory).
		addrs[listen] = "node.listen"
	}
	for i, r := range raw {
		path := fmt.Sprintf("peers[%d]", i)
		if i == maxPeers {
			c.Failf(path, r.LID, "more than %d peers: with this node, a directory holds at most %d LIDs", maxPeers, vema.MaxDirEntries)
			break
		}
		var p Peer
		if c.Required(r.LID, path+".lid") {
			p.LID = encap.LID(c.unicastLID(r.LID, path+".lid"))
			if prev, dup := known[uint32(p.LID)]; dup && p.LID != 0 {
				if prev == "node.lid" {
					c.Failf(path+".lid", r.LID, "%v is this node's own LID", p.LID)
				} else {
					c.Failf(path+".lid", r.LID, "%v is also %s", p.LID, prev)
				}
			}
			known[uint32(p.LID)] = path + ".lid"
		}
		if c.Required(r.Address, path+".address") {
			s, _ := c.Text(r.Address, path+".address")
			ap, err := parseEndpoint(s)
			switch {
			case err != nil:
				c.Failf(path+".address", r.Address, "%q: %v", s, err)
			case ap.Addr().IsUnspecified():
				c.Failf(path+".address", r.Address, "%q: an unspecified address", s)
			case addrs[ap] != "":
				c.Failf(path+".address", r.Address, "%v is also %s (one software HFI has one LID)", ap, addrs[ap])
			case !listenReaches(listen, ap.Addr()):
				c.Failf(path+".address", r.Address, "%q: %s", s, familyMismatch(listen, ap))
			}
			addrs[ap] = path + ".address"
			p.Addr = ap
		}
		p.Name = c.name(r.Name, path+".name")
		peers = append(peers, p)
	}
	return peers
}

func (c *checker) buildGroups(raw []rawGroup, known map[uint32]string, groups map[uint32][]uint32) []MulticastGroup {
	var out []MulticastGroup
	for i, r := range raw {
		path := fmt.Sprintf("multicast[%d]", i)
		if i == vema.MaxDirGroups {
			c.Failf(path, r.LID, "more than %d groups: a directory holds at most %d", vema.MaxDirGroups, vema.MaxDirGroups)
			break
		}
		var g MulticastGroup
		if c.Required(r.LID, path+".lid") {
			g.LID = c.MulticastLID(r.LID, path+".lid")
			if _, dup := groups[g.LID]; dup && g.LID != 0 {
				c.Failf(path+".lid", r.LID, "group 0x%X is declared twice", g.LID)
			}
		}
		members := c.List(r.Members, path+".members")
		if len(members) == 0 {
			c.Failf(path+".members", r.Members, "required: at least one member LID")
		}
		seen := map[uint32]bool{}
		for j, m := range members {
			mp := fmt.Sprintf("%s.members[%d]", path, j)
			if j == vema.MaxDirGroupMembers {
				c.Failf(mp, m, "more than %d members: a directory group holds at most %d", vema.MaxDirGroupMembers, vema.MaxDirGroupMembers)
				break
			}
			if !c.Required(m, mp) {
				break
			}
			lid := c.unicastLID(m, mp)
			switch {
			case lid == 0:
			case known[lid] == "":
				c.Failf(mp, m, "LID 0x%X is neither this node's nor a peer's", lid)
			case seen[lid]:
				c.Failf(mp, m, "LID 0x%X is listed twice", lid)
			}
			seen[lid] = true
			g.Members = append(g.Members, lid)
		}
		groups[g.LID] = g.Members
		out = append(out, g)
	}
	return out
}

func (c *checker) buildSocket(l leaf, nodeName string) string {
	const path = "control.socket"
	s, _ := c.Text(l, path)
	switch {
	case s == "":
		return DefaultControlSocket(nodeName)
	case len(s) > maxSocketPath:
		c.Failf(path, l, "longer than %d bytes (the limit of a Unix socket address)", maxSocketPath)
	case hasControl(s):
		c.Failf(path, l, "contains a control character")
	case !filepath.IsAbs(s) && !strings.HasPrefix(s, "@"):
		c.Failf(path, l, "%q: must be an absolute path (or @name for an abstract socket)", s)
	}
	return s
}

// NetdevKey names an ifname within its namespace, for duplicate detection:
// "" is vnicd's own namespace, a name is a file in /var/run/netns, and
// /var/run/netns/x is taken as /run/netns/x.
func NetdevKey(netns, ifname string) string {
	switch {
	case netns == "":
	case strings.HasPrefix(netns, tap.NetNSPIDPrefix):
		netns = tap.NetNSPath(netns)
	case !strings.HasPrefix(netns, "/"):
		netns = netnsCanonical + netns
	default:
		netns = filepath.Clean(netns)
		if rest, ok := strings.CutPrefix(netns, "/var/run/"); ok {
			netns = "/run/" + rest
		}
	}
	return netns + "\x00" + ifname
}

func (c *checker) buildVNICs(raw []rawVNIC, cfg *Config, known map[uint32]string, groups map[uint32][]uint32) []VNICConfig {
	var out []VNICConfig
	vports := map[uint64]string{}
	vesws := map[encap.VESWID]string{}
	ifnames := map[string]string{}
	if cfg.Node.UnderlayInterface != "" {
		ifnames[NetdevKey("", cfg.Node.UnderlayInterface)] = "node.underlay_interface"
	}
	for i := range raw {
		r := &raw[i]
		path := fmt.Sprintf("vnics[%d]", i)

		vport := c.Ranged(r.VPort, path+".vport", 0, MaxVPort, uint64(i), false)
		if vport > MaxVPort {
			c.Failf(path+".vport", r.VPort, "required here: the default, the position %d in the list, is above %d", i, MaxVPort)
		}
		if prev := vports[vport]; prev != "" {
			c.Failf(path+".vport", r.VPort, "vport %d is also %s", vport, prev)
		}
		vports[vport] = path
		v := c.buildVNIC(r, path, uint8(vport), cfg.Node.LID, known, groups)
		if prev := vesws[v.Port.VESW.VESWID]; prev != "" && v.Port.VESW.VESWID != 0 {
			c.Failf(path+".vesw.id", r.VESW.ID, "vesw %d is also used by %s", v.Port.VESW.VESWID, prev)
		}
		vesws[v.Port.VESW.VESWID] = path
		key := NetdevKey(v.Netdev.NetNS, v.Netdev.IfName)
		if prev := ifnames[key]; prev != "" {
			c.Failf(path+".port.ifname", r.Port.IfName, "%q is also %s, in the same network namespace", v.Netdev.IfName, prev)
		}
		ifnames[key] = path + ".port.ifname"
		if c.Failed() {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// buildVNIC checks and builds one VNIC at vport: its vesw, vport and netdev
// config and its MAC table. What involves other VNICs (a vport, vesw or
// ifname used twice) is the caller's to check. The static config and the
// runtime vnic_add command both come through here.
func (c *checker) buildVNIC(r *rawVNIC, path string, vport uint8, self encap.LID, known map[uint32]string, groups map[uint32][]uint32) VNICConfig {
	v := VNICConfig{VPort: vport}
	v.Port.VESW = c.buildVESW(&r.VESW, path+".vesw", self, known, groups)
	v.Port.Port = c.buildVPort(r, path, self, v.Port.VESW.VESWID, uint64(vport))
	v.Netdev = c.buildNetdev(&r.Port, path+".port", uint64(vport))
	v.MACTable = c.buildMACTable(r.Port.MACTable, path+".port.mac_table", self, known, groups)
	return v
}

func (c *checker) buildVESW(r *rawVESW, path string, self encap.LID, known map[uint32]string, groups map[uint32][]uint32) engine.VESWConfig {
	var v engine.VESWConfig
	if c.Required(r.ID, path+".id") {
		v.VESWID = encap.VESWID(c.Ranged(r.ID, path+".id", 1, uint64(encap.VESWIDMask), 0, false))
	}
	v.FabricID = uint16(c.Ranged(r.FabricID, path+".fabric_id", 0, MaxFabricID, 0, false))
	if c.Required(r.PKey, path+".pkey") {
		v.PKey = encap.PKey(c.Ranged(r.PKey, path+".pkey", 0, 0xFFFF, 0, true))
		if !v.PKey.IsValid() && !c.Failed() {
			c.Failf(path+".pkey", r.PKey, "%v has base 0 (the low 15 bits must not all be 0)", v.PKey)
		}
	}
	v.EthMTU = engine.DefaultEthMTU
	if mtu, ok := c.Number(r.EthMTU, path+".eth_mtu"); ok {
		switch {
		case mtu < engine.MinEthMTU:
			c.Failf(path+".eth_mtu", r.EthMTU, "%d is below the minimum %d", mtu, engine.MinEthMTU)
		case mtu > engine.MaxEthMTU:
			c.Failf(path+".eth_mtu", r.EthMTU, "%d is above the maximum %d: a full-size frame (MTU + %d bytes) must fit a 16B packet, which carries at most %d bytes of frame",
				mtu, engine.MaxEthMTU, vlanEthHLen, encap.MaxFrameLen)
		}
		v.EthMTU = uint16(mtu)
	}
	if r.McastDLID.Present() {
		if n, ok := c.Number(r.McastDLID, path+".mcast_dlid"); ok && n != 0 {
			v.McastDLID = c.MulticastLID(r.McastDLID, path+".mcast_dlid")
			members, declared := groups[v.McastDLID]
			switch {
			case v.McastDLID == 0:
			case !declared:
				c.Failf(path+".mcast_dlid", r.McastDLID, "group 0x%X is not declared under multicast", v.McastDLID)
			case !containsLID(members, uint32(self)):
				c.Failf(path+".mcast_dlid", r.McastDLID, "this node (LID %v) is not a member of group 0x%X, so broadcasts on this vesw (ARP, ND) would never reach it", self, v.McastDLID)
			}
		}
	}
	for i, d := range r.DefaultPorts {
		dp := fmt.Sprintf("%s.default_ports[%d]", path, i)
		if !c.Required(d.Index, dp+".index") || !c.Required(d.DLID, dp+".dlid") {
			break
		}
		idx := c.Ranged(d.Index, dp+".index", 0, encap.MaxDefaultPort-1, 0, false)
		if v.DefPortMask&(1<<idx) != 0 {
			c.Failf(dp+".index", d.Index, "default port %d is given twice", idx)
		}
		v.DefPortMask |= 1 << idx
		v.UcastDLID[idx] = c.dlid(d.DLID, dp+".dlid", self, known, nil)
	}
	v.RC = c.RC(r.RC, path+".rc")
	return v
}

func containsLID(lids []uint32, lid uint32) bool {
	for _, l := range lids {
		if l == lid {
			return true
		}
	}
	return false
}

// dlid parses a DLID the port sends to: a peer's LID (one in known other than
// self), or (when groups is not nil) a declared multicast group.
func (c *checker) dlid(l leaf, path string, self encap.LID, known map[uint32]string, groups map[uint32][]uint32) uint32 {
	v, ok := c.Number(l, path)
	if !ok {
		return 0
	}
	if groups != nil && encap.Is16BMulticast(uint32(v)) {
		g := c.MulticastLID(l, path)
		if _, declared := groups[g]; g != 0 && !declared {
			c.Failf(path, l, "group 0x%X is not declared under multicast", g)
		}
		return g
	}
	lid := c.unicastLID(l, path)
	switch {
	case lid == 0:
	case lid == uint32(self):
		c.Failf(path, l, "0x%X is this node's own LID; frames sent there would come back to this port", lid)
	case known[lid] == "":
		c.Failf(path, l, "LID 0x%X is not a peer's", lid)
	}
	return lid
}

func (c *checker) buildVPort(r *rawVNIC, path string, self encap.LID, vesw encap.VESWID, vport uint64) engine.VPortConfig {
	var p engine.VPortConfig
	p.PortNum = uint32(c.Ranged(r.Port.PortNum, path+".port.port_num", 0, 0xFFFFFFFF, vport, false))
	p.EncapSLID = self.To16B()
	p.ConfigState = engine.StateForwarding
	if s, _ := c.Text(r.VESW.ConfigState, path+".vesw.config_state"); s != "" {
		switch s {
		case "forwarding":
		case "drop_all":
			p.ConfigState = engine.StateDropAll
		default:
			c.Failf(path+".vesw.config_state", r.VESW.ConfigState, "%q: must be forwarding or drop_all", s)
		}
	}
	p.SC.PCPToSCUC, p.SC.PCPToSCMC, p.SC.NonVLANUC, p.SC.NonVLANMC = c.ClassMap(&r.VESW.SC, path+".vesw.sc")
	p.PCPToVLUC, p.PCPToVLMC, p.NonVLANVL[0], p.NonVLANVL[1] = c.ClassMap(&r.VESW.VL, path+".vesw.vl")
	p.BaseMAC = encap.MACForLID(self, vesw)
	if s, _ := c.Text(r.Port.MAC, path+".port.mac"); s != "" && s != "auto" {
		mac, err := parseUnicastMAC(s)
		if err != nil {
			c.Failf(path+".port.mac", r.Port.MAC, "%q: %v (or auto)", s, err)
		}
		p.BaseMAC = mac
	}
	return p
}

// parseUnicastMAC parses a 6-byte MAC that is neither multicast nor zero.
func parseUnicastMAC(s string) ([6]byte, error) {
	var mac [6]byte
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != len(mac) {
		return mac, errors.New("not a MAC address such as 02:00:00:00:00:01")
	}
	copy(mac[:], hw)
	switch {
	case mac == [6]byte{}:
		return mac, errors.New("the zero MAC")
	case encap.IsMulticastMAC(mac[:]):
		return mac, errors.New("a multicast MAC")
	}
	return mac, nil
}

// checkIfName applies the kernel's dev_valid_name, and refuses '%' (which
// would make the name a template) and control characters.
func checkIfName(s string) error {
	switch {
	case len(s) > maxIfName:
		return fmt.Errorf("longer than %d bytes", maxIfName)
	case s == "." || s == "..":
		return errors.New("not a valid interface name")
	case strings.ContainsAny(s, "/:%"):
		return errors.New("contains '/', ':' or '%'")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r == ' ' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return errors.New("contains whitespace or a control character")
	}
	return nil
}

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

func (c *checker) buildNetdev(r *rawPort, path string, vport uint64) engine.NetdevConfig {
	var d engine.NetdevConfig
	d.IfName = fmt.Sprintf("vnic%d", vport)
	if s, _ := c.Text(r.IfName, path+".ifname"); s != "" {
		if err := checkIfName(s); err != nil {
			c.Failf(path+".ifname", r.IfName, "%q: %v", s, err)
		}
		d.IfName = s
	}
	if s, _ := c.Text(r.NetNS, path+".netns"); s != "" {
		if err := tap.CheckNetNS(s); err != nil {
			c.Failf(path+".netns", r.NetNS, "%q: %v", s, err)
		}
		d.NetNS = s
	}
	seen := map[netip.Prefix]bool{}
	for i, e := range c.List(r.Addresses, path+".addresses") {
		ep := fmt.Sprintf("%s.addresses[%d]", path, i)
		if !c.Required(e, ep) {
			break
		}
		s, _ := c.Text(e, ep)
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			c.Failf(ep, e, "%q: not an address with a prefix length, such as 192.168.1.1/24", s)
		case p.Addr().IsUnspecified() || p.Addr().IsMulticast():
			c.Failf(ep, e, "%q: an unspecified or multicast address", s)
		case seen[p]:
			c.Failf(ep, e, "%q is listed twice", s)
		}
		seen[p] = true
		d.Addresses = append(d.Addresses, p)
	}
	return d
}

func (c *checker) buildMACTable(raw []rawMACEntry, path string, self encap.LID, known map[uint32]string, groups map[uint32][]uint32) []engine.MACEntry {
	var out []engine.MACEntry
	seen := map[[6]byte]bool{}
	for i, r := range raw {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if i == vema.MACTableMaxEntries {
			c.Failf(ep, r.MAC, "more than %d entries: a VNIC's MAC table holds at most %d (OPA_VNIC_MAC_TBL_MAX_ENTRIES)",
				vema.MACTableMaxEntries, vema.MACTableMaxEntries)
			break
		}
		if !c.Required(r.MAC, ep+".mac") || !c.Required(r.DLID, ep+".dlid") {
			break
		}
		var e engine.MACEntry
		s, _ := c.Text(r.MAC, ep+".mac")
		mac, err := parseUnicastMAC(s)
		switch {
		case err != nil:
			c.Failf(ep+".mac", r.MAC, "%q: %v", s, err)
		case seen[mac]:
			c.Failf(ep+".mac", r.MAC, "%s is listed twice", s)
		}
		seen[mac] = true
		e.MAC = mac
		e.DLID = c.dlid(r.DLID, ep+".dlid", self, known, groups)
		out = append(out, e)
	}
	return out
}

// --- writing ---

// marshalQueues writes node.queues: "auto" or the number.
func (c *Config) marshalQueues() *yaml.Node {
	if c.Node.Queues == QueuesAuto {
		return str("auto")
	}
	return num(uint64(c.Node.Queues))
}

// Marshal returns c as a config file with every default written out, which
// Parse reads back to an equal Config. Text that looks like an
// environment reference (${) is escaped as $${.
func (c *Config) Marshal() ([]byte, error) {
	node := mapping(
		"node", mapping(
			"name", str(c.Node.Name),
			"guid", scalar("!!int", fmt.Sprintf("0x%016X", c.Node.GUID)),
			"lid", hexNum(uint64(c.Node.LID)),
			"listen", str(c.Node.Listen.String()),
			"subnet_prefix", str(encap.FormatSubnetPrefix(c.Node.SubnetPrefix)),
			"verify_icrc", scalar("!!bool", strconv.FormatBool(c.Node.VerifyICRC)),
			"busy_poll", str(c.Node.BusyPoll.String()),
			"queues", c.marshalQueues(),
			"underlay_interface", str(c.Node.UnderlayInterface),
		),
		"peers", c.marshalPeers(),
		"multicast", c.marshalGroups(),
		"control", mapping("socket", str(c.Control.Socket)),
		"vnics", c.marshalVNICs(),
	)
	top, n := node, node.Content[1]
	if c.Node.Managed() {
		if c.Node.LID == 0 { // the FM assigns it
			n.Content = slices.Delete(n.Content, 4, 6)
		}
		n.Content = append(n.Content, str("fabric_manager"), str(c.Node.FabricManager.String()),
			str("fm_lid"), hexNum(uint64(c.Node.FMLID)))
		netdevs := mapping()
		for _, vp := range slices.Sorted(maps.Keys(c.Netdevs)) {
			nd := c.Netdevs[vp]
			addrs := seq(true)
			for _, a := range nd.Addresses {
				addrs.Content = append(addrs.Content, str(a.String()))
			}
			netdevs.Content = append(netdevs.Content, str(strconv.Itoa(int(vp))),
				mapping("ifname", str(nd.IfName), "netns", str(nd.NetNS), "addresses", addrs))
		}
		top.Content = append(top.Content, str("netdevs"), netdevs)
	} else if len(c.TrustedManagers) > 0 {
		tm := seq(false)
		for _, ap := range c.TrustedManagers {
			tm.Content = append(tm.Content, str(ap.String()))
		}
		top.Content = append(top.Content, str("trusted_managers"), tm)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (c *Config) marshalPeers() *yaml.Node {
	s := seq(false)
	for _, p := range c.Peers {
		s.Content = append(s.Content, mapping(
			"lid", hexNum(uint64(p.LID)),
			"address", str(p.Addr.String()),
			"name", str(p.Name),
		))
	}
	return s
}

func (c *Config) marshalGroups() *yaml.Node {
	s := seq(false)
	for _, g := range c.Multicast {
		m := seq(true)
		for _, l := range g.Members {
			m.Content = append(m.Content, hexNum(uint64(l)))
		}
		s.Content = append(s.Content, mapping("lid", hexNum(uint64(g.LID)), "members", m))
	}
	return s
}

func (c *Config) marshalVNICs() *yaml.Node {
	s := seq(false)
	for _, v := range c.VNICs {
		w, p := &v.Port.VESW, &v.Port.Port
		defPorts := seq(false)
		for i := range encap.MaxDefaultPort {
			if w.DefPortMask&(1<<i) != 0 {
				dp := mapping("index", num(uint64(i)), "dlid", hexNum(uint64(w.UcastDLID[i])))
				dp.Style = yaml.FlowStyle
				defPorts.Content = append(defPorts.Content, dp)
			}
		}
		rc := mapping()
		rc.Style = yaml.FlowStyle
		for _, f := range yamlcfg.RCFields {
			rc.Content = append(rc.Content, str(f.Key), num(uint64(w.RC>>f.Shift&yamlcfg.MaxRC)))
		}
		state := "forwarding"
		if p.ConfigState == engine.StateDropAll {
			state = "drop_all"
		}
		addrs := seq(true)
		for _, a := range v.Netdev.Addresses {
			addrs.Content = append(addrs.Content, str(a.String()))
		}
		macs := seq(false)
		for _, e := range v.MACTable {
			me := mapping("mac", str(net.HardwareAddr(e.MAC[:]).String()), "dlid", hexNum(uint64(e.DLID)))
			me.Style = yaml.FlowStyle
			macs.Content = append(macs.Content, me)
		}
		s.Content = append(s.Content, mapping(
			"vport", num(uint64(v.VPort)),
			"vesw", mapping(
				"id", num(uint64(w.VESWID)),
				"fabric_id", num(uint64(w.FabricID)),
				"pkey", scalar("!!int", w.PKey.String()),
				"eth_mtu", num(uint64(w.EthMTU)),
				"mcast_dlid", hexNum(uint64(w.McastDLID)),
				"default_ports", defPorts,
				"rc", rc,
				"sc", classMapNode(p.SC.PCPToSCUC, p.SC.PCPToSCMC, p.SC.NonVLANUC, p.SC.NonVLANMC),
				"vl", classMapNode(p.PCPToVLUC, p.PCPToVLMC, p.NonVLANVL[0], p.NonVLANVL[1]),
				"config_state", str(state),
			),
			"port", mapping(
				"port_num", num(uint64(p.PortNum)),
				"mac", str(net.HardwareAddr(p.BaseMAC[:]).String()),
				"ifname", str(v.Netdev.IfName),
				"netns", str(v.Netdev.NetNS),
				"addresses", addrs,
				"mac_table", macs,
			),
		))
	}
	return s
}

func classMapNode(uc, mc [8]uint8, nonUC, nonMC uint8) *yaml.Node {
	list := func(t [8]uint8) *yaml.Node {
		s := seq(true)
		for _, v := range t {
			s.Content = append(s.Content, num(uint64(v)))
		}
		return s
	}
	m := mapping("uc", list(uc), "mc", list(mc), "non_vlan_uc", num(uint64(nonUC)), "non_vlan_mc", num(uint64(nonMC)))
	m.Style = yaml.FlowStyle
	return m
}

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// str is a string scalar, escaped so that expandEnv gives it back.
func str(s string) *yaml.Node {
	return scalar("!!str", strings.ReplaceAll(s, "${", "$${"))
}

func num(v uint64) *yaml.Node    { return scalar("!!int", strconv.FormatUint(v, 10)) }
func hexNum(v uint64) *yaml.Node { return scalar("!!int", fmt.Sprintf("0x%X", v)) }

func seq(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, scalar("!!str", kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

// --- summary ---

// Summary describes c in a few lines (vnicd --check prints it): a line for
// the node, then one per VNIC; for a managed node, the fabric manager it
// joins and one line per netdev its VNICs will get.
func (c *Config) Summary() string {
	var b strings.Builder
	if c.Node.Managed() {
		fmt.Fprintf(&b, "node %s managed by the fabric manager at %v (LID, peers and VNICs from it) guid 0x%016X listen %v control %s",
			c.Node.Name, c.Node.FabricManager, c.Node.GUID, c.Node.Listen, c.Control.Socket)
		for _, vp := range slices.Sorted(maps.Keys(c.Netdevs)) {
			nd := c.Netdevs[vp]
			name, netns := nd.IfName, nd.NetNS
			if name == "" {
				name = fmt.Sprintf("vnic%d", vp)
			}
			if netns == "" {
				netns = "-"
			}
			fmt.Fprintf(&b, "\nnetdev vport %d %s netns %s", vp, name, netns)
			for _, a := range nd.Addresses {
				b.WriteString(" " + a.String())
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "node %s lid %v guid 0x%016X listen %v peers %d groups %d control %s",
		c.Node.Name, c.Node.LID, c.Node.GUID, c.Node.Listen, len(c.Peers), len(c.Multicast), c.Control.Socket)
	for _, v := range c.VNICs {
		w, p := &v.Port.VESW, &v.Port.Port
		state := "forwarding"
		if p.ConfigState == engine.StateDropAll {
			state = "drop_all"
		}
		netns := v.Netdev.NetNS
		if netns == "" {
			netns = "-"
		}
		fmt.Fprintf(&b, "\nvnic %s vport %d vesw %d pkey %v mtu %d mac %s mcast 0x%X defports 0x%04X macs %d %s netns %s",
			v.Netdev.IfName, v.VPort, w.VESWID, w.PKey, w.EthMTU, net.HardwareAddr(p.BaseMAC[:]), w.McastDLID,
			w.DefPortMask, len(v.MACTable), state, netns)
		for _, a := range v.Netdev.Addresses {
			b.WriteString(" " + a.String())
		}
	}
	return b.String()
}

// resolveEndpoint is parseEndpoint, and for a host name (host or host:port)
// its first address.
func resolveEndpoint(s, network string) (netip.AddrPort, error) {
	if ap, err := parseEndpoint(s); err == nil || err == errScoped || errors.Is(err, hfi.ErrAmbiguousIPv6) {
		return ap, err
	}
	host, port := s, strconv.Itoa(DefaultUDPPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	}
	ua, err := net.ResolveUDPAddr(network, net.JoinHostPort(host, port))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("neither an IP address nor a host name that resolves: %v", err)
	}
	ap := ua.AddrPort()
	if ap.Port() == 0 {
		return netip.AddrPort{}, errors.New("port 0")
	}
	if hfi.Scoped(ap.Addr()) {
		return netip.AddrPort{}, errScoped
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// listenNetwork is the network of the socket a listen address gives
// (hfi.ListenUDP): "udp4" for an IPv4 address (0.0.0.0 too), "udp6" for a
// concrete IPv6 one, "udp" (dual-stack) for [::].
func listenNetwork(listen netip.AddrPort) string {
	switch a := listen.Addr(); {
	case a.Unmap().Is4():
		return "udp4"
	case a == netip.IPv6Unspecified():
		return "udp"
	default:
		return "udp6"
	}
}

// listenReaches reports whether the socket bound to listen can send to a:
// an IPv4 socket reaches only IPv4 endpoints, one bound to a concrete IPv6
// address only IPv6 ones (its source address is IPv6); [::] reaches both.
// Anything else the kernel would refuse, datagram by datagram, in silence
// but for PortXmitDiscards.
func listenReaches(listen netip.AddrPort, a netip.Addr) bool {
	switch listenNetwork(listen) {
	case "udp4":
		return a.Unmap().Is4()
	case "udp6":
		return !a.Unmap().Is4()
	}
	return true
}

// familyMismatch says why the socket bound to listen cannot reach ap.
func familyMismatch(listen, ap netip.AddrPort) string {
	fam, other := "IPv4", "IPv6"
	if listenNetwork(listen) == "udp4" {
		fam, other = other, fam
	}
	return fmt.Sprintf("an %s endpoint (%v), but node.listen %v is %s and its socket can reach only %s endpoints; "+
		"listen on [::] (both families) or give this peer's %s address", fam, ap, listen, other, other, other)
}

func (c *checker) buildTrusted(l leaf, managed bool) []netip.AddrPort {
	var out []netip.AddrPort
	items := c.List(l, "trusted_managers")
	if len(items) > 0 && managed {
		c.Failf("trusted_managers", l, "only in static mode (with node.fabric_manager the FM is the one trusted manager)")
		return nil
	}
	for i, e := range items {
		path := fmt.Sprintf("trusted_managers[%d]", i)
		if !c.Required(e, path) {
			break
		}
		s, _ := c.Text(e, path)
		ap, err := parseEndpoint(s)
		if err != nil {
			c.Failf(path, e, "%q: %v", s, err)
			continue
		}
		out = append(out, ap)
	}
	return out
}

// netdevEntry is where a netdevs entry is written: its key and its ifname.
type netdevEntry struct {
	key    string
	ifname leaf
}

// buildNetdevs builds netdevs, and says by vport where each entry is written
// (for checkNetdevsVsVNICs).
func (c *checker) buildNetdevs(raw map[string]rawNetdev, managed bool, underlay string) (map[uint8]engine.NetdevConfig, map[uint8]netdevEntry) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !managed {
		k := sortedKeys(raw)[0]
		r := raw[k]
		c.Failf("netdevs."+k, r.IfName, "only in managed mode (with node.fabric_manager); in static mode each vnics[] entry names its netdev under port:")
		return nil, nil
	}
	out := map[uint8]engine.NetdevConfig{}
	leaves := map[uint8]netdevEntry{}
	ifnames := map[string]string{} // NetdevKey -> path, as buildVNICs checks vnics'
	if underlay != "" {
		ifnames[NetdevKey("", underlay)] = "node.underlay_interface"
	}
	for _, k := range sortedKeys(raw) {
		path := "netdevs." + k
		r := raw[k]
		// The key is a vport index, written as any integer of the config
		// (a leading 0 refused as ambiguous); its line is its value's.
		line := r.IfName
		for _, l := range []leaf{r.NetNS, r.Addresses} {
			if !line.Present() {
				line = l
			}
		}
		kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Line: line.Line()}
		v, ok := c.Number(yamlcfg.LeafOf(kn), path)
		switch {
		case !ok:
			continue
		case v > MaxVPort:
			c.Failf(path, line, "%q is not a vport index (0..%d)", k, MaxVPort)
			continue
		case leaves[uint8(v)].key != "": // 7 and 0x7 are one vport
			c.Failf(path, line, "vport %d is also netdevs.%s", v, leaves[uint8(v)].key)
			continue
		}
		nd := c.buildNetdev(&rawPort{IfName: r.IfName, NetNS: r.NetNS, Addresses: r.Addresses}, path, v)
		key := NetdevKey(nd.NetNS, nd.IfName)
		if prev := ifnames[key]; prev != "" {
			c.Failf(path+".ifname", r.IfName, "%q is also %s, in the same network namespace", nd.IfName, prev)
		}
		ifnames[key] = path + ".ifname"
		out[uint8(v)] = nd
		leaves[uint8(v)] = netdevEntry{k, r.IfName}
	}
	return out, leaves
}

// checkNetdevsVsVNICs refuses a netdevs entry whose netdev has the name of a
// vnics[] entry's (of another vport) in the same network namespace: the EM
// would make a second netdev of that name for it.
func (c *checker) checkNetdevsVsVNICs(cfg *Config, leaves map[uint8]netdevEntry) {
	ifnames := map[string]string{}
	vports := map[uint8]bool{}
	for i, v := range cfg.VNICs {
		ifnames[NetdevKey(v.Netdev.NetNS, v.Netdev.IfName)] = fmt.Sprintf("vnics[%d].port.ifname", i)
		vports[v.VPort] = true
	}
	for _, vp := range sortedKeys(cfg.Netdevs) {
		nd := cfg.Netdevs[vp]
		if vports[vp] {
			continue // the vnics[] entry names this vport's netdev (NetdevFor)
		}
		if prev := ifnames[NetdevKey(nd.NetNS, nd.IfName)]; prev != "" {
			c.Failf("netdevs."+leaves[vp].key+".ifname", leaves[vp].ifname, "%q is also %s, in the same network namespace", nd.IfName, prev)
			return
		}
	}
}
