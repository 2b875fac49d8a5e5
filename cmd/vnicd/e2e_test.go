package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// The end-to-end tests run the real vnicd binary in network namespaces the
// test makes (and always removes), with real TAP netdevs, real UDP and real
// ping and iperf3. They need root; unprivileged runs skip them.

const (
	lidA   = 0x10
	lidB   = 0xABCDE // extended, with bits in DLID[23:20]
	lidC   = 0xC000  // the first extended LID
	mcRed  = 0xF00001
	mcBlue = 0xF00002
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// pairHost is one of two hosts joined by a veth, each with one VNIC, vnic0
// on vesw 1 at addr, and the other (LID peer at other, an endpoint) in its
// directory and in the red multicast group.
func pairHost(name string, lid, peer int, self, other, addr string) e2etest.Host {
	return e2etest.Host{
		Name: name, LID: lid, Listen: self + ":4793",
		Peers:  map[int]string{peer: other},
		Groups: map[int][]int{mcRed: {lidA, lidB}},
		VNICs:  []e2etest.VNIC{{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0", Addrs: []string{addr}}},
	}
}

// pingBothSwitches pings from host a (namespace a) to host b on the red
// switch, over IPv4 and IPv6, and between the blue namespaces both ways;
// then it gives a's blue port a red address (192.168.101.9/24), for a check
// that the red switch is not reached from the blue one.
func pingBothSwitches(t *testing.T, a, aBlue, bBlue *nstest.NS) {
	t.Helper()
	e2etest.Ping(t, a, "192.168.101.2")
	e2etest.Ping(t, a, "-6", "fd00:101::2")
	e2etest.Ping(t, aBlue, "192.168.102.2")
	e2etest.Ping(t, bBlue, "-6", "fd00:102::1")
	if _, err := aBlue.Exec(context.Background(), "ip", "addr", "add", "192.168.101.9/24", "dev", "vnic1"); err != nil {
		t.Fatal(err)
	}
}

func TestE2ETwoHostsTwoSwitches(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "iperf3")
	a, b := nstest.NewNS(t, "a"), nstest.NewNS(t, "b")
	aBlue, bBlue := nstest.NewNS(t, "ablue"), nstest.NewNS(t, "bblue")
	_, vethB := nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)

	host := func(name string, lid, peer int, self, other string, blueNS *nstest.NS, n int) e2etest.Host {
		return e2etest.Host{
			Name: name, LID: lid, Listen: self + ":4793",
			Peers:  map[int]string{peer: other + ":4793"},
			Groups: map[int][]int{mcRed: {lidA, lidB}, mcBlue: {lidA, lidB}},
			VNICs: []e2etest.VNIC{
				{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0",
					Addrs: []string{fmt.Sprintf("192.168.101.%d/24", n), fmt.Sprintf("fd00:101::%d/64", n)}},
				{VPort: 1, VESW: 2, PKey: 0x8002, Mcast: mcBlue, IfName: "vnic1", NetNS: blueNS.Path(),
					Addrs: []string{fmt.Sprintf("192.168.102.%d/24", n), fmt.Sprintf("fd00:102::%d/64", n)}},
			},
		}
	}
	// Capture the underlay at b from before the first packet.
	capture := startCapture(t, b, vethB)
	da := e2etest.Start(t, a, host("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2", aBlue, 1))
	db := e2etest.Start(t, b, host("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1", bBlue, 2))

	// The VNICs are real netdevs with the derived MACs and the vesw MTU.
	for _, tc := range []struct {
		ns   *nstest.NS
		name string
		lid  int
		vesw int
	}{{a, "vnic0", lidA, 1}, {aBlue, "vnic1", lidA, 2}, {b, "vnic0", lidB, 1}, {bBlue, "vnic1", lidB, 2}} {
		l, err := tc.ns.Netlink().LinkByName(tc.name)
		if err != nil {
			t.Fatalf("%s in %s: %v", tc.name, tc.ns.Name(), err)
		}
		wantMAC := fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", tc.vesw, tc.lid&0xFF, tc.lid>>8&0xFF, tc.lid>>16&0xFF)
		if got := l.Attrs().HardwareAddr.String(); got != wantMAC || l.Attrs().MTU != 1400 || l.Type() != "tuntap" {
			t.Errorf("%s in %s: type %s MAC %s MTU %d; want tuntap %s 1400", tc.name, tc.ns.Name(), l.Type(), got, l.Attrs().MTU, wantMAC)
		}
	}

	// Static neighbours on the red switch: without them a host confirms a
	// neighbour it just talked to with a unicast probe a few seconds later
	// (NUD), which would land in the isolation window below.
	for _, nb := range []struct {
		ns  *nstest.NS
		lid int
		n   int
	}{{a, lidB, 2}, {b, lidA, 1}} {
		mac := fmt.Sprintf("02:00:01:%02x:%02x:%02x", nb.lid&0xFF, nb.lid>>8&0xFF, nb.lid>>16&0xFF)
		for _, addr := range []string{fmt.Sprintf("192.168.101.%d", nb.n), fmt.Sprintf("fd00:101::%d", nb.n)} {
			if out, err := nb.ns.Exec(context.Background(), "ip", "neigh", "replace", addr, "lladdr", mac, "dev", "vnic0", "nud", "permanent"); err != nil {
				t.Fatalf("ip neigh replace %s: %v\n%s", addr, err, out)
			}
		}
	}
	pingBothSwitches(t, a, aBlue, bBlue)

	// Isolation: on the blue switch, host b's red address does not answer.
	// The ARP requests reach host b's blue port only; its red port sees no
	// frame addressed to it (spontaneous IPv6 multicast on red may come).
	redBefore, blueBefore := db.Counters(t, 0), db.Counters(t, 1)
	if out, err := aBlue.Exec(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", "vnic1", "192.168.101.2"); err == nil {
		t.Fatalf("isolation broken: red address answered on the blue switch:\n%s", out)
	}
	redAfter, blueAfter := db.Counters(t, 0), db.Counters(t, 1)
	if redAfter["rx_unicast"] != redBefore["rx_unicast"] || redAfter["tx_unicast"] != redBefore["tx_unicast"] {
		t.Errorf("host b's red port took part: rx_unicast %d -> %d, tx_unicast %d -> %d",
			redBefore["rx_unicast"], redAfter["rx_unicast"], redBefore["tx_unicast"], redAfter["tx_unicast"])
	}
	if blueAfter["rx_mcastbcast"] < blueBefore["rx_mcastbcast"]+2 {
		t.Errorf("host b's blue port did not get the ARP requests: rx_mcastbcast %d -> %d",
			blueBefore["rx_mcastbcast"], blueAfter["rx_mcastbcast"])
	}

	rate := e2etest.Iperf(t, a, b, "192.168.101.2", 3, 1)
	t.Logf("iperf3 TCP across the red switch: %.0f Mbit/s", rate/1e6)
	if rate <= 0 {
		t.Fatal("iperf3 moved nothing")
	}
	for _, d := range []*e2etest.Daemon{da, db} {
		c := d.Counters(t, 0)
		if c["tx_packets"] == 0 || c["rx_packets"] == 0 || c["rx_errors"] != 0 || c["tx_dlid_zero"] != 0 {
			t.Errorf("red port counters: tx %d rx %d rx_errors %d tx_dlid_zero %d",
				c["tx_packets"], c["rx_packets"], c["rx_errors"], c["tx_dlid_zero"])
		}
		h := d.HFICounters(t)
		if h["PortRcvErrors"] != 0 {
			t.Errorf("HFI receive errors: %v", h)
		}
	}
	// The offloads did the work: a's TAP handed over TCP super-frames, cut
	// into eth_mtu frames (the capture below checks each on the wire), and
	// b wrote runs of them to its TAP coalesced.
	ca, cb := da.Counters(t, 0), db.Counters(t, 0)
	t.Logf("offloads: a tx_tso_superframes %d tx_tso_segments %d, b rx_coalesced %d of rx_packets %d",
		ca["tx_tso_superframes"], ca["tx_tso_segments"], cb["rx_coalesced"], cb["rx_packets"])
	if ca["tx_tso_superframes"] == 0 || ca["tx_tso_segments"] <= ca["tx_tso_superframes"] ||
		cb["rx_coalesced"] == 0 || ca["offload_drops"] != 0 || cb["offload_drops"] != 0 {
		t.Errorf("offload counters: host a %v, host b %v", ca, cb)
	}

	// The capture: every fabric datagram at b is a well-formed 16B packet.
	pkts := capture.stop(t)
	checkCapture(t, pkts, map[uint32]bool{lidA: true, lidB: true}, map[uint32]bool{mcRed: true, mcBlue: true})
}

// captured is one UDP payload seen on the underlay, with its direction.
type captured struct {
	payload  []byte
	outgoing bool
	gso      bool // cut from a UDP GSO super-packet
}

// vnetHdrLen is the virtio_net_hdr in front of each captured frame.
const vnetHdrLen = 10

type capturer struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	pkts  []captured
	err   error
}

// startCapture opens an AF_PACKET socket on ifname inside ns and keeps the
// UDP payloads to or from port 4793 (unfragmented IPv4 only), up to 100000
// packets, until stop. The socket asks for each frame's virtio_net_hdr
// (PACKET_VNET_HDR): a veth carries a UDP GSO super-packet intact, and the
// capture cuts it into the datagrams the kernel cuts it into (gso_size each,
// the last shorter) wherever it is segmented, for a receiving socket or a
// real NIC. Each of those is what checkCapture judges.
func startCapture(t *testing.T, ns *nstest.NS, ifname string) *capturer {
	t.Helper()
	var fd int
	err := ns.Do(func() error {
		l, err := ns.Netlink().LinkByName(ifname)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			unix.Close(fd)
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index}); err != nil {
			unix.Close(fd)
			return err
		}
		tv := unix.Timeval{Usec: 100000}
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		t.Fatalf("capture on %s: %v", ifname, err)
	}
	c := &capturer{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer unix.Close(fd)
		buf := make([]byte, 65536)
		for n := 0; n < 100000; {
			select {
			case <-c.stopc:
				return
			default:
			}
			k, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				if err == unix.EAGAIN || err == unix.EINTR {
					continue
				}
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
				return
			}
			ll, _ := from.(*unix.SockaddrLinklayer)
			if k < vnetHdrLen {
				continue
			}
			const gsoUDPL4 = 5 // VIRTIO_NET_HDR_GSO_UDP_L4
			gsoSize := 0
			if buf[1]&^0x80 == gsoUDPL4 {
				gsoSize = int(binary.LittleEndian.Uint16(buf[4:]))
			}
			if p, ok := udpPayload(buf[vnetHdrLen:k], 4793); ok {
				c.mu.Lock()
				for len(p) > 0 {
					d := p
					if gsoSize > 0 && len(d) > gsoSize {
						d = p[:gsoSize]
					}
					p = p[len(d):]
					c.pkts = append(c.pkts, captured{payload: append([]byte(nil), d...), outgoing: ll != nil && ll.Pkttype == unix.PACKET_OUTGOING, gso: gsoSize > 0})
					n++
				}
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.stopOnce() })
	return c
}

func (c *capturer) stopOnce() {
	select {
	case <-c.stopc:
	default:
		close(c.stopc)
	}
	<-c.done
}

func (c *capturer) stop(t *testing.T) []captured {
	t.Helper()
	c.stopOnce()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	return c.pkts
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// udpPayload returns the UDP payload of an unfragmented IPv4 Ethernet frame
// to or from port.
func udpPayload(f []byte, port uint16) ([]byte, bool) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return nil, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0xF) * 4
	if ip[9] != 17 || ihl < 20 || len(ip) < ihl+8 || binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0 {
		return nil, false
	}
	udp := ip[ihl:]
	if binary.BigEndian.Uint16(udp[0:]) != port && binary.BigEndian.Uint16(udp[2:]) != port {
		return nil, false
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < 8 || ulen > len(udp) {
		return nil, false
	}
	return udp[8:ulen], true
}

// checkCapture decodes every captured datagram as a 16B VNIC packet with
// code of its own (docs/wire.md §2, §3, §5), independent of package encap.
func checkCapture(t *testing.T, pkts []captured, lids, mcasts map[uint32]bool) {
	t.Helper()
	gso := 0
	for _, p := range pkts {
		if p.gso {
			gso++
		}
	}
	t.Logf("capture: %d datagrams, %d of them cut from UDP GSO super-packets", len(pkts), gso)
	if len(pkts) < 20 {
		t.Fatalf("captured only %d fabric datagrams", len(pkts))
	}
	seen := map[string]int{}
	for i, c := range pkts {
		p := c.payload
		if len(p) < 88 {
			t.Fatalf("packet %d: %d bytes, less than the 88-byte minimum", i, len(p))
		}
		lrh0 := binary.LittleEndian.Uint32(p[0:])
		lrh1 := binary.LittleEndian.Uint32(p[4:])
		lrh2 := binary.LittleEndian.Uint32(p[8:])
		lrh3 := binary.LittleEndian.Uint32(p[12:])
		slid := lrh0&0xFFFFF | (lrh2>>8&0xF)<<20
		dlid := lrh1&0xFFFFF | (lrh2>>12&0xF)<<20
		length := int(lrh0 >> 20 & 0x7FF)
		becn, fecn := lrh0>>31, lrh1>>28&1
		l2, lt := lrh1>>29&3, lrh1>>31
		l4 := lrh2 & 0xFF
		pkey := lrh2 >> 16
		entropy, age := lrh3&0xFFFF, lrh3>>16&0xFF
		vesw := binary.LittleEndian.Uint16(p[18:])
		tail := p[len(p)-1]
		pad := int(tail & 7)
		frameLen := len(p) - 20 - pad - 5
		errs := []string{}
		check := func(ok bool, f string, a ...any) {
			if !ok {
				errs = append(errs, fmt.Sprintf(f, a...))
			}
		}
		check(length*8 == len(p), "LEN %d*8 != %d bytes", length, len(p))
		check(l2 == 2, "L2 %d", l2)
		check(lt == 1, "LT %d", lt)
		check(l4 == 0x78, "L4 %#x", l4)
		check(becn == 0 && fecn == 0 && age == 0, "BECN %d FECN %d Age %d", becn, fecn, age)
		check(entropy <= 0xFF, "entropy %#x uses more than 8 bits", entropy)
		check(tail&0xC0 == 0x40, "tail %#x: LT bits not 01", tail)
		check(frameLen >= 60, "frame %d bytes, under 60", frameLen)
		check((20+frameLen+5+pad)%8 == 0 && pad == (-(20+frameLen+5))&7, "pad %d for frame %d", pad, frameLen)
		for j := 20 + frameLen; j < 20+frameLen+pad; j++ {
			check(p[j] == 0, "pad byte %d is %#x", j, p[j])
		}
		check(binary.BigEndian.Uint16(p[16:]) == 0, "reserved bytes 16-17 not zero")
		check(vesw == 1 && pkey == 0x8001 || vesw == 2 && pkey == 0x8002, "vesw %d with pkey %#x", vesw, pkey)
		check(lids[slid], "SLID %#x", slid)
		check(lids[dlid] && dlid != slid || mcasts[dlid], "DLID %#x", dlid)
		// ICRC: CRC-32 (IEEE) over everything before it, with BECN, SC, FECN
		// and Age counted as ones.
		m := append([]byte(nil), p[:len(p)-5]...)
		m[3] |= 0x80
		m[6] |= 0xF0
		m[7] |= 0x11
		m[14] = 0xFF
		check(binary.LittleEndian.Uint32(p[len(p)-5:]) == crc32.ChecksumIEEE(m), "bad ICRC")
		if len(errs) > 0 {
			t.Fatalf("packet %d (%d bytes, outgoing %v): %s\n% x", i, len(p), c.outgoing, strings.Join(errs, "; "), p[:min(len(p), 48)])
		}
		seen[fmt.Sprintf("slid=%#x", slid)]++
		seen[fmt.Sprintf("dlid=%#x", dlid)]++
		seen[fmt.Sprintf("vesw=%d", vesw)]++
	}
	for _, want := range []string{"slid=0x10", "slid=0xabcde", "dlid=0x10", "dlid=0xabcde", "vesw=1", "vesw=2", "dlid=0xf00001"} {
		if seen[want] == 0 {
			t.Errorf("no captured packet with %s (seen %v)", want, seen)
		}
	}
	t.Logf("decoded %d well-formed 16B packets on the underlay: %v", len(pkts), seen)
}

// TestE2EEthMTUAboveUnderlay: eth_mtu 1500 (the default) on a 1500-byte
// underlay makes 16B packets of up to 1544 bytes, 1572 with their IP and
// UDP headers, which the underlay carries only as IP fragments. The kernel
// refuses a UDP GSO send of such datagrams (EMSGSIZE since Linux 6.13,
// EINVAL before), so the transport must send them one by one: full-size
// pings both ways and a TCP transfer (super-frames, cut into full-size
// frames) arrive whole, and no packet is discarded.
func TestE2EEthMTUAboveUnderlay(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	a, b := nstest.NewNS(t, "fra"), nstest.NewNS(t, "frb")
	nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	ha := pairHost("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2:4793", "192.168.101.1/24")
	hb := pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24")
	ha.VNICs[0].EthMTU, hb.VNICs[0].EthMTU = 1500, 1500
	da, db := e2etest.Start(t, a, ha), e2etest.Start(t, b, hb)

	a.PingWithin(t, "192.168.101.2", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 1472 bytes of ICMP payload: a 1514-byte frame, a 1572-byte datagram.
	for _, x := range []struct {
		ns   *nstest.NS
		addr string
	}{{a, "192.168.101.2"}, {b, "192.168.101.1"}} {
		if out, err := x.ns.Exec(ctx, "ping", "-c", "3", "-s", "1472", "-M", "do", "-W", "2", "-q", x.addr); err != nil {
			t.Fatalf("full-size pings to %s: %v\n%s", x.addr, err, out)
		}
	}
	// A liveness bound, not a performance one: without GSO fallback not a
	// single run of full-size frames leaves, and TCP crawls on retransmits.
	const size = 16 << 20
	took := tcpTransfer(t, a, b, "192.168.101.2:5302", size, uint64(time.Now().UnixNano()), 60*time.Second)
	t.Logf("FIGURE TCP transfer of %d bytes with eth_mtu 1500 over a 1500-byte underlay in %v: %.0f Mbit/s",
		size, took.Round(time.Millisecond), float64(size)*8/took.Seconds()/1e6)
	for name, d := range map[string]*e2etest.Daemon{"host-a": da, "host-b": db} {
		h := d.HFICounters(t)
		if h["PortXmitDiscards"] != 0 || h["PortRcvErrors"] != 0 {
			t.Errorf("%s: PortXmitDiscards %d, PortRcvErrors %d; want 0", name, h["PortXmitDiscards"], h["PortRcvErrors"])
		}
		if c := d.Counters(t, 0); c["offload_drops"] != 0 {
			t.Errorf("%s: offload_drops %d", name, c["offload_drops"])
		}
	}
}

// TestE2EThreeHostsBroadcast puts three hosts on one switch: ARP (broadcast)
// and IPv6 neighbour discovery (multicast) must reach both other hosts, and a
// sender must never get its own multicast back.
func TestE2EThreeHostsBroadcast(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	lids := []int{lidA, lidB, lidC}
	var nss []*nstest.NS
	var members []nstest.Member
	for i := range lids {
		ns := nstest.NewNS(t, fmt.Sprintf("h%d", i+1))
		nss = append(nss, ns)
		members = append(members, nstest.Member{NS: ns, Addr: pfx(fmt.Sprintf("10.201.0.%d/24", i+1))})
	}
	seg := nstest.Bridge(t, 1500, members...)
	capture := startCapture(t, nss[0], seg.Ifaces[0])
	var ds []*e2etest.Daemon
	for i, lid := range lids {
		peers := map[int]string{}
		for j, other := range lids {
			if j != i {
				peers[other] = fmt.Sprintf("10.201.0.%d:4793", j+1)
			}
		}
		ds = append(ds, e2etest.Start(t, nss[i], e2etest.Host{
			Name: fmt.Sprintf("h%d", i+1), LID: lid, Listen: fmt.Sprintf("10.201.0.%d:4793", i+1),
			Peers:  peers,
			Groups: map[int][]int{mcRed: lids},
			VNICs: []e2etest.VNIC{{VPort: 0, VESW: 1, PKey: 0x8001, Mcast: mcRed, IfName: "vnic0",
				Addrs: []string{fmt.Sprintf("192.168.110.%d/24", i+1), fmt.Sprintf("fd00:110::%d/64", i+1)}}},
		}))
	}
	e2etest.Ping(t, nss[0], "192.168.110.2")
	e2etest.Ping(t, nss[0], "192.168.110.3")
	e2etest.Ping(t, nss[1], "192.168.110.3")
	e2etest.Ping(t, nss[0], "-6", "fd00:110::2")
	e2etest.Ping(t, nss[0], "-6", "fd00:110::3")
	e2etest.Ping(t, nss[2], "-6", "fd00:110::2")

	// Host 1's underlay: datagrams it receives never carry its own SLID, and
	// it sent its broadcasts to both others.
	pkts := capture.stop(t)
	sentMcast := map[string]bool{}
	for _, c := range pkts {
		p := c.payload
		if len(p) < 16 {
			continue
		}
		slid := uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2]&0x0F)<<16 | uint32(p[9]&0x0F)<<20
		dlid := uint32(p[4]) | uint32(p[5])<<8 | uint32(p[6]&0x0F)<<16 | uint32(p[9]>>4)<<20
		if !c.outgoing && slid == lidA {
			t.Fatalf("host 1 received a packet with its own SLID %#x (DLID %#x)", slid, dlid)
		}
		if c.outgoing && dlid == mcRed {
			sentMcast[fmt.Sprint(len(p))] = true
		}
	}
	if len(sentMcast) == 0 {
		t.Error("host 1 sent no multicast packets (ARP/ND) on the underlay")
	}
	for i, d := range ds {
		c := d.Counters(t, 0)
		if c["rx_mcastbcast"] == 0 {
			t.Errorf("host %d received no broadcast or multicast frame", i+1)
		}
		if h := d.HFICounters(t); h["PortRcvErrors"] != 0 {
			t.Errorf("host %d: HFI receive errors %d", i+1, h["PortRcvErrors"])
		}
	}
}
