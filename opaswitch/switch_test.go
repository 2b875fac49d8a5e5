package opaswitch_test

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/opaswitch"
)

// rig is a switch with ports 1..3 cabled to three hosts' transports, on an
// in-memory network, its loop running until the test ends.
type rig struct {
	sw    *opaswitch.Switch
	net   *hfitest.Network
	hosts [4]*hfitest.Transport // by switch port
	mu    sync.Mutex
	smps  [][]byte // what the SMA was handed
	smpIn []int
}

func swEP(port int) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("10.9.0.1"), uint16(5000+port))
}
func hostEP(port int) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("10.9.1.1"), uint16(6000+port))
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{net: hfitest.NewNetwork()}
	var cables []opaswitch.Cable
	for p := 1; p <= 3; p++ {
		cables = append(cables, opaswitch.Cable{Port: p, Transport: r.net.Listen(swEP(p)), Peer: hostEP(p)})
		r.hosts[p] = r.net.Listen(hostEP(p))
	}
	sw, err := opaswitch.New(opaswitch.Config{Name: "leaf1", GUID: 0x1100, NumPorts: 8, Cables: cables,
		SMA: func(pkt []byte, in int) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.smps = append(r.smps, bytes.Clone(pkt))
			r.smpIn = append(r.smpIn, in)
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.sw = sw
	for p := 1; p <= 3; p++ {
		sw.Port(p).SetState(opaswitch.StateActive)
	}
	// LIDs 0x10+p behind port p, and an extended one behind port 3; the
	// switch's own LID 0x100.
	blocks, _ := sw.Tables.LFTBlocks(0, 5)
	for p := 1; p <= 3; p++ {
		blocks[0][0x10+p] = uint8(p)
	}
	blocks[4][0x100%64] = opaswitch.SMAPort
	if err := sw.Tables.SetLFTBlocks(0, blocks); err != nil {
		t.Fatal(err)
	}
	ext, _ := sw.Tables.LFTBlocks(0xC0010/64, 1)
	ext[0][0xC0010%64] = 3
	if err := sw.Tables.SetLFTBlocks(0xC0010/64, ext); err != nil {
		t.Fatal(err)
	}
	if err := sw.Tables.SetLinearFDBTop(0xC0010); err != nil {
		t.Fatal(err)
	}
	// Group 0xF00001: ports 1, 2, 3 and the SMA; group 0xF00002: ports 1 and 2.
	if err := sw.Tables.SetMFTBlock(0, 0, [8]uint64{0, 0b1111, 0b0110}); err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, sw)
	return r
}

// vnicPkt is a VNIC packet from slid to dlid, with a 60-byte frame.
func vnicPkt(t *testing.T, slid, dlid uint32) []byte {
	t.Helper()
	frame := make([]byte, 60)
	for i := range frame {
		frame[i] = byte(i)
	}
	buf := make([]byte, encap.Headroom+len(frame)+encap.Tailroom)
	copy(buf[encap.Headroom:], frame)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, len(frame), &encap.VNICParams{SLID: slid, DLID: dlid, PKey: 0x8001, VESWID: 1})
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// smpPkt is a management packet on SC 15 to dlid.
func smpPkt(t *testing.T, dlid uint32) []byte {
	t.Helper()
	pkt, err := encap.AppendMgmt(nil, &encap.MgmtParams{SLID: 0x11, DLID: dlid, SC: 15, PKey: 0x7FFF}, make([]byte, 256))
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// send sends pkt from the host on port p to the switch.
func (r *rig) send(t *testing.T, p int, pkt []byte) {
	t.Helper()
	if k, err := r.hosts[p].WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: swEP(p)}}); k != 1 {
		t.Fatalf("host %d send: %v", p, err)
	}
}

// recv returns the next packet the host on port p gets, or nil after wait.
func (r *rig) recv(t *testing.T, p int, wait time.Duration) []byte {
	t.Helper()
	msgs := []hfi.Message{{Buf: make([]byte, encap.MaxPacketLen)}}
	for deadline := time.Now().Add(wait); ; {
		k, err := r.hosts[p].TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			if msgs[0].Addr != swEP(p) {
				t.Errorf("host %d got a packet from %v, not its switch port", p, msgs[0].Addr)
			}
			return bytes.Clone(msgs[0].Buf[:msgs[0].N])
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Microsecond) // polling the in-memory host's queue
	}
}

// waitCount waits until c() reaches want, failing after 2 s.
func waitCount(t *testing.T, what string, want uint64, c func() uint64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); c() < want; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, c(), want)
		}
	}
	if got := c(); got != want {
		t.Fatalf("%s: %d, want %d", what, got, want)
	}
}

func TestUnicastForwarding(t *testing.T) {
	r := newRig(t)
	pkt := vnicPkt(t, 0x11, 0x12)
	r.send(t, 1, pkt)
	if got := r.recv(t, 2, 2*time.Second); !bytes.Equal(got, pkt) {
		t.Fatalf("port 2's host got %x, want the packet unchanged", got)
	}
	if !encap.CheckICRC(pkt) {
		t.Fatal("the packet's ICRC is not valid")
	}
	ext := vnicPkt(t, 0x11, 0xC0010)
	r.send(t, 1, ext)
	if got := r.recv(t, 3, 2*time.Second); !bytes.Equal(got, ext) {
		t.Fatalf("the extended LID's packet: port 3's host got %x", got)
	}
	in, out := &r.sw.Port(1).Counters, &r.sw.Port(2).Counters
	if in.RcvPkts.Load() != 2 || out.XmitPkts.Load() != 1 || out.XmitData.Load() != uint64(len(pkt)/8) {
		t.Errorf("counters: port 1 rcv %d, port 2 xmit %d (%d flits)", in.RcvPkts.Load(), out.XmitPkts.Load(), out.XmitData.Load())
	}
}

func TestMulticastForwarding(t *testing.T) {
	r := newRig(t)
	pkt := vnicPkt(t, 0x11, 0xF00001)
	r.send(t, 1, pkt)
	for _, p := range []int{2, 3} {
		if got := r.recv(t, p, 2*time.Second); !bytes.Equal(got, pkt) {
			t.Fatalf("port %d's host got %x, want the group's packet", p, got)
		}
	}
	if got := r.recv(t, 1, 50*time.Millisecond); got != nil {
		t.Error("the packet went back out the port it came in on")
	}
	r.sw.WaitSMA()
	r.mu.Lock()
	n := len(r.smps)
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("the SMA got %d copies of a group it is a member of, want 1", n)
	}
	// Group 2 from port 3, not a member: ports 1 and 2 get it.
	pkt2 := vnicPkt(t, 0x13, 0xF00002)
	r.send(t, 3, pkt2)
	for _, p := range []int{1, 2} {
		if got := r.recv(t, p, 2*time.Second); !bytes.Equal(got, pkt2) {
			t.Fatalf("group 2: port %d's host got %x", p, got)
		}
	}
}

// TestDrops: every packet the switch must not forward is counted where it
// belongs and goes nowhere.
func TestDrops(t *testing.T) {
	r := newRig(t)
	c1, c2 := &r.sw.Port(1).Counters, &r.sw.Port(2).Counters

	// A stranger on port 1's cable.
	stranger := r.net.Listen(netip.MustParseAddrPort("10.9.9.9:7000"))
	pkt := vnicPkt(t, 0x11, 0x12)
	stranger.WriteBatch([]hfi.Message{{Buf: pkt, N: len(pkt), Addr: swEP(1)}})
	waitCount(t, "rcv_foreign", 1, c1.RcvForeign.Load)

	// Malformed: cut short, a wrong length field, not 16B.
	bad := bytes.Clone(pkt)
	bad[7] ^= 0x60 // L2 type
	for _, b := range [][]byte{pkt[:20], pkt[:len(pkt)-8], bad} {
		r.send(t, 1, b)
	}
	waitCount(t, "PortRcvErrors", 3, c1.RcvErrors.Load)

	// No route: a DLID outside the LFT, above LinearFDBTop, an unknown group.
	for _, d := range []uint32{0x30, 0xC0011, 0xF00003, 0} {
		r.send(t, 1, vnicPkt(t, 0x11, d))
	}
	waitCount(t, "PortRcvSwitchRelayErrors", 4, c1.RcvSwitchRelayErrors.Load)

	// Port 2 not Active: data for it is discarded, SMPs pass in Init.
	r.sw.Port(2).SetState(opaswitch.StateInit)
	r.send(t, 1, pkt)
	waitCount(t, "port 2 PortXmitDiscards", 1, c2.XmitDiscards.Load)
	smp := smpPkt(t, 0x12)
	r.send(t, 1, smp)
	if got := r.recv(t, 2, 2*time.Second); !bytes.Equal(got, smp) {
		t.Fatal("an SMP did not cross to an Init port")
	}
	// And data coming in on it is dropped.
	r.send(t, 2, vnicPkt(t, 0x12, 0x11))
	waitCount(t, "port 2 rcv_state_drops", 1, c2.RcvStateDrops.Load)

	if got := r.recv(t, 2, 50*time.Millisecond); got != nil {
		t.Errorf("port 2's host got a packet it should not: %x", got)
	}
	if got := r.recv(t, 3, 10*time.Millisecond); got != nil {
		t.Errorf("port 3's host got a packet it should not: %x", got)
	}
}

// TestToSMA: directed-route SMPs (the permissive DLID) and packets to the
// switch's own LID go to the SMA with the port they came in on.
func TestToSMA(t *testing.T) {
	r := newRig(t)
	r.send(t, 2, smpPkt(t, opaswitch.Permissive))
	r.send(t, 3, smpPkt(t, 0x100))
	waitCount(t, "SMPs handed over", 2, func() uint64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		return uint64(len(r.smps))
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.smpIn[0] != 2 || r.smpIn[1] != 3 {
		t.Errorf("SMPs came in on %v, want [2 3]", r.smpIn)
	}
	if err := r.sw.Send(1, r.smps[0]); err != nil {
		t.Fatal(err)
	}
	if got := r.recv(t, 1, 2*time.Second); !bytes.Equal(got, r.smps[0]) {
		t.Error("Send did not reach port 1's host")
	}
	if err := r.sw.Send(5, r.smps[0]); err == nil {
		t.Error("Send on a port without a cable succeeded")
	}
}

func TestNewRefuses(t *testing.T) {
	n := hfitest.NewNetwork()
	tr := n.Listen(swEP(1))
	for _, cfg := range []opaswitch.Config{
		{NumPorts: 255},
		{NumPorts: 4, Cables: []opaswitch.Cable{{Port: 5, Transport: tr, Peer: hostEP(5)}}},
		{NumPorts: 4, Cables: []opaswitch.Cable{{Port: 1, Transport: tr, Peer: hostEP(1)}, {Port: 1, Transport: tr, Peer: hostEP(2)}}},
		{NumPorts: 4, Cables: []opaswitch.Cable{{Port: 1, Transport: tr}}},
	} {
		if _, err := opaswitch.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
