package hfi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
)

var (
	epA = netip.MustParseAddrPort("10.0.0.1:4793")
	epB = netip.MustParseAddrPort("10.0.0.2:4793")
	epC = netip.MustParseAddrPort("10.0.0.3:4793")
)

const (
	lidA  = 0x10
	lidB  = 0xC000
	lidC  = 0xABCDE
	mcast = 0xF00001
)

// recorder is a Receiver that keeps copies of what it got.
type recorder struct {
	pkts    [][]byte
	srcs    []netip.AddrPort
	flushes int
}

func (r *recorder) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	r.pkts = append(r.pkts, bytes.Clone(pkt))
	r.srcs = append(r.srcs, src)
}
func (r *recorder) Flush() { r.flushes++ }

func directory(t *testing.T) *hfi.Directory {
	t.Helper()
	d, err := hfi.NewDirectory(
		map[uint32]netip.AddrPort{lidA: epA, lidB: epB, lidC: epC},
		map[uint32][]uint32{mcast: {lidA, lidB, lidC}, 0xF00002: {lidC}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func vnicPacket(t *testing.T, slid, dlid uint32, pkey encap.PKey, vesw encap.VESWID) []byte {
	t.Helper()
	buf := make([]byte, 200)
	for i := encap.Headroom; i < encap.Headroom+64; i++ {
		buf[i] = byte(i)
	}
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, 64, &encap.VNICParams{
		SLID: slid, DLID: dlid, PKey: pkey, VESWID: vesw,
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

func TestReceiveChecks(t *testing.T) {
	h := hfi.New(hfitest.NewNetwork().Listen(epB), hfi.Config{LID: lidB, VerifyICRC: true})
	h.SetDirectory(directory(t))
	rec := &recorder{}
	h.Register(encap.L4Ethernet, rec)

	good := vnicPacket(t, lidA, lidB, 0x8001, 1)
	badICRC := bytes.Clone(good)
	badICRC[30] ^= 1
	badLen := bytes.Clone(good)[:len(good)-8]
	badL2 := bytes.Clone(good)
	encap.Header16B(badL2).SetL2(1)
	badL4 := bytes.Clone(good)
	encap.Header16B(badL4).SetL4(0x42)
	// Re-seal the ICRC so only the L4 check fails.
	reseal := func(p []byte) []byte {
		ic := encap.ICRC(p)
		p[len(p)-5], p[len(p)-4], p[len(p)-3], p[len(p)-2] = byte(ic), byte(ic>>8), byte(ic>>16), byte(ic>>24)
		return p
	}
	reseal(badL4)
	reseal(badL2)
	otherDLID := vnicPacket(t, lidA, lidC, 0x8001, 1)
	notJoined := vnicPacket(t, lidA, 0xF00002, 0x8001, 1)
	mc := vnicPacket(t, lidA, mcast, 0x8001, 1)
	unknownSrc := vnicPacket(t, 0x77, lidB, 0x8001, 1)

	msgs := []hfi.Message{
		{Buf: good, N: len(good), Addr: epA},
		{Buf: good[:10], N: 10, Addr: epA},
		{Buf: badLen, N: len(badLen), Addr: epA},
		{Buf: badL2, N: len(badL2), Addr: epA},
		{Buf: badICRC, N: len(badICRC), Addr: epA},
		{Buf: good, N: len(good), Addr: epC}, // SLID A from C's endpoint
		{Buf: unknownSrc, N: len(unknownSrc), Addr: epA},
		{Buf: otherDLID, N: len(otherDLID), Addr: epA},
		{Buf: notJoined, N: len(notJoined), Addr: epA},
		{Buf: badL4, N: len(badL4), Addr: epA},
		{Buf: mc, N: len(mc), Addr: epA},
	}
	if _, _, ok := h.LastBadSource(); ok {
		t.Error("LastBadSource before any packet failed the source check")
	}
	h.ReceiveBatch(msgs)
	// The last of the two that failed the source check: SLID 0x77 from A.
	if slid, from, ok := h.LastBadSource(); !ok || slid != 0x77 || from != epA {
		t.Errorf("LastBadSource = %#x, %v, %v; want 0x77, %v, true", slid, from, ok, epA)
	}

	c := &h.Counters
	for _, tc := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"RcvPkts", c.RcvPkts.Load(), 2},
		{"RcvMalformed", c.RcvMalformed.Load(), 3},
		{"RcvBadICRC", c.RcvBadICRC.Load(), 1},
		{"RcvBadSource", c.RcvBadSource.Load(), 2},
		{"RcvBadDLID", c.RcvBadDLID.Load(), 2},
		{"RcvUnknownL4", c.RcvUnknownL4.Load(), 1},
		{"RcvErrors", c.RcvErrors.Load(), 9},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if len(rec.pkts) != 2 || !bytes.Equal(rec.pkts[0], good) || !bytes.Equal(rec.pkts[1], mc) {
		t.Errorf("receiver got %d packets, want the good unicast and the multicast one", len(rec.pkts))
	}
	if rec.flushes != 1 {
		t.Errorf("flushes = %d, want 1", rec.flushes)
	}
	// Only what was delivered counts for its sender: A's good unicast and
	// multicast packets, not the one with A's SLID from C's endpoint.
	ta, _ := h.PeerTraffic(lidA)
	tc, _ := h.PeerTraffic(lidC)
	if ta.RxPkts.Load() != 2 || ta.RxBytes.Load() != uint64(len(good)+len(mc)) || tc.RxPkts.Load() != 0 {
		t.Errorf("traffic: from A %d packets %d bytes, from C %d packets; want 2, %d, 0",
			ta.RxPkts.Load(), ta.RxBytes.Load(), tc.RxPkts.Load(), len(good)+len(mc))
	}
}

// FuzzReceiveBatch: any datagram, from a peer's endpoint or another, is
// delivered or counted as one receive error, never both, and what is
// delivered counts for the peer whose LID and endpoint it carries.
func FuzzReceiveBatch(f *testing.F) {
	f.Add(vnicPacketF(lidA, lidB), uint8(0))
	f.Add(vnicPacketF(lidA, mcast), uint8(0))
	f.Add(vnicPacketF(lidC, lidB), uint8(2))
	f.Add(vnicPacketF(lidA, lidB), uint8(2))
	f.Add([]byte{1, 2, 3}, uint8(1))
	f.Fuzz(func(t *testing.T, pkt []byte, from uint8) {
		h := hfi.New(hfitest.NewNetwork().Listen(epB), hfi.Config{LID: lidB, VerifyICRC: from&4 == 0})
		h.SetDirectory(directory(t))
		h.Register(encap.L4Ethernet, &recorder{})
		src := []netip.AddrPort{epA, netip.MustParseAddrPort("10.9.9.9:4793"), epC}[int(from&3)%3]
		msgs := []hfi.Message{{Buf: pkt, N: len(pkt), Addr: src}, {Buf: pkt, N: len(pkt), Addr: src}}
		h.ReceiveBatch(msgs)
		c := &h.Counters
		if c.RcvPkts.Load()+c.RcvErrors.Load() != 2 {
			t.Fatalf("RcvPkts %d + RcvErrors %d != 2 datagrams", c.RcvPkts.Load(), c.RcvErrors.Load())
		}
		var rx, bytes uint64
		for _, lid := range []uint32{lidA, lidB, lidC} {
			pt, _ := h.PeerTraffic(lid)
			rx += pt.RxPkts.Load()
			bytes += pt.RxBytes.Load()
			if pt.TxPkts.Load() != 0 {
				t.Fatalf("receiving counted a packet sent to %#x", lid)
			}
		}
		if rx != c.RcvPkts.Load() || bytes != rx*uint64(len(pkt)) {
			t.Fatalf("peers' RxPkts %d (%d bytes) for %d delivered %d-byte packets", rx, bytes, c.RcvPkts.Load(), len(pkt))
		}
	})
}

// vnicPacketF is vnicPacket for fuzz seeds (no *testing.T there).
func vnicPacketF(slid, dlid uint32) []byte {
	buf := make([]byte, 200)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, 64, &encap.VNICParams{SLID: slid, DLID: dlid, PKey: 0x8001, VESWID: 1})
	if err != nil {
		panic(err)
	}
	return pkt
}

func TestICRCVerificationOff(t *testing.T) {
	h := hfi.New(hfitest.NewNetwork().Listen(epB), hfi.Config{LID: lidB})
	h.SetDirectory(directory(t))
	rec := &recorder{}
	h.Register(encap.L4Ethernet, rec)
	p := vnicPacket(t, lidA, lidB, 0x8001, 1)
	p[40] ^= 0xFF
	h.ReceiveBatch([]hfi.Message{{Buf: p, N: len(p), Addr: epA}})
	if len(rec.pkts) != 1 || h.Counters.RcvBadICRC.Load() != 0 {
		t.Fatalf("with verification off a bad ICRC must pass: got %d packets", len(rec.pkts))
	}
}

// run starts h's receive loop and returns a function that stops it and waits.
func run(t *testing.T, h *hfi.HFI) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Error("Run did not stop within 2s")
		}
	})
}

// waitFor polls cond for up to 2 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.Until(t, 2*time.Second, what, cond)
}

// threeHFIs runs the HFIs of lidA, lidB and lidC on a fake network, each
// with directory's directory and a recorder for VNIC packets.
func threeHFIs(t *testing.T) (map[uint32]*hfi.HFI, map[uint32]*syncRecorder) {
	n := hfitest.NewNetwork()
	hs := map[uint32]*hfi.HFI{}
	recs := map[uint32]*syncRecorder{}
	for lid, ep := range map[uint32]netip.AddrPort{lidA: epA, lidB: epB, lidC: epC} {
		h := hfi.New(n.Listen(ep), hfi.Config{LID: lid, VerifyICRC: true})
		h.SetDirectory(directory(t))
		recs[lid] = &syncRecorder{}
		h.Register(encap.L4Ethernet, recs[lid])
		hs[lid] = h
		run(t, h)
	}
	return hs, recs
}

func TestMulticastFanoutSkipsSender(t *testing.T) {
	hs, recs := threeHFIs(t)
	s := hs[lidA].NewSender()
	s.Send([][]byte{vnicPacket(t, lidA, mcast, 0x8001, 1), vnicPacket(t, lidA, lidC, 0x8001, 1)})
	waitFor(t, "B and C to receive", func() bool { return recs[lidB].count() == 1 && recs[lidC].count() == 2 })
	// A window for what must not happen: a copy of the multicast back at
	// the sender, which would come as fast as B's and C's did.
	time.Sleep(20 * time.Millisecond)
	if got := recs[lidA].count(); got != 0 {
		t.Fatalf("sender received %d of its own packets", got)
	}
	if got := hs[lidA].Counters.XmitPkts.Load(); got != 3 {
		t.Fatalf("XmitPkts = %d, want 3 (2 multicast copies + 1 unicast)", got)
	}
	// No route: a DLID not in the directory.
	s.Send([][]byte{vnicPacket(t, lidA, 0x99, 0x8001, 1)})
	if hs[lidA].Counters.XmitNoRoute.Load() != 1 || hs[lidA].Counters.XmitDiscards.Load() != 1 {
		t.Fatal("a packet without a route must be counted as a discard")
	}
}

// TestDirectorySwapWhileSending: one goroutine sends to B while another
// swaps A's directory, 40 times, between two that both map B. Every send
// finds its route and reaches B, and frames keep arriving after each swap.
// The sender keeps at most 32 frames in flight, so that the fake network
// never drops one for a full queue.
func TestDirectorySwapWhileSending(t *testing.T) {
	n := hfitest.NewNetwork()
	ha := hfi.New(n.Listen(epA), hfi.Config{LID: lidA})
	hb := hfi.New(n.Listen(epB), hfi.Config{LID: lidB})
	d1 := directory(t)
	d2, err := hfi.NewDirectory(map[uint32]netip.AddrPort{lidA: epA, lidB: epB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ha.SetDirectory(d1)
	hb.SetDirectory(d1)
	rec := &syncRecorder{}
	hb.Register(encap.L4Ethernet, rec)
	run(t, hb)

	s := ha.NewSender()
	pkt := vnicPacket(t, lidA, lidB, 0x8001, 1)
	const maxSends, inFlight = 1_000_000, 32
	stop := make(chan struct{})
	done := make(chan string, 1)
	var sent int
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for sent < maxSends {
			select {
			case <-stop:
				done <- ""
				return
			default:
			}
			if sent-rec.count() >= inFlight {
				if !waitfor.Poll(5*time.Second, func() bool { return sent-rec.count() < inFlight }) {
					done <- fmt.Sprintf("B received %d of %d frames sent, and no more for 5 s", rec.count(), sent)
					return
				}
			}
			if time.Now().After(deadline) {
				done <- "the sender ran 20 s without being stopped"
				return
			}
			s.Send([][]byte{pkt})
			sent++
		}
		done <- fmt.Sprintf("the swaps took more than %d sends", maxSends)
	}()
	stopSender := func() {
		close(stop)
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
	for i := range 40 {
		ha.SetDirectory([]*hfi.Directory{d2, d1}[i%2])
		from := rec.count()
		if !waitfor.Poll(5*time.Second, func() bool { return rec.count() >= from+10 }) {
			stopSender()
			t.Fatalf("swap %d: B received %d frames in the 5 s after it (%d before), want 10", i+1, rec.count()-from, from)
		}
	}
	stopSender()
	c := &ha.Counters
	if c.XmitNoRoute.Load() != 0 || c.XmitDiscards.Load() != 0 || c.XmitPkts.Load() != uint64(sent) {
		t.Fatalf("A sent %d frames: XmitPkts %d, XmitNoRoute %d, XmitDiscards %d; want every one sent, none without a route",
			sent, c.XmitPkts.Load(), c.XmitNoRoute.Load(), c.XmitDiscards.Load())
	}
	waitfor.Until(t, 5*time.Second, fmt.Sprintf("B to receive all %d frames A sent", sent), func() bool { return rec.count() == sent })
	t.Logf("%d frames sent and received across 40 directory swaps", sent)
}

func TestNewDirectoryRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		eps    map[uint32]netip.AddrPort
		groups map[uint32][]uint32
	}{
		"multicast endpoint":  {eps: map[uint32]netip.AddrPort{0xF00001: epA}},
		"zero LID endpoint":   {eps: map[uint32]netip.AddrPort{0: epA}},
		"invalid address":     {eps: map[uint32]netip.AddrPort{1: {}}},
		"unicast group":       {groups: map[uint32][]uint32{0x10: {1}}},
		"multicast member":    {groups: map[uint32][]uint32{0xF00001: {0xF00002}}},
		"permissive as group": {groups: map[uint32][]uint32{0xFFFFFF: {1}}},
		// The transport carries no scope id: such a peer could not be sent
		// to, and its datagrams would never match (rcv_bad_source).
		"zoned link-local endpoint": {eps: map[uint32]netip.AddrPort{1: netip.MustParseAddrPort("[fe80::2%eth0]:4793")}},
		"link-local endpoint":       {eps: map[uint32]netip.AddrPort{1: netip.MustParseAddrPort("[fe80::2]:4793")}},
		"zoned ULA endpoint":        {eps: map[uint32]netip.AddrPort{1: netip.MustParseAddrPort("[fd00::2%eth0]:4793")}},
	} {
		if _, err := hfi.NewDirectory(tc.eps, tc.groups); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestScoped(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"fe80::2", true},
		{"fe80::2%eth0", true},
		{"fe80::2%2", true},
		{"fd00::2%eth0", true},
		{"fd00::2", false},
		{"2001:db8::2", false},
		{"::", false},
		{"169.254.0.2", false}, // IPv4 link-local needs no zone
		{"::ffff:169.254.0.2", false},
		{"10.0.0.1", false},
	} {
		if got := hfi.Scoped(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Scoped(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	d, err := hfi.NewDirectory(map[uint32]netip.AddrPort{1: netip.MustParseAddrPort("[::ffff:169.254.0.2]:4793")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ep, _ := d.Endpoint(1); ep != netip.MustParseAddrPort("169.254.0.2:4793") {
		t.Errorf("endpoint %v, want 169.254.0.2:4793", ep)
	}
}

// TestTrustAnyMgmtSource checks that the option lets management packets from
// unknown sources through and still checks the source of everything else.
func TestTrustAnyMgmtSource(t *testing.T) {
	mgmt, err := encap.AppendMgmt(nil, &encap.MgmtParams{
		SLID: 0xFFFFFF, DLID: 1, SC: 15, PKey: 0x7FFF, DestQPN: encap.QPNSMI,
	}, make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	data := vnicPacket(t, 0x77, 1, 0x8001, 1)
	for _, tc := range []struct {
		name     string
		trust    bool
		wantMgmt int
		wantBad  uint64
	}{
		{"checked", false, 0, 2},
		{"trusted", true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hfi.New(hfitest.NewNetwork().Listen(epA), hfi.Config{LID: 1, VerifyICRC: true, TrustAnyMgmtSource: tc.trust})
			h.SetDirectory(directory(t))
			mrec, drec := &recorder{}, &recorder{}
			h.Register(encap.L4FabricMgt, mrec)
			h.Register(encap.L4Ethernet, drec)
			h.ReceiveBatch([]hfi.Message{
				{Buf: mgmt, N: len(mgmt), Addr: epC},
				{Buf: data, N: len(data), Addr: epC},
			})
			if len(mrec.pkts) != tc.wantMgmt {
				t.Errorf("management packets received = %d, want %d", len(mrec.pkts), tc.wantMgmt)
			}
			if len(drec.pkts) != 0 {
				t.Errorf("data packet from an unknown source got through")
			}
			if got := h.Counters.RcvBadSource.Load(); got != tc.wantBad {
				t.Errorf("RcvBadSource = %d, want %d", got, tc.wantBad)
			}
		})
	}
}

// TestFakeOversizeDatagramIsMalformed: the in-memory transport, like the UDP
// one, must not cut a datagram longer than the largest packet down to a
// valid packet.
func TestFakeOversizeDatagramIsMalformed(t *testing.T) {
	n := hfitest.NewNetwork()
	tr := n.Listen(epB)
	h := hfi.New(tr, hfi.Config{LID: lidB, VerifyICRC: true})
	h.SetDirectory(directory(t))
	rec := &recorder{}
	h.Register(encap.L4Ethernet, rec)
	buf := make([]byte, encap.Headroom+encap.MaxFrameLen+encap.Tailroom+8)
	pkt, err := encap.EncapVNIC(buf, encap.Headroom, encap.MaxFrameLen, &encap.VNICParams{
		SLID: lidA, DLID: lidB, PKey: 0x8001, VESWID: 1,
	})
	if err != nil || len(pkt) != encap.MaxPacketLen {
		t.Fatalf("EncapVNIC: %d bytes, %v", len(pkt), err)
	}
	if !tr.Inject(epA, pkt[:len(pkt)+8:len(pkt)+8]) {
		t.Fatal("Inject refused the datagram")
	}
	msgs := []hfi.Message{{Buf: make([]byte, encap.MaxPacketLen+1)}}
	k, err := tr.ReadBatch(msgs)
	if err != nil || k != 1 {
		t.Fatalf("ReadBatch = %d, %v", k, err)
	}
	h.ReceiveBatch(msgs[:k])
	if len(rec.pkts) != 0 || h.Counters.RcvMalformed.Load() != 1 {
		t.Errorf("%d packets received, RcvMalformed %d; want the %d-byte datagram malformed",
			len(rec.pkts), h.Counters.RcvMalformed.Load(), len(pkt)+8)
	}
}
