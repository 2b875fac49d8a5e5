// Package topology reads and writes the topology file of a switched fabric:
// its switches, its hosts (HFIs: vnicd nodes and the fabric manager) and the
// cables between them, with the UDP endpoint of every cable end
// (docs/fabric.md, "The topology file"). Like the daemons' configs, a file
// is YAML with unknown fields refused, and every problem is an error naming
// the field and its line.
//
// Endpoints: a switch has an address, and its port p listens on
// address:(base_port + p); a host's HFI listens on its endpoint (the vnicd
// node's listen address). So a cable needs only its two ends' names.
package topology

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/yamlcfg"
)

// Defaults and bounds.
const (
	DefaultPorts    = 48
	MaxPorts        = 254
	DefaultBasePort = 5000
	maxName         = 64
)

// Error is a topology file that cannot be used: which field, why, and the
// line.
type Error = yamlcfg.Error

// Topology is a checked topology file.
type Topology struct {
	Switches []Switch
	Hosts    []Host
	Cables   []Cable
}

// Switch is one emulated switch.
type Switch struct {
	Name     string
	GUID     uint64 // default encap.GUIDFromName(Name)
	NumPorts int
	Address  netip.Addr
	BasePort uint16
}

// Endpoint returns the UDP endpoint of port p's cable end.
func (s *Switch) Endpoint(p int) netip.AddrPort {
	return netip.AddrPortFrom(s.Address, s.BasePort+uint16(p))
}

// Host is one HFI: a vnicd node or the fabric manager.
type Host struct {
	Name     string
	Endpoint netip.AddrPort
}

// End is one end of a cable: port Port of switch Switch, or the HFI of
// host Host.
type End struct {
	Switch string
	Port   int
	Host   string
}

func (e End) String() string {
	if e.Host != "" {
		return e.Host
	}
	return e.Switch + "/" + strconv.Itoa(e.Port)
}

// Cable joins two ends.
type Cable struct{ A, B End }

// Load reads and checks the topology file at path. A read error comes back
// as os.ReadFile gives it; everything else is an *Error.
func Load(path string) (*Topology, error) { return loader.Load(path) }

// Parse checks a topology file's text, expanding ${NAME} and
// ${NAME:-default} from the environment. The error is an *Error.
func Parse(data []byte) (*Topology, error) { return loader.Parse(data, os.LookupEnv) }

var loader = yamlcfg.Loader[rawTopology, Topology]{Config: "topology", NotMapping: "the file must be a mapping (switches, hosts, cables)", Build: (*rawTopology).build}

type leaf = yamlcfg.Leaf

type rawTopology struct {
	Switches []rawSwitch `yaml:"switches"`
	Hosts    []rawHost   `yaml:"hosts"`
	Cables   []leaf      `yaml:"cables"`
}

type rawSwitch struct {
	Name     leaf `yaml:"name"`
	GUID     leaf `yaml:"guid"`
	Ports    leaf `yaml:"ports"`
	Address  leaf `yaml:"address"`
	BasePort leaf `yaml:"base_port"`
}

type rawHost struct {
	Name     leaf `yaml:"name"`
	Endpoint leaf `yaml:"endpoint"`
}

type checker struct{ yamlcfg.Checker }

func (c *checker) name(l leaf, path string) string {
	s, ok := c.Text(l, path)
	switch {
	case !ok:
		c.Failf(path, l, "is required")
	case s == "" || len(s) > maxName:
		c.Failf(path, l, "must be 1 to %d bytes", maxName)
	case strings.ContainsAny(s, "/ \t\n"):
		c.Failf(path, l, "%q: must not contain / or white space", s)
	}
	return s
}

func (r *rawTopology) build() (*Topology, error) {
	var c checker
	t := &Topology{}
	names := map[string]string{}
	eps := map[netip.AddrPort]string{}
	claim := func(name, path string, l leaf) {
		if prev, dup := names[name]; dup && name != "" {
			c.Failf(path, l, "%q is also %s", name, prev)
		}
		names[name] = path
	}
	for i, rs := range r.Switches {
		path := fmt.Sprintf("switches[%d]", i)
		s := Switch{Name: c.name(rs.Name, path+".name")}
		claim(s.Name, path+".name", rs.Name)
		s.GUID = uint64(encap.GUIDFromName(s.Name))
		if rs.GUID.Present() {
			s.GUID = c.Ranged(rs.GUID, path+".guid", 1, 1<<64-1, s.GUID, true)
		}
		s.NumPorts = int(c.Ranged(rs.Ports, path+".ports", 1, MaxPorts, DefaultPorts, false))
		s.BasePort = uint16(c.Ranged(rs.BasePort, path+".base_port", 1, 65535-MaxPorts, DefaultBasePort, false))
		if c.Required(rs.Address, path+".address") {
			a, err := netip.ParseAddr(c.textOf(rs.Address, path+".address"))
			if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
				c.Failf(path+".address", rs.Address, "must be one unicast IP address with no zone")
			}
			s.Address = a.Unmap()
		}
		for p := 1; p <= s.NumPorts && !c.Failed(); p++ {
			ep := s.Endpoint(p)
			if prev, dup := eps[ep]; dup {
				c.Failf(path+".address", rs.Address, "port %d's endpoint %v is also %s's", p, ep, prev)
			}
			eps[ep] = fmt.Sprintf("%s/%d", s.Name, p)
		}
		t.Switches = append(t.Switches, s)
	}
	for i, rh := range r.Hosts {
		path := fmt.Sprintf("hosts[%d]", i)
		h := Host{Name: c.name(rh.Name, path+".name")}
		claim(h.Name, path+".name", rh.Name)
		if c.Required(rh.Endpoint, path+".endpoint") {
			ap, err := netip.ParseAddrPort(c.textOf(rh.Endpoint, path+".endpoint"))
			if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" || ap.Addr().IsUnspecified() || ap.Addr().IsMulticast() {
				c.Failf(path+".endpoint", rh.Endpoint, "must be ADDRESS:PORT, a unicast address with no zone and a port")
			}
			h.Endpoint = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			if prev, dup := eps[h.Endpoint]; dup {
				c.Failf(path+".endpoint", rh.Endpoint, "%v is also %s's", h.Endpoint, prev)
			}
			eps[h.Endpoint] = h.Name
		}
		t.Hosts = append(t.Hosts, h)
	}
	used := map[End]string{}
	for i, l := range r.Cables {
		path := fmt.Sprintf("cables[%d]", i)
		ends := c.List(l, path)
		if c.Failed() {
			break
		}
		if len(ends) != 2 {
			c.Failf(path, l, "must be a list of its two ends, [SWITCH/PORT or HOST, SWITCH/PORT or HOST]")
			break
		}
		var cb [2]End
		for j, el := range ends {
			epath := fmt.Sprintf("%s[%d]", path, j)
			cb[j] = c.end(t, c.textOf(el, epath), epath, el)
			if prev, dup := used[cb[j]]; dup && !c.Failed() {
				c.Failf(epath, el, "%v is already cabled (%s)", cb[j], prev)
			}
			used[cb[j]] = epath
		}
		if cb[0].Host != "" && cb[1].Host != "" && !c.Failed() {
			c.Failf(path, l, "joins two hosts: an HFI is cabled to a switch")
		}
		t.Cables = append(t.Cables, Cable{A: cb[0], B: cb[1]})
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// textOf is Text for a field known to be present.
func (c *checker) textOf(l leaf, path string) string {
	s, _ := c.Text(l, path)
	return s
}

// end parses a cable end: SWITCH/PORT or HOST.
func (c *checker) end(t *Topology, s, path string, l leaf) End {
	name, port, isPort := strings.Cut(s, "/")
	if !isPort {
		if t.Host(name) == nil {
			c.Failf(path, l, "%q is no host of the file (a switch port is SWITCH/PORT)", s)
		}
		return End{Host: name}
	}
	sw := t.Switch(name)
	if sw == nil {
		c.Failf(path, l, "%q: no switch %q", s, name)
		return End{}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > sw.NumPorts {
		c.Failf(path, l, "%q: %s has ports 1 to %d", s, name, sw.NumPorts)
	}
	return End{Switch: name, Port: p}
}

// Switch returns the switch named name, or nil.
func (t *Topology) Switch(name string) *Switch {
	if i := slices.IndexFunc(t.Switches, func(s Switch) bool { return s.Name == name }); i >= 0 {
		return &t.Switches[i]
	}
	return nil
}

// Host returns the host named name, or nil.
func (t *Topology) Host(name string) *Host {
	if i := slices.IndexFunc(t.Hosts, func(h Host) bool { return h.Name == name }); i >= 0 {
		return &t.Hosts[i]
	}
	return nil
}

// Endpoint returns the UDP endpoint of a cable end.
func (t *Topology) Endpoint(e End) netip.AddrPort {
	if e.Host != "" {
		if h := t.Host(e.Host); h != nil {
			return h.Endpoint
		}
		return netip.AddrPort{}
	}
	if s := t.Switch(e.Switch); s != nil {
		return s.Endpoint(e.Port)
	}
	return netip.AddrPort{}
}

// Peer returns the other end of the cable at e, if e is cabled.
func (t *Topology) Peer(e End) (End, bool) {
	for _, c := range t.Cables {
		switch e {
		case c.A:
			return c.B, true
		case c.B:
			return c.A, true
		}
	}
	return End{}, false
}

// Uplink returns the endpoint of the switch port host is cabled to: what
// its vnicd node config names as its uplink.
func (t *Topology) Uplink(host string) (netip.AddrPort, bool) {
	p, ok := t.Peer(End{Host: host})
	if !ok {
		return netip.AddrPort{}, false
	}
	return t.Endpoint(p), true
}

// Marshal writes the topology in the file's syntax: Parse reads it back
// to an equal Topology.
func (t *Topology) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("switches:\n")
	for _, s := range t.Switches {
		guid := ""
		if s.GUID != 0 {
			guid = fmt.Sprintf(", guid: %#x", s.GUID)
		}
		fmt.Fprintf(&b, "  - {name: %s%s, ports: %d, address: %q, base_port: %d}\n", s.Name, guid, s.NumPorts, s.Address, s.BasePort)
	}
	b.WriteString("hosts:\n")
	for _, h := range t.Hosts {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %q}\n", h.Name, h.Endpoint)
	}
	b.WriteString("cables:\n")
	for _, c := range t.Cables {
		fmt.Fprintf(&b, "  - [%s, %s]\n", c.A, c.B)
	}
	return b.Bytes()
}
