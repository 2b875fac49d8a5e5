package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/vnicd/ctl"
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

// vnicSpec is one VNIC of a generated host config.
type vnicSpec struct {
	vport   int
	vesw    int
	pkey    int
	mcast   int
	ifname  string
	netns   string
	addrs   []string
	ethMTU  int
	cfgDrop bool
}

// hostSpec is a generated vnicd config.
type hostSpec struct {
	name    string
	lid     int
	listen  string
	peers   map[int]string // LID -> address
	groups  map[int][]int
	vnics   []vnicSpec
	socket  string
	verbose bool
	// busyPoll is node.busy_poll ("" leaves it out).
	busyPoll string
	// queues is node.queues (0 leaves it out).
	queues int
}

func (h hostSpec) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node:\n  name: %s\n  lid: %#x\n  listen: %q\n", h.name, h.lid, h.listen)
	if h.busyPoll != "" {
		fmt.Fprintf(&b, "  busy_poll: %s\n", h.busyPoll)
	}
	if h.queues != 0 {
		fmt.Fprintf(&b, "  queues: %d\n", h.queues)
	}
	if len(h.peers) > 0 {
		b.WriteString("peers:\n")
		for lid, addr := range h.peers {
			fmt.Fprintf(&b, "  - {lid: %#x, address: %q}\n", lid, addr)
		}
	}
	if len(h.groups) > 0 {
		b.WriteString("multicast:\n")
		for lid, members := range h.groups {
			var ms []string
			for _, m := range members {
				ms = append(ms, fmt.Sprintf("%#x", m))
			}
			fmt.Fprintf(&b, "  - {lid: %#x, members: [%s]}\n", lid, strings.Join(ms, ", "))
		}
	}
	fmt.Fprintf(&b, "control:\n  socket: %q\nvnics:\n", h.socket)
	for _, v := range h.vnics {
		state := "forwarding"
		if v.cfgDrop {
			state = "drop_all"
		}
		mtu := v.ethMTU
		if mtu == 0 {
			mtu = 1400
		}
		fmt.Fprintf(&b, "  - vport: %d\n    vesw: {id: %d, pkey: %#x, eth_mtu: %d, mcast_dlid: %#x, config_state: %s}\n",
			v.vport, v.vesw, v.pkey, mtu, v.mcast, state)
		fmt.Fprintf(&b, "    port:\n      ifname: %s\n", v.ifname)
		if v.netns != "" {
			fmt.Fprintf(&b, "      netns: %q\n", v.netns)
		}
		if len(v.addrs) > 0 {
			fmt.Fprintf(&b, "      addresses: [%s]\n", strings.Join(v.addrs, ", "))
		}
	}
	return b.String()
}

// daemon is a vnicd started by a test.
type daemon struct {
	socket string
	cmd    *exec.Cmd
}

// startVnicd writes the config and starts vnicd in ns; it returns once the
// control socket answers.
func startVnicd(t *testing.T, ns *nstest.NS, h hostSpec) *daemon {
	t.Helper()
	d := launchVnicd(t, ns, h)
	if err := d.waitUp(len(h.vnics), 10*time.Second); err != nil {
		t.Fatalf("vnicd %s did not come up: %v\nconfig:\n%s", h.name, err, h.yaml())
	}
	return d
}

// launchVnicd writes the config and starts vnicd in ns.
func launchVnicd(t *testing.T, ns *nstest.NS, h hostSpec) *daemon {
	t.Helper()
	bin := vnicdBinary(t)
	dir := t.TempDir()
	if h.socket == "" {
		h.socket = filepath.Join(dir, "vnicd.sock")
	}
	path := filepath.Join(dir, h.name+".yaml")
	if err := os.WriteFile(path, []byte(h.yaml()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", path}
	if h.verbose {
		args = append(args, "--log-level", "debug")
	}
	cmd, err := ns.Start(context.Background(), bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return &daemon{socket: h.socket, cmd: cmd}
}

// waitUp waits until d's control socket answers with vnics ports, and fails
// early if the process exits.
func (d *daemon) waitUp(vnics int, within time.Duration) error {
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var v []ctl.VNICStatus
		if err = ctl.Call(d.socket, "vnics", nil, &v); err == nil && len(v) == vnics {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d VNICs, want %d", len(v), vnics)
		}
		if d.exited() {
			return fmt.Errorf("vnicd exited (last answer: %v)", err)
		}
	}
	return fmt.Errorf("not up within %v: %v", within, err)
}

// exited reports whether d's process has exited (a zombie, not yet waited
// for), without reaping it: nstest's cleanup waits for it.
func (d *daemon) exited() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// counters returns the named counters of one vport.
func (d *daemon) counters(t *testing.T, vport int) map[string]uint64 {
	t.Helper()
	var sets []ctl.PortCounterSet
	if err := ctl.Call(d.socket, "counters", map[string]int{"vport": vport}, &sets); err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, c := range sets[0].Counters {
		m[c.Name] = c.Value
	}
	return m
}

// hfiCounters returns the HFI's counters.
func (d *daemon) hfiCounters(t *testing.T) map[string]uint64 {
	t.Helper()
	var st ctl.HFIStatus
	if err := ctl.Call(d.socket, "hfi", nil, &st); err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, c := range st.Counters {
		m[c.Name] = c.Value
	}
	return m
}

func ping(t *testing.T, ns *nstest.NS, args ...string) {
	t.Helper()
	out, err := ns.Exec(context.Background(), "ping", append([]string{"-c", "3", "-i", "0.2", "-W", "2"}, args...)...)
	if err != nil {
		t.Fatalf("ping %v from %s: %v", args, ns.Name(), err)
	}
	t.Logf("ping %s from %s: %s", strings.Join(args, " "), ns.Name(), lastLine(out))
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// pairHost is one of two hosts joined by a veth, each with one VNIC, vnic0
// on vesw 1 at addr, and the other (LID peer at other, an endpoint) in its
// directory and in the red multicast group.
func pairHost(name string, lid, peer int, self, other, addr string) hostSpec {
	return hostSpec{
		name: name, lid: lid, listen: self + ":4793",
		peers:  map[int]string{peer: other},
		groups: map[int][]int{mcRed: {lidA, lidB}},
		vnics:  []vnicSpec{{vport: 0, vesw: 1, pkey: 0x8001, mcast: mcRed, ifname: "vnic0", addrs: []string{addr}}},
	}
}

// iperf runs a TCP iperf3 test from client to server's addr and returns the
// received rate in bit/s.
func iperf(t *testing.T, client, server *nstest.NS, addr string, seconds int) float64 {
	t.Helper()
	return iperfStreams(t, client, server, addr, seconds, 1)
}

// iperfStreams is iperf with streams parallel TCP streams (iperf3 -P).
func iperfStreams(t *testing.T, client, server *nstest.NS, addr string, seconds, streams int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+20)*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, "iperf3", "-s", "-1", "-B", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = srv
	type result struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	var r result
	// The server needs a moment to listen: retry a refused connection.
	for i := 0; i < 25; i++ {
		out, err := client.Exec(ctx, "iperf3", "-c", addr, "-t", fmt.Sprint(seconds), "-P", fmt.Sprint(streams), "-J")
		r = result{}
		if jerr := json.Unmarshal(out, &r); jerr != nil {
			t.Fatalf("iperf3 to %s: %v (JSON: %v)", addr, err, jerr)
		}
		if r.Error == "" && err == nil {
			break
		}
		if !strings.Contains(r.Error, "connect") || i == 24 {
			t.Fatalf("iperf3 to %s: %v: %s", addr, err, r.Error)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return r.End.SumReceived.BitsPerSecond
}

func TestE2ETwoHostsTwoSwitches(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ip", "ping", "iperf3")
	a, b := nstest.NewNS(t, "a"), nstest.NewNS(t, "b")
	aBlue, bBlue := nstest.NewNS(t, "ablue"), nstest.NewNS(t, "bblue")
	_, vethB := nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)

	host := func(name string, lid, peer int, self, other string, blueNS *nstest.NS, n int) hostSpec {
		return hostSpec{
			name: name, lid: lid, listen: self + ":4793",
			peers:  map[int]string{peer: other + ":4793"},
			groups: map[int][]int{mcRed: {lidA, lidB}, mcBlue: {lidA, lidB}},
			vnics: []vnicSpec{
				{vport: 0, vesw: 1, pkey: 0x8001, mcast: mcRed, ifname: "vnic0",
					addrs: []string{fmt.Sprintf("192.168.101.%d/24", n), fmt.Sprintf("fd00:101::%d/64", n)}},
				{vport: 1, vesw: 2, pkey: 0x8002, mcast: mcBlue, ifname: "vnic1", netns: blueNS.Path(),
					addrs: []string{fmt.Sprintf("192.168.102.%d/24", n), fmt.Sprintf("fd00:102::%d/64", n)}},
			},
		}
	}
	// Capture the underlay at b from before the first packet.
	capture := startCapture(t, b, vethB)
	da := startVnicd(t, a, host("host-a", lidA, lidB, "10.200.0.1", "10.200.0.2", aBlue, 1))
	db := startVnicd(t, b, host("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1", bBlue, 2))

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
	ping(t, a, "192.168.101.2")
	ping(t, a, "-6", "fd00:101::2")
	ping(t, aBlue, "192.168.102.2")
	ping(t, bBlue, "-6", "fd00:102::1")

	// Isolation: on the blue switch, host b's red address does not answer.
	if _, err := aBlue.Exec(context.Background(), "ip", "addr", "add", "192.168.101.9/24", "dev", "vnic1"); err != nil {
		t.Fatal(err)
	}
	// The ARP requests reach host b's blue port only; its red port sees no
	// frame addressed to it (spontaneous IPv6 multicast on red may come).
	redBefore, blueBefore := db.counters(t, 0), db.counters(t, 1)
	if out, err := aBlue.Exec(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", "vnic1", "192.168.101.2"); err == nil {
		t.Fatalf("isolation broken: red address answered on the blue switch:\n%s", out)
	}
	redAfter, blueAfter := db.counters(t, 0), db.counters(t, 1)
	if redAfter["rx_unicast"] != redBefore["rx_unicast"] || redAfter["tx_unicast"] != redBefore["tx_unicast"] {
		t.Errorf("host b's red port took part: rx_unicast %d -> %d, tx_unicast %d -> %d",
			redBefore["rx_unicast"], redAfter["rx_unicast"], redBefore["tx_unicast"], redAfter["tx_unicast"])
	}
	if blueAfter["rx_mcastbcast"] < blueBefore["rx_mcastbcast"]+2 {
		t.Errorf("host b's blue port did not get the ARP requests: rx_mcastbcast %d -> %d",
			blueBefore["rx_mcastbcast"], blueAfter["rx_mcastbcast"])
	}

	rate := iperf(t, a, b, "192.168.101.2", 3)
	t.Logf("iperf3 TCP across the red switch: %.0f Mbit/s", rate/1e6)
	if rate <= 0 {
		t.Fatal("iperf3 moved nothing")
	}
	for _, d := range []*daemon{da, db} {
		c := d.counters(t, 0)
		if c["tx_packets"] == 0 || c["rx_packets"] == 0 || c["rx_errors"] != 0 || c["tx_dlid_zero"] != 0 {
			t.Errorf("red port counters: tx %d rx %d rx_errors %d tx_dlid_zero %d",
				c["tx_packets"], c["rx_packets"], c["rx_errors"], c["tx_dlid_zero"])
		}
		h := d.hfiCounters(t)
		if h["PortRcvErrors"] != 0 {
			t.Errorf("HFI receive errors: %v", h)
		}
	}
	// The offloads did the work: a's TAP handed over TCP super-frames, cut
	// into eth_mtu frames (the capture below checks each on the wire), and
	// b wrote runs of them to its TAP coalesced.
	ca, cb := da.counters(t, 0), db.counters(t, 0)
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
