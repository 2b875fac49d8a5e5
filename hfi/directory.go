package hfi

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/opavnic/opavnic/encap"
)

// Directory is the fabric as one HFI needs it to send: the UDP endpoint of
// every unicast LID and the member LIDs of every multicast LID (all LIDs in
// their 24-bit 16B form). A Directory is immutable once built, so the data
// path reads it without locks; SetDirectory swaps in a new one.
type Directory struct {
	endpoints map[uint32]netip.AddrPort
	groups    map[uint32][]uint32
}

// ErrDirectory is wrapped by NewDirectory's errors.
var ErrDirectory = errors.New("hfi: bad directory")

// Scoped reports whether a is an IPv6 address that needs or carries a zone
// (scope id): a link-local unicast address, or any address with a zone. The
// UDP transport carries no scope id either way (it sends with
// sin6_scope_id 0 and reports sources without a zone), so the kernel cannot
// send to such an endpoint or bind such a listen address without one, and a
// zoned endpoint never equals a received source (rcv_bad_source). NewDirectory
// refuses such endpoints; configs refuse them with the key at fault.
func Scoped(a netip.Addr) bool {
	return a.Zone() != "" || a.Is6() && !a.Is4In6() && a.IsLinkLocalUnicast()
}

// AmbiguousIPv6 refuses s, an endpoint written as a bare IPv6 literal
// (no brackets), when it also reads as an IPv6 address and a port: what
// comes after its last colon is a decimal port and what comes before it an
// IPv6 address. "fd99::2:4793", most likely meant as fd99::2 port 4793, is
// also the address fd99::2:4793, and sending there would be a silent
// mistake. The error says how to write either reading. Any other s is nil.
func AmbiguousIPv6(s string) error {
	if a, err := netip.ParseAddr(s); err != nil || !a.Is6() {
		return nil // one reading at most
	}
	i := strings.LastIndexByte(s, ':')
	host, port := s[:i], s[i+1:]
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return nil
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
		return nil
	}
	return fmt.Errorf("%w that also reads as address %s port %s: write [%s]:%s for that port, or [%s] for the address %s",
		ErrAmbiguousIPv6, host, port, host, port, s, s)
}

// ErrAmbiguousIPv6 is the error AmbiguousIPv6 wraps.
var ErrAmbiguousIPv6 = errors.New("an IPv6 address without brackets")

// NewDirectory validates and copies endpoints and groups. Endpoint addresses
// are unmapped (an IPv4-mapped IPv6 address becomes IPv4), so they compare
// equal to received source addresses; a Scoped address is refused.
func NewDirectory(endpoints map[uint32]netip.AddrPort, groups map[uint32][]uint32) (*Directory, error) {
	d := &Directory{
		endpoints: make(map[uint32]netip.AddrPort, len(endpoints)),
		groups:    make(map[uint32][]uint32, len(groups)),
	}
	for lid, ep := range endpoints {
		if err := CheckEndpoint(lid, ep); err != nil {
			return nil, err
		}
		d.endpoints[lid] = netip.AddrPortFrom(ep.Addr().Unmap(), ep.Port())
	}
	for mlid, members := range groups {
		if err := CheckGroup(mlid, members); err != nil {
			return nil, err
		}
		ms := slices.Clone(members)
		slices.Sort(ms)
		d.groups[mlid] = slices.Compact(ms)
	}
	return d, nil
}

// CheckEndpoint reports why a directory may not map lid to ep (nil if it
// may): lid must be a 16B unicast LID, ep an address and a non-zero port,
// not link-local or zoned (the transport carries no zone).
func CheckEndpoint(lid uint32, ep netip.AddrPort) error {
	if !encap.Is16BUnicast(lid) {
		return fmt.Errorf("%w: endpoint LID %#x is not a 16B unicast LID", ErrDirectory, lid)
	}
	if !ep.IsValid() || ep.Port() == 0 {
		return fmt.Errorf("%w: LID %#x: endpoint %v is not an address and port", ErrDirectory, lid, ep)
	}
	if Scoped(ep.Addr()) {
		return fmt.Errorf("%w: LID %#x: endpoint %v is IPv6 link-local or zoned, and the transport carries no zone", ErrDirectory, lid, ep)
	}
	return nil
}

// CheckGroup reports why a directory may not hold group mlid with members
// (nil if it may): mlid a 16B multicast LID, every member a unicast one.
func CheckGroup(mlid uint32, members []uint32) error {
	if !encap.Is16BMulticast(mlid) {
		return fmt.Errorf("%w: group LID %#x is not a 16B multicast LID", ErrDirectory, mlid)
	}
	for _, m := range members {
		if !encap.Is16BUnicast(m) {
			return fmt.Errorf("%w: group %#x: member %#x is not a unicast LID", ErrDirectory, mlid, m)
		}
	}
	return nil
}

// Endpoint returns the endpoint of a unicast LID.
func (d *Directory) Endpoint(lid uint32) (netip.AddrPort, bool) {
	ep, ok := d.endpoints[lid]
	return ep, ok
}

// Members returns the member LIDs of a multicast LID, sorted. The slice is
// shared: do not modify it.
func (d *Directory) Members(mlid uint32) []uint32 { return d.groups[mlid] }

// Endpoints returns a copy of the unicast entries.
func (d *Directory) Endpoints() map[uint32]netip.AddrPort { return maps.Clone(d.endpoints) }

// Groups returns a copy of the multicast entries.
func (d *Directory) Groups() map[uint32][]uint32 {
	g := make(map[uint32][]uint32, len(d.groups))
	for k, v := range d.groups {
		g[k] = slices.Clone(v)
	}
	return g
}

// routes is a Directory seen from one port: what the data path looks up.
type routes struct {
	dir    *Directory
	self   uint32
	peers  map[uint32]peerRoute   // unicast LID -> its endpoint and traffic
	fanout map[uint32][]peerRoute // multicast LID -> member endpoints but ours
	joined map[uint32]bool        // multicast LIDs this port is a member of
	// uplink, when valid, is the switch port the HFI is cabled to (a
	// switched fabric): every packet goes there, multicast too (the switch
	// replicates it), and only packets from there are taken; the directory
	// is not used.
	uplink netip.AddrPort
}

// peerRoute is a unicast LID's endpoint and the port's traffic with it.
type peerRoute struct {
	ep netip.AddrPort
	t  *PeerTraffic
}

// routeMemo is the last unicast lookup in one routes, for a loop that looks
// up runs of one LID: within one call the routes (so the directory) do not
// change, and the map access is made once per run. The zero value holds
// none.
type routeMemo struct {
	lid        uint32
	pr         peerRoute
	known, set bool
}

// get is r.peers[lid], from the memo while lid repeats; m must be used with
// one r only.
func (m *routeMemo) get(r *routes, lid uint32) (peerRoute, bool) {
	if !m.set || lid != m.lid {
		m.pr, m.known = r.peers[lid]
		m.lid, m.set = lid, true
	}
	return m.pr, m.known
}

// newRoutes makes d's routes for port self, with traffic (trafficTable)
// holding an entry for every unicast LID of d.
func newRoutes(d *Directory, self uint32, traffic map[uint32]*PeerTraffic) *routes {
	r := &routes{
		dir:    d,
		self:   self,
		peers:  make(map[uint32]peerRoute, len(d.endpoints)),
		fanout: make(map[uint32][]peerRoute, len(d.groups)),
		joined: make(map[uint32]bool),
	}
	for lid, ep := range d.endpoints {
		r.peers[lid] = peerRoute{ep: ep, t: traffic[lid]}
	}
	selfEP, hasSelfEP := d.endpoints[self]
	for mlid, members := range d.groups {
		var prs []peerRoute
		for _, m := range members {
			if m == self {
				r.joined[mlid] = true
				continue
			}
			pr, ok := r.peers[m]
			if !ok || (hasSelfEP && pr.ep == selfEP) || slices.ContainsFunc(prs, func(o peerRoute) bool { return o.ep == pr.ep }) {
				continue
			}
			prs = append(prs, pr)
		}
		r.fanout[mlid] = prs
	}
	return r
}
