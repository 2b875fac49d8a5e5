package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// attackHosts starts hosts a and b in static mode on a veth underlay
// (10.200.0.1 and .2), one red VNIC each (192.168.101.1 and .2), and returns
// the namespaces, the veth ends and the daemons. Each host sees the other
// at its address:4793 unless the test sets up what runs in between first
// (between, given the namespaces and veth ends, returns the endpoints a
// and b are to use for each other).
func attackHosts(t *testing.T, prefix string, between func(a, b *nstest.NS, vethA, vethB string) (bForA, aForB string)) (a, b *nstest.NS, vethA, vethB string, da, db *e2etest.Daemon) {
	t.Helper()
	return attackHostsQ(t, prefix, 0, between)
}

// attackHostsQ is attackHosts with node.Queues set to queues on both hosts
// (0 leaves it out).
func attackHostsQ(t *testing.T, prefix string, queues int, between func(a, b *nstest.NS, vethA, vethB string) (bForA, aForB string)) (a, b *nstest.NS, vethA, vethB string, da, db *e2etest.Daemon) {
	t.Helper()
	a, b = nstest.NewNS(t, prefix+"a"), nstest.NewNS(t, prefix+"b")
	vethA, vethB = nstest.Veth(t, a, b, pfx("10.200.0.1/24"), pfx("10.200.0.2/24"), 1500)
	bForA, aForB := "10.200.0.2:4793", "10.200.0.1:4793"
	if between != nil {
		bForA, aForB = between(a, b, vethA, vethB)
	}
	host := func(name string, lid, peer int, self, other string, n int) e2etest.Host {
		h := pairHost(name, lid, peer, self, other, fmt.Sprintf("192.168.101.%d/24", n))
		h.VNICs[0].EthMTU = attackMTU
		h.Queues = queues
		return h
	}
	da = e2etest.Start(t, a, host("host-a", lidA, lidB, "10.200.0.1", bForA, 1))
	db = e2etest.Start(t, b, host("host-b", lidB, lidA, "10.200.0.2", aForB, 2))
	return a, b, vethA, vethB, da, db
}

// floodKind is one way the flood makes a datagram: gen returns it and the
// UDP source port it is sent from (4793, host a's, unless the kind is about
// the source); fates are the drop fates the kind may end in.
type floodKind struct {
	name  string
	fates []string
	gen   func(r *rand.Rand) ([]byte, uint16)
}

// floodKinds returns the flood's datagram kinds, built around good, a valid
// VNIC packet from a to b's red port: random bytes, mutations that break one
// check each (without resealing, so the ICRC catches them, or resealed with
// a correct ICRC, so a later check must), and host a's packets from another
// port.
func floodKinds(good []byte) []floodKind {
	mutate := func(f func(r *rand.Rand, p []byte)) func(r *rand.Rand) ([]byte, uint16) {
		return func(r *rand.Rand) ([]byte, uint16) {
			p := append([]byte(nil), good...)
			f(r, p)
			return reseal(p), 4793
		}
	}
	h := func(p []byte) encap.Header16B { return encap.Header16B(p) }
	randBytes := func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	// randNot returns a random value below n that is none of not.
	randNot := func(r *rand.Rand, n uint32, not ...uint32) uint32 {
		for {
			v := r.Uint32N(n)
			ok := true
			for _, x := range not {
				ok = ok && v != x
			}
			if ok {
				return v
			}
		}
	}
	return []floodKind{
		{"random", []string{fateMalformed, fateBadICRC}, func(r *rand.Rand) ([]byte, uint16) {
			return randBytes(r, r.IntN(1473)), 4793 // 1472: the most a 1500-byte underlay carries unfragmented
		}},
		{"bitflip", []string{fateMalformed, fateBadICRC}, func(r *rand.Rand) ([]byte, uint16) {
			p := append([]byte(nil), good...)
			for range 1 + r.IntN(3) {
				i := r.IntN(len(p) - 1) // the tail byte is outside the ICRC
				p[i] ^= 1 << r.IntN(8)
			}
			return p, 4793
		}},
		{"truncate", []string{fateMalformed}, func(r *rand.Rand) ([]byte, uint16) {
			return append([]byte(nil), good[:r.IntN(len(good))]...), 4793
		}},
		{"extend", []string{fateMalformed}, func(r *rand.Rand) ([]byte, uint16) {
			return append(append([]byte(nil), good...), randBytes(r, 1+r.IntN(64))...), 4793
		}},
		{"bad_len", []string{fateMalformed}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetLen(int(randNot(r, 2048, uint32(len(p)/8))))
		})},
		{"bad_l2", []string{fateMalformed}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetL2([]uint8{0, 1, 3}[r.IntN(3)])
		})},
		{"unknown_l4", []string{fateUnknownL4}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetL4(uint8(randNot(r, 256, encap.L4Ethernet, encap.L4FabricMgt)))
		})},
		{"bad_pkey", []string{fateBadPKey}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetPKey(encap.PKey(randNot(r, 1<<16, 0x8001)))
		})},
		{"bad_vesw", []string{fateBadVESW}, mutate(func(r *rand.Rand, p []byte) {
			binary.LittleEndian.PutUint16(p[18:], uint16(2+r.IntN(0xFFE))) // 12 bits, not 0 or 1
		})},
		{"bad_dlid", []string{fateBadDLID}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetDLID(randNot(r, 1<<24, lidB, mcRed, encap.LID16BPermissive))
		})},
		{"bad_slid", []string{fateBadSource}, mutate(func(r *rand.Rand, p []byte) {
			h(p).SetSLID(randNot(r, 1<<24, lidA))
		})},
		{"bad_port", []string{fateBadSource}, func(r *rand.Rand) ([]byte, uint16) {
			return append([]byte(nil), good...), uint16(randNot(r, 1<<16, 0, 4793))
		}},
		{"mgmt", []string{fateUntrusted}, func(r *rand.Rand) ([]byte, uint16) {
			mad := randBytes(r, 8*(3+r.IntN(30)))
			p, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: lidA, DLID: lidB, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
			if err != nil {
				panic(err)
			}
			return p, 4793
		}},
		{"mgmt_bad", []string{fateMgmtBad}, func(r *rand.Rand) ([]byte, uint16) {
			// A tail whose pad count is not the 3 of every MAD, or a MAD
			// shorter than its header.
			p, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: lidA, DLID: lidB, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1},
				randBytes(r, 8*r.IntN(3)))
			if err != nil {
				panic(err)
			}
			if r.IntN(2) == 0 {
				p[len(p)-1] = 0x40 | byte([]int{0, 1, 2, 4, 5, 6, 7}[r.IntN(7)])
			}
			return p, 4793
		}},
		{"bad_tail", []string{fateBadTail}, func(r *rand.Rand) ([]byte, uint16) {
			// 24 bytes with L4 0x78: no pad count leaves room for the vesw_id.
			p := make([]byte, 24)
			copy(p, good[:16])
			h(p).SetLen(3)
			p[23] = 0x40 | byte(r.IntN(8))
			return reseal(p), 4793
		}},
		{"runt", []string{fateRunt}, func(r *rand.Rand) ([]byte, uint16) {
			return rawVNIC(good, good[encap.VNICHeaderLen:encap.VNICHeaderLen+14+r.IntN(encap.MinFrameLen-14)]), 4793
		}},
		{"oversize", []string{fateOversize}, func(r *rand.Rand) ([]byte, uint16) {
			// Longer than eth_mtu+18, short enough for the underlay.
			f := testFrame(encap.MACForLID(lidB, 1), attackMTU+19+r.IntN(1447-attackMTU-19+1))
			return rawVNIC(good, f), 4793
		}},
	}
}

// rawUDP sends UDP datagrams with any source port from host a's address,
// through a raw IPv4 socket (IPPROTO_RAW: it sends only, and receives
// nothing). Host a's vnicd holds a's fabric port, so spoofing is how the
// flood's datagrams come from host a's endpoint.
type rawUDP struct {
	fd       int
	src, dst [4]byte
	buf      []byte
}

func newRawUDP(t *testing.T, ns *nstest.NS, src, dst [4]byte) *rawUDP {
	t.Helper()
	var fd int
	if err := ns.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		return err
	}); err != nil {
		t.Fatalf("raw socket in %s: %v", ns.Name(), err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &rawUDP{fd: fd, src: src, dst: dst, buf: make([]byte, 65536)}
}

// send sends payload from sport to dport. Kernel drops on the way out are
// not errors here (the socket has no IP_RECVERR); the veth counts them.
func (s *rawUDP) send(payload []byte, sport, dport uint16) error {
	n := 28 + len(payload)
	b := s.buf[:n]
	be := binary.BigEndian
	b[0], b[1] = 0x45, 0
	be.PutUint16(b[2:], uint16(n))
	be.PutUint32(b[4:], 0x4000) // id 0: the kernel fills it in; DF
	b[8], b[9] = 64, unix.IPPROTO_UDP
	be.PutUint16(b[10:], 0) // the kernel fills in the header checksum
	copy(b[12:], s.src[:])
	copy(b[16:], s.dst[:])
	u := b[20:]
	be.PutUint16(u[0:], sport)
	be.PutUint16(u[2:], dport)
	be.PutUint16(u[4:], uint16(8+len(payload)))
	be.PutUint16(u[6:], 0)
	copy(u[8:], payload)
	be.PutUint16(u[6:], udpChecksum(s.src, s.dst, u))
	return unix.Sendto(s.fd, b, 0, &unix.SockaddrInet4{Addr: s.dst})
}

// udpChecksum is RFC 768's checksum of u (header with a zero checksum and
// payload) under the IPv4 pseudo-header.
func udpChecksum(src, dst [4]byte, u []byte) uint16 {
	pseudo := []byte{0, unix.IPPROTO_UDP, byte(len(u) >> 8), byte(len(u))}
	if c := hfitest.InetChecksum(src[:], dst[:], pseudo, u); c != 0 {
		return c
	}
	return 0xFFFF
}

// kernelStats reads the SNMP counters (/proc/net/snmp, "Udp:InErrors" and
// so on) of ns.
func kernelStats(t *testing.T, ns *nstest.NS) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	err := ns.Do(func() error {
		// thread-self: /proc/net follows the thread group leader's namespace,
		// and only this thread is in ns.
		f, err := os.Open("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		defer f.Close()
		var names []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			proto, rest, _ := strings.Cut(sc.Text(), ": ")
			fields := strings.Fields(rest)
			if len(fields) > 0 && fields[0][0] >= 'A' && fields[0][0] <= 'Z' {
				names = fields
				continue
			}
			for i, v := range fields {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && i < len(names) && n >= 0 {
					m[proto+":"+names[i]] = uint64(n)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("SNMP counters of %s: %v", ns.Name(), err)
	}
	return m
}

// linkDrops returns the dropped counters (rx and tx) of a link.
func linkDrops(t *testing.T, ns *nstest.NS, name string) uint64 {
	t.Helper()
	l, err := ns.Netlink().LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	s := l.Attrs().Statistics
	return s.RxDropped + s.TxDropped
}

// floodResult is what the flood did.
type floodResult struct {
	sent    int
	byQueue [2]int // datagrams sent to the HFI's port, by the queue of two that steers them
	byKind  map[string]int
	byFate  map[string]uint64
	took    time.Duration
	capped  bool   // stopped by the time cap before sending all
	failure string // a kind made a datagram outside its fates, or a send failed
}

// steerQueueOfTwo is the queue of a group of two (node.Queues 2) that the
// group's steering program gives datagram p: for a VNIC packet (L4 0x78,
// byte 8) its entropy's low byte (byte 12) mod 2, for any other the first.
func steerQueueOfTwo(p []byte) int {
	if len(p) > 12 && p[8] == encap.L4Ethernet {
		return int(p[12]) % 2
	}
	return 0
}

// flood sends n datagrams of the kinds, drawn at random, to b's HFI port at
// about pps, in bursts; it stops after limit, or when stop is closed,
// whatever it has sent. Each datagram's fate comes from the oracle
// attackFate; a datagram the oracle would deliver is drawn again.
func flood(s *rawUDP, kinds []floodKind, seed uint64, n, pps int, limit time.Duration, stop <-chan struct{}) floodResult {
	r := rand.New(rand.NewPCG(seed, seed^0x6f706176))
	res := floodResult{byKind: map[string]int{}, byFate: map[string]uint64{}}
	start := time.Now()
	const burst = 32
	for res.sent < n {
		select {
		case <-stop:
			res.failure = "stopped"
			res.took = time.Since(start)
			return res
		default:
		}
		if time.Since(start) > limit {
			res.capped = true
			break
		}
		for range min(burst, n-res.sent) {
			k := kinds[r.IntN(len(kinds))]
			var p []byte
			var port uint16
			var fate string
			for range 100 {
				p, port = k.gen(r)
				if fate = attackFate(p, port == 4793); fate != fateDeliver {
					break
				}
			}
			ok := false
			for _, f := range k.fates {
				ok = ok || f == fate
			}
			if !ok {
				res.failure = fmt.Sprintf("kind %s made a datagram with fate %s (% x)", k.name, fate, p[:min(len(p), 32)])
				res.took = time.Since(start)
				return res
			}
			if err := s.send(p, port, 4793); err != nil {
				res.failure = fmt.Sprintf("send: %v", err)
				res.took = time.Since(start)
				return res
			}
			res.sent++
			if port == 4793 {
				res.byQueue[steerQueueOfTwo(p)]++
			}
			res.byKind[k.name]++
			res.byFate[fate]++
		}
		// Pace: sleep until the schedule catches up with what was sent. The
		// pause is the flood's rate, not a synchronisation.
		if ahead := time.Duration(float64(res.sent)/float64(pps)*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	res.took = time.Since(start)
	return res
}

var pingStatsRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// TestE2EGarbageFlood blasts random and mutated datagrams at host b's HFI
// port while ping and iperf3 cross the red switch: vnicd keeps running and
// forwarding, and every datagram is either counted under the drop its
// oracle predicts or dropped by the kernel before vnicd saw it. It runs
// with one queue and with two (node.Queues), where the flood reaches both
// queues' sockets through the group's steering program.
func TestE2EGarbageFlood(t *testing.T) {
	e2etest.Require(t, "ip", "ping", "iperf3")
	for _, queues := range []int{1, 2} {
		t.Run(fmt.Sprintf("queues=%d", queues), func(t *testing.T) { testGarbageFlood(t, queues) })
	}
}

func testGarbageFlood(t *testing.T, queues int) {
	count := envInt(t, "OPAVNIC_FLOOD_PACKETS", 20000)
	pps := envInt(t, "OPAVNIC_FLOOD_PPS", 10000)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OPAVNIC_FLOOD_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("OPAVNIC_FLOOD_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("flood: %d datagrams at about %d/s, seed %d (OPAVNIC_FLOOD_PACKETS, OPAVNIC_FLOOD_PPS, OPAVNIC_FLOOD_SEED)", count, pps, seed)

	a, b, vethA, vethB, _, db := attackHostsQ(t, fmt.Sprintf("gf%d", queues), queues, nil)
	// A permanent neighbour entry: no datagram waits for (or is dropped by)
	// address resolution on its way to b.
	lb, err := b.Netlink().LinkByName(vethB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(context.Background(), "ip", "neigh", "replace", "10.200.0.2", "lladdr",
		lb.Attrs().HardwareAddr.String(), "dev", vethA, "nud", "permanent"); err != nil {
		t.Fatal(err)
	}
	e2etest.Ping(t, a, "192.168.101.2")
	rateBefore := e2etest.Iperf(t, a, b, "192.168.101.2", 3, 1)
	t.Logf("FIGURE flood: iperf3 without flood %.0f Mbit/s", rateBefore/1e6)

	// With two queues the base packet's entropy is odd, so that the VNIC
	// kinds built on it go to the second queue and the others (management,
	// other L4 types, runts) to the first.
	var entropy uint16
	if queues > 1 {
		entropy = 1
	}
	good := vnicPacket(t, testFrame(encap.MACForLID(lidB, 1), 98), encap.VNICParams{SLID: lidA, DLID: lidB, PKey: 0x8001, VESWID: 1,
		Entropy: entropy})
	if f := attackFate(good, true); f != fateDeliver {
		t.Fatalf("the flood's base packet has fate %s", f)
	}
	kinds := floodKinds(good)
	raw := newRawUDP(t, a, [4]byte{10, 200, 0, 1}, [4]byte{10, 200, 0, 2})

	// Before: nothing in flight (iperf3 is done, ping is done).
	snapB, snapA := kernelStats(t, b), kernelStats(t, a)
	linkBefore := linkDrops(t, a, vethA) + linkDrops(t, b, vethB)
	before := fateCounters(t, db)
	queuesBefore := db.HFICounters(t)

	secs := min(max((count+pps-1)/pps, 2), 30)
	limit := time.Duration(3*count/pps+10) * time.Second
	// The flood and the ping run beside iperf3 in goroutines of their own;
	// if the test ends early, its cleanup stops them and waits for them
	// before the raw socket is closed and the namespaces go.
	floodDone, pingDone := make(chan floodResult, 1), make(chan []byte, 1)
	stop, finished := make(chan struct{}), make(chan struct{}, 2)
	pingCtx, cancelPing := context.WithTimeout(context.Background(), time.Duration(secs+20)*time.Second)
	t.Cleanup(func() {
		close(stop)
		cancelPing()
		<-finished
		<-finished
	})
	go func() {
		defer func() { finished <- struct{}{} }()
		floodDone <- flood(raw, kinds, seed, count, pps, limit, stop)
	}()
	go func() {
		defer func() { finished <- struct{}{} }()
		out, _ := a.Exec(pingCtx, "ping", "-c", fmt.Sprint(secs*20), "-i", "0.05", "-W", "1", "192.168.101.2")
		pingDone <- out
	}()
	rateDuring := e2etest.Iperf(t, a, b, "192.168.101.2", secs, 1)
	pingOut := <-pingDone
	res := <-floodDone
	if res.failure != "" {
		t.Fatal(res.failure)
	}
	t.Logf("FIGURE flood: sent %d datagrams in %v: %.0f pps (capped %v); by kind %v",
		res.sent, res.took.Round(time.Millisecond), float64(res.sent)/res.took.Seconds(), res.capped, res.byKind)
	t.Logf("FIGURE flood: iperf3 with flood %.0f Mbit/s (without %.0f Mbit/s)", rateDuring/1e6, rateBefore/1e6)
	if rateDuring <= 0 {
		t.Error("iperf3 moved nothing during the flood")
	}
	m := pingStatsRE.FindStringSubmatch(string(pingOut))
	if m == nil || m[2] == "0" {
		t.Errorf("ping during the flood got no reply:\n%s", pingOut)
	} else {
		t.Logf("FIGURE flood: ping during flood %s/%s replies", m[2], m[1])
	}

	// vnicd is alive, answers, and forwards.
	if err := unix.Kill(db.Cmd.Process.Pid, 0); err != nil {
		t.Fatalf("host b's vnicd is gone: %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", db.Cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if st := db.HFIStatus(t); st.State != "Active" {
		t.Errorf("host b's HFI state %s after the flood", st.State)
	}
	e2etest.Ping(t, a, "192.168.101.2")

	// The accounting. Every flood datagram either reached vnicd, which
	// counted it under exactly one drop fate, or was dropped by the kernel
	// on the way: at a's or b's veth, or at b's UDP socket (InErrors, which
	// includes RcvbufErrors). The kernel's counters also count drops of the
	// ping and iperf3 traffic, which ran meanwhile, so they bound the flood's
	// kernel drops from above: sent == counted exactly when they are zero.
	// Wait until vnicd has read what is queued: the counts add up and stand
	// still.
	var counted, kernel uint64
	var delta map[string]uint64
	var snapB2, snapA2 map[string]uint64
	waitfor.Poll(5*time.Second, func() bool {
		prev := counted
		after := fateCounters(t, db)
		delta = map[string]uint64{}
		counted = 0
		for _, f := range dropFates {
			delta[f] = after[f] - before[f]
			counted += delta[f]
		}
		delta["PortRcvErrors"] = after["PortRcvErrors"] - before["PortRcvErrors"]
		delta["vnic_rx_no_port"] = after["vnic_rx_no_port"] - before["vnic_rx_no_port"]
		snapB2, snapA2 = kernelStats(t, b), kernelStats(t, a)
		kernel = snapB2["Udp:InErrors"] - snapB["Udp:InErrors"] + linkDrops(t, a, vethA) + linkDrops(t, b, vethB) - linkBefore
		return counted+kernel >= uint64(res.sent) && counted == prev
	})
	t.Logf("FIGURE flood: counted %d + kernel-dropped %d (b Udp InErrors %d RcvbufErrors %d, veth drops %d; a Ip OutDiscards %d) vs sent %d",
		counted, kernel, snapB2["Udp:InErrors"]-snapB["Udp:InErrors"], snapB2["Udp:RcvbufErrors"]-snapB["Udp:RcvbufErrors"],
		kernel-(snapB2["Udp:InErrors"]-snapB["Udp:InErrors"]), snapA2["Ip:OutDiscards"]-snapA["Ip:OutDiscards"], res.sent)
	// vnicd's own count of the kernel's drops at its sockets: b runs no
	// other UDP receiver, so it holds every receive-buffer drop there and
	// is part of b's Udp InErrors.
	var sockDrops uint64
	after := db.HFICounters(t)
	for q := range queues {
		name := fmt.Sprintf("queue%d_rx_kernel_drops", q)
		if _, ok := after[name]; !ok {
			t.Fatalf("host b's hfi counters have no %s", name)
		}
		sockDrops += after[name] - queuesBefore[name]
	}
	inErr, rcvbuf := snapB2["Udp:InErrors"]-snapB["Udp:InErrors"], snapB2["Udp:RcvbufErrors"]-snapB["Udp:RcvbufErrors"]
	t.Logf("FIGURE flood: host b's sockets: rx_kernel_drops %d (Udp InErrors %d, RcvbufErrors %d)", sockDrops, inErr, rcvbuf)
	if sockDrops < rcvbuf || sockDrops > inErr {
		t.Errorf("host b's queues count %d kernel drops at their sockets; the kernel counted %d receive-buffer drops and %d UDP input errors",
			sockDrops, rcvbuf, inErr)
	}
	var line []string
	for _, f := range dropFates {
		line = append(line, fmt.Sprintf("%s=%d/%d", f, delta[f], res.byFate[f]))
		// Per fate: no more than sent, and no fewer than sent less the
		// kernel's drops (which could have hit any fate).
		if delta[f] > res.byFate[f] || delta[f]+kernel < res.byFate[f] {
			t.Errorf("%s rose by %d; the flood sent %d of that fate and the kernel dropped %d datagrams", f, delta[f], res.byFate[f], kernel)
		}
		if res.byFate[f] > 100 && delta[f] == 0 {
			t.Errorf("%s did not rise (the flood sent %d of that fate)", f, res.byFate[f])
		}
	}
	t.Logf("FIGURE flood: counter rise/sent by fate: %s", strings.Join(line, " "))
	if counted > uint64(res.sent) || counted+kernel < uint64(res.sent) {
		t.Errorf("counted %d drops and the kernel %d, for %d datagrams sent", counted, kernel, res.sent)
	}
	if kernel == 0 && counted != uint64(res.sent) {
		t.Errorf("no kernel drops, yet counted %d drops for %d datagrams sent", counted, res.sent)
	}
	t.Logf("FIGURE flood: exact accounting (sent == counted, no kernel drops): %v", kernel == 0 && counted == uint64(res.sent))
	if queues > 1 {
		// Every flood datagram is a send of its own, steered by its own
		// bytes: each queue read at least the flood datagrams steered to it
		// (iperf3's and ping's add to one), and none is another queue's.
		c := db.HFICounters(t)
		t.Logf("FIGURE flood (queues %d): host b's queues read %d and %d datagrams; the flood steered %d and %d to them",
			queues, c["queue0_rx_packets"]-queuesBefore["queue0_rx_packets"],
			c["queue1_rx_packets"]-queuesBefore["queue1_rx_packets"], res.byQueue[0], res.byQueue[1])
		for q := range 2 {
			name := fmt.Sprintf("queue%d_rx_packets", q)
			if n := c[name] - queuesBefore[name]; n < uint64(res.byQueue[q]) || res.byQueue[q] < res.sent/20 {
				t.Errorf("host b's queue %d read %d datagrams during the flood, which steered %d of %d to it",
					q, n, res.byQueue[q], res.sent)
			}
			if n := c[fmt.Sprintf("queue%d_rx_misrouted", q)]; n != 0 {
				t.Errorf("host b's queue %d read %d packets of another queue", q, n)
			}
		}
	}
	// Overlaps between counters, which the sum above counts once: every
	// HFI-level drop is also in PortRcvErrors, and a packet for a vesw with
	// no port is counted both by the engine (vnic_rx_no_port) and, charged to
	// vport 0, as rx_bad_veswid. Legitimate traffic adds to neither.
	var hfiLevel uint64
	for f := range hfiFates {
		hfiLevel += delta[f]
	}
	if delta["PortRcvErrors"] != hfiLevel {
		t.Errorf("PortRcvErrors rose by %d, the HFI's drop reasons by %d", delta["PortRcvErrors"], hfiLevel)
	}
	if delta["vnic_rx_no_port"] != delta[fateBadVESW] {
		t.Errorf("vnic_rx_no_port rose by %d, rx_bad_veswid by %d", delta["vnic_rx_no_port"], delta[fateBadVESW])
	}
	var v []ctl.VNICStatus
	if err := ctl.Call(db.Socket, ctl.CmdVNICs, nil, &v); err != nil || len(v) != 1 || v[0].OperState != "FORWARDING" {
		t.Errorf("host b's VNICs after the flood: %+v (%v)", v, err)
	}
}

// tcpTransfer sends size bytes of seeded random data over TCP from client to
// a listener at addr (host:port) in server, through Go sockets opened inside
// the namespaces, and checks that the SHA-256 of what arrived is that of
// what was sent. It returns how long the transfer took; limit bounds it.
func tcpTransfer(t *testing.T, client, server *nstest.NS, addr string, size int64, seed uint64, limit time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(limit)
	var ln *net.TCPListener
	if err := server.Do(func() error {
		l, err := net.Listen("tcp4", addr)
		if err == nil {
			ln = l.(*net.TCPListener)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		sum []byte
		err error
	}
	got, done := make(chan result, 1), make(chan struct{})
	defer func() {
		ln.Close()
		<-done // the receiver ends once its listener or connection is closed
	}()
	go func() {
		defer close(done)
		_ = ln.SetDeadline(deadline)
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(deadline)
		h := sha256.New()
		n, err := io.Copy(h, c)
		got <- result{n: n, sum: h.Sum(nil), err: err}
	}()
	var c net.Conn
	if err := client.Do(func() (err error) {
		d := net.Dialer{Deadline: deadline}
		c, err = d.Dial("tcp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	start := time.Now()
	h := sha256.New()
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	n, err := io.Copy(io.MultiWriter(c, h), io.LimitReader(rand.NewChaCha8(key), size))
	if err != nil {
		t.Fatalf("sending after %d of %d bytes: %v", n, size, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-got // bounded by the deadline
	took := time.Since(start)
	if r.err != nil || r.n != size || !bytes.Equal(r.sum, h.Sum(nil)) {
		t.Fatalf("received %d of %d bytes (%v), SHA-256 %x; sent %x", r.n, size, r.err, r.sum, h.Sum(nil))
	}
	t.Logf("transfer: %d bytes, SHA-256 %x on both ends", size, r.sum)
	return took
}

// faultyTransfer runs the checks of an underlay that loses, duplicates,
// delays and reorders: a ping answers within a bounded time, a TCP transfer
// of OPAVNIC_NETEM_BYTES arrives intact, both daemons still run and serve.
func faultyTransfer(t *testing.T, tag string, a, b *nstest.NS, da, db *e2etest.Daemon) {
	t.Helper()
	size := envInt(t, "OPAVNIC_NETEM_BYTES", 4<<20)
	took := a.PingWithin(t, "192.168.101.2", 20*time.Second)
	t.Logf("FIGURE %s: first ping answered after %v", tag, took.Round(time.Millisecond))
	// A liveness bound, not a performance one: a minute plus 16 KiB/s.
	limit := time.Minute + time.Duration(size/(16<<10))*time.Second
	took = tcpTransfer(t, a, b, "192.168.101.2:5301", int64(size), uint64(time.Now().UnixNano()), limit)
	t.Logf("FIGURE %s: TCP transfer of %d bytes in %v: %.2f Mbit/s", tag, size, took.Round(time.Millisecond),
		float64(size)*8/took.Seconds()/1e6)
	for name, d := range map[string]*e2etest.Daemon{"host-a": da, "host-b": db} {
		var v []ctl.VNICStatus
		if err := ctl.Call(d.Socket, ctl.CmdVNICs, nil, &v); err != nil || len(v) != 1 || v[0].OperState != "FORWARDING" {
			t.Errorf("%s: VNICs after the transfer: %+v (%v)", name, v, err)
		}
		if err := unix.Kill(d.Cmd.Process.Pid, 0); err != nil {
			t.Errorf("%s: vnicd gone: %v", name, err)
		}
		c, h := d.Counters(t, 0), d.HFICounters(t)
		t.Logf("FIGURE %s: %s rx_packets %d tx_packets %d rx_errors %d PortRcvErrors %d"+
			" tx_tso_superframes %d tx_tso_segments %d rx_coalesced %d", tag, name,
			c["rx_packets"], c["tx_packets"], c["rx_errors"], h["PortRcvErrors"],
			c["tx_tso_superframes"], c["tx_tso_segments"], c["rx_coalesced"])
		if c["offload_drops"] != 0 {
			t.Errorf("%s: offload_drops %d", name, c["offload_drops"])
		}
	}
	// The transfer went with the offloads on: a's TAP handed over TCP
	// super-frames, which vnicd cut into eth_mtu frames.
	if c := da.Counters(t, 0); c["tx_tso_segments"] <= c["tx_tso_superframes"] || c["tx_tso_superframes"] == 0 {
		t.Errorf("host-a sent the transfer without TSO: tx_tso_superframes %d tx_tso_segments %d",
			c["tx_tso_superframes"], c["tx_tso_segments"])
	}
}

// TestE2ENetem puts netem on both ends of the underlay veth (20 ms delay,
// 25% of packets reordered, 1% lost, 1% duplicated, each way) and moves data
// over TCP across the red switch.
func TestE2ENetem(t *testing.T) {
	e2etest.Require(t, "ip", "tc")
	netem := []string{"delay", "20ms", "reorder", "25%", "50%", "loss", "1%", "duplicate", "1%"}
	a, b, vethA, vethB, da, db := attackHosts(t, "ne", func(a, b *nstest.NS, vethA, vethB string) (string, string) {
		for _, l := range []struct {
			ns  *nstest.NS
			dev string
		}{{a, vethA}, {b, vethB}} {
			out, err := l.ns.Exec(context.Background(), "tc", append([]string{"qdisc", "add", "dev", l.dev, "root", "netem"}, netem...)...)
			if err != nil && (bytes.Contains(out, []byte("Unknown qdisc")) || bytes.Contains(out, []byte("qdisc kind is unknown"))) {
				nstest.RequireKernel(t, "sch_netem (tc qdisc netem)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return "10.200.0.2:4793", "10.200.0.1:4793"
	})
	faultyTransfer(t, "netem", a, b, da, db)
	for _, l := range []struct {
		ns  *nstest.NS
		dev string
	}{{a, vethA}, {b, vethB}} {
		out, err := l.ns.Exec(context.Background(), "tc", "-s", "qdisc", "show", "dev", l.dev)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("FIGURE netem: %s %s: %s", l.ns.Name(), l.dev, strings.Join(strings.Fields(string(out)), " "))
	}
}

// impairRelay stands between hosts a and b as netem would on the wire, for
// kernels without sch_netem: two UDP sockets, forA (host a's endpoint for
// host b) and forB (host b's for host a); what one receives goes on from
// the other, so each host sees the other where its config says. On the way
// each datagram is lost with probability loss, else sent twice with
// probability dup, and each copy is sent at once with probability reorder
// (overtaking the others) or after delay.
type impairRelay struct {
	loss, dup, reorder float64
	delay              time.Duration

	wg                                           sync.WaitGroup
	forwarded, lost, duplicated, reordered, full atomic.Uint64
}

// start opens the relay's sockets in ns at forA and forB and forwards
// between them and the hosts at a and b until the test ends.
func (r *impairRelay) start(t *testing.T, ns *nstest.NS, forA, forB, a, b string, seed uint64) {
	t.Helper()
	var ca, cb *net.UDPConn
	if err := ns.Do(func() (err error) {
		if ca, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(forA))); err != nil {
			return err
		}
		cb, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(forB)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*net.UDPConn{ca, cb} {
		_ = c.SetReadBuffer(4 << 20)
	}
	t.Cleanup(func() {
		ca.Close()
		cb.Close()
		r.wg.Wait()
		t.Logf("FIGURE relay: forwarded %d, lost %d, duplicated %d, sent at once (reordered) %d, queue full %d",
			r.forwarded.Load(), r.lost.Load(), r.duplicated.Load(), r.reordered.Load(), r.full.Load())
	})
	r.wg.Add(2)
	go r.pump(ca, cb, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(b)), seed)
	go r.pump(cb, ca, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(a)), seed+1)
}

// pump forwards what in receives to `to` through out, until in is closed.
// The delayed copies wait in a bounded queue (netem's limit): when it is
// full, the copy is dropped.
func (r *impairRelay) pump(in, out *net.UDPConn, to *net.UDPAddr, seed uint64) {
	defer r.wg.Done()
	type delayed struct {
		p  []byte
		at time.Time
	}
	q := make(chan delayed, 4096)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for d := range q {
			time.Sleep(time.Until(d.at)) // the fault itself: the copy's delay
			_, _ = out.WriteToUDP(d.p, to)
		}
	}()
	defer close(q)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	buf := make([]byte, 65536)
	for {
		n, _, err := in.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if rng.Float64() < r.loss {
			r.lost.Add(1)
			continue
		}
		copies := 1
		if rng.Float64() < r.dup {
			copies = 2
			r.duplicated.Add(1)
		}
		p := append([]byte(nil), buf[:n]...)
		for range copies {
			r.forwarded.Add(1)
			if rng.Float64() < r.reorder {
				r.reordered.Add(1)
				_, _ = out.WriteToUDP(p, to)
				continue
			}
			select {
			case q <- delayed{p, time.Now().Add(r.delay)}:
			default:
				r.full.Add(1)
			}
		}
	}
}

// TestE2EUnderlayRelayFaults is TestE2ENetem's faults made by a relay in
// userspace, so that they are tested where the kernel has no sch_netem: host
// a and host b reach each other only through the relay, in host a's
// namespace.
func TestE2EUnderlayRelayFaults(t *testing.T) {
	e2etest.Require(t, "ip", "ping")
	r := &impairRelay{loss: 0.01, dup: 0.01, reorder: 0.25, delay: 20 * time.Millisecond}
	a, b, _, _, da, db := attackHosts(t, "rl", func(a, b *nstest.NS, _, _ string) (string, string) {
		r.start(t, a, "10.200.0.1:4801", "10.200.0.1:4802", "10.200.0.1:4793", "10.200.0.2:4793", uint64(time.Now().UnixNano()))
		return "10.200.0.1:4801", "10.200.0.1:4802"
	})
	faultyTransfer(t, "relay", a, b, da, db)
	if r.lost.Load() == 0 || r.reordered.Load() == 0 {
		t.Errorf("the relay lost %d and reordered %d datagrams: the faults did not happen", r.lost.Load(), r.reordered.Load())
	}
}
