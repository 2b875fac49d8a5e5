package vnicd

import (
	"net"
	"net/netip"
	"time"
)

// addrWatchIv is how often a node listening on the wildcard address looks
// at the source address the kernel picks toward the FM.
const addrWatchIv = 250 * time.Millisecond

// addrWatch follows, for a node whose UDP socket is bound to the wildcard
// address, the source address its packets to the FM leave with: the
// address the FM knows the node by. When the host loses that address (it
// was replaced on the underlay interface), the FM's polls go to an
// endpoint that no longer exists, and without the watch the node would
// only announce from its new address once it had missed the SM for
// smSilence. A source that changes while the old address stays on the
// host (another route preferred) is not a move: the node still answers at
// its old endpoint.
type addrWatch struct {
	fm   netip.AddrPort
	last netip.Addr // the source seen last; invalid before the first look
	// src is the source address toward fm; local reports whether an
	// address is still one of the host's. Tests replace both.
	src   func(fm netip.AddrPort) (netip.Addr, error)
	local func(a netip.Addr) bool
}

func newAddrWatch(fm netip.AddrPort) *addrWatch {
	return &addrWatch{fm: fm, src: routeSource, local: hostHasAddr}
}

// moved looks at the source address toward the FM again and reports
// whether the last one seen has left the host for another. A failed
// lookup (no route for now, as between an address's removal and its
// replacement) keeps the last one.
func (w *addrWatch) moved() (old, cur netip.Addr, ok bool) {
	cur, err := w.src(w.fm)
	if err != nil || !cur.IsValid() {
		return w.last, netip.Addr{}, false
	}
	old, w.last = w.last, cur
	if !old.IsValid() || old == cur {
		return old, cur, false
	}
	return old, cur, !w.local(old)
}

// routeSource asks the kernel which source address a UDP packet to fm
// would carry: a connected UDP socket is routed, and nothing is sent.
func routeSource(fm netip.AddrPort) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(fm))
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// hostHasAddr reports whether a is an address of one of the host's
// interfaces (in vnicd's network namespace). If the host's addresses
// cannot be read, a is taken to be there: no announce on a guess.
func hostHasAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	a = a.Unmap()
	for _, ad := range addrs {
		n, ok := ad.(*net.IPNet)
		if !ok {
			continue
		}
		if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a.WithZone("") {
			return true
		}
	}
	return false
}
