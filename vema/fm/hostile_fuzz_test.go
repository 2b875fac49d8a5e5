package fm

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
	nodeside "github.com/opavnic/opavnic/vema/node" // node names the FM's record of one
	"github.com/opavnic/opavnic/vema/node/nodetest"
)

// hostileNode answers the FM's requests as a node would, with the real SMA
// and VEMA agent, so that the fuzzer's changes to those answers reach the
// FM's handling of each reply (join, PortInfo, directory, EM pushes and
// polls) rather than stopping at its header checks.
type hostileNode struct {
	ep    netip.AddrPort
	guid  uint64
	sma   *nodeside.SMA
	agent *nodeside.Agent
}

func newHostileNode(name string, guid uint64, ep netip.AddrPort) *hostileNode {
	return &hostileNode{ep: ep, guid: guid, sma: nodeside.NewSMA(guid, guid, name, nodeside.SMAPort{}, nil),
		agent: nodeside.NewAgent(nodetest.NewPorts(), nil)}
}

// answer is the honest answer to the request MAD req ("" when the node
// would send none).
func (n *hostileNode) answer(req []byte) []byte {
	switch vema.Class(req[1]) {
	case vema.ClassSubnDirectedRoute, vema.ClassSubnLIDRouted:
		if r, ok := n.sma.Handle(req); ok {
			return r
		}
	case vema.ClassVEMA:
		if r, ok := n.agent.Handle(req); ok {
			return r
		}
	case classDirectory:
		r := slices.Clone(req)
		r[3] = byte(vema.MethodGetResp)
		return r
	}
	return nil
}

// FuzzFMHostileNode runs an FM through a node's announce and then a
// sequence of the fuzzer's choosing: answers to the FM's outstanding
// requests, honest or altered (any byte, the status, the length), unasked
// MADs, announces from the node or a second endpoint, and the passing of
// time (retries, failures, polls, directory pushes). Whatever a node sends,
// the FM must not panic, must keep its bounds, and must never give one LID
// to two active nodes or a LID outside what it may hand out.
func FuzzFMHostileNode(f *testing.F) {
	// Seeds: an honest join and configuration; one with the PortInfo
	// answer's LID bytes changed; one with unasked MADs and time passing.
	honest := []byte{}
	for range 40 {
		honest = append(honest, 0, 0, 0, 3, 4, 0)
	}
	f.Add(honest)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0x4c, 0x12, 3, 0xff, 0, 0, 0, 0, 0, 0, 3, 9, 0, 0, 0, 0})
	f.Add([]byte{2, 0, 0x20, 0x81, 0x02, 0x80, 0x81, 0, 0, 4, 1, 0, 3, 200, 0, 0, 0, 0, 1, 1, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, ops []byte) { runHostile(t, ops) })
}

// runHostile runs FuzzFMHostileNode's ops and checks the FM's state after
// them; it returns the FM (locked by no one) for more checks.
func runHostile(t *testing.T, ops []byte) *FM {
	net := hfitest.NewNetwork()
	cfg, err := ParseConfig([]byte(testFabric))
	if err != nil {
		t.Fatal(err)
	}
	fm := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	fm.settleBy = time.Now() // no start-up sweep: pool LIDs and pushes at once
	fm.checkSettled(fm.settleBy)
	nodes := []*hostileNode{newHostileNode("host-a", 0xA, epA), newHostileNode("host-b", 0xB, epB)}
	now := time.Now()
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for _, n := range nodes {
		a := announceFrom(n.guid, n.ep)
		fm.handle(&a)
	}
	// Each op is 6 bytes: kind, a selector, an offset, a value, a
	// length or time step, and a node.
	for len(ops) >= 6 && len(fm.pending) <= maxPending {
		kind, sel, off, val, k, who := ops[0], ops[1], ops[2], ops[3], ops[4], nodes[int(ops[5])%len(nodes)]
		ops = ops[6:]
		switch kind % 5 {
		case 0, 1: // answer an outstanding request to who, honestly (0) or altered (1)
			var tids []uint64
			for tid, r := range fm.pending {
				if r.ep == who.ep {
					tids = append(tids, tid)
				}
			}
			if len(tids) == 0 {
				continue
			}
			slices.Sort(tids)
			r := fm.pending[tids[int(sel)%len(tids)]]
			mp, err := encap.ParseMgmt(r.pkt)
			if err != nil {
				t.Fatalf("the FM sent a packet it cannot parse: %v", err)
			}
			resp := who.answer(slices.Clone(mp.MAD))
			if resp == nil {
				continue
			}
			if kind%5 == 1 {
				switch {
				case k == 0: // cut short
					resp = resp[:int(off)%len(resp)]
				case k == 1: // a status
					binary.BigEndian.PutUint16(resp[4:], uint16(off)<<8|uint16(val))
				default: // a run of changed bytes
					for i := range int(k) % 16 {
						if j := int(off)*8 + i; j < len(resp) {
							resp[j] ^= val
						}
					}
				}
			}
			fm.handle(&inbound{mad: resp, slid: uint32(fm.nodes[who.guid].lid), srcQPN: 1, src: who.ep})
		case 2: // an unasked MAD made of the next k bytes, headed as the selector says
			n := min(int(k), len(ops))
			mad := make([]byte, vema.MADSize)
			mad[0], mad[1], mad[2], mad[3] = vema.BaseVersion, sel, 0x80, off
			if val&1 != 0 {
				mad[2] = vema.VEMAClassVersion
			}
			copy(mad[16:], ops[:n])
			ops = ops[n:]
			fm.handle(&inbound{mad: mad[:vema.MADHeaderLen+int(val)*8%(vema.MADSize-vema.MADHeaderLen+1)], slid: encap.LID16BPermissive, src: who.ep})
		case 3: // time passes
			now = now.Add(time.Duration(k) * 50 * time.Millisecond)
			fm.tick(now)
		case 4: // the node announces again (restarted), perhaps holding a LID, perhaps from elsewhere
			a := announceFrom(who.guid, who.ep)
			if sel&1 != 0 {
				a.src = epC
			}
			if sel&2 != 0 {
				var s vema.SMP
				var ntc vema.SMPNotice
				if s.UnmarshalBinary(a.mad) == nil && ntc.UnmarshalBinary(s.Data) == nil {
					ntc.IssuerLID = encap.LID(uint32(off)<<16 | uint32(val)<<8 | uint32(k))
					s.Data, _ = ntc.MarshalBinary()
					a.mad, _ = s.MarshalBinary()
				}
			}
			fm.handle(&a)
		}
	}
	// The FM's state after all that.
	if len(fm.pending) > maxPending {
		t.Fatalf("%d requests pending, over the bound %d", len(fm.pending), maxPending)
	}
	lids := map[uint32]uint64{}
	for guid, n := range fm.nodes {
		if n.state != NodeActive {
			continue
		}
		if n.lid == 0 || n.lid == cfg.FM.LID || encap.Is16BMulticast(n.lid) || n.lid >= encap.LID16BPermissive {
			t.Fatalf("active node %#x holds LID %#x", guid, n.lid)
		}
		// A node that joins again keeps the LID it had until the PortInfo
		// Set of its new one is answered (its description, and so its
		// config node, may have changed meanwhile).
		if c, ok := cfg.Node(n.cfgName); !n.joining && !(ok && c.LID == n.lid) && !cfg.Pool.Contains(n.lid) {
			t.Fatalf("active node %#x (%q) holds LID %#x, neither its fixed LID nor in the pool", guid, n.cfgName, n.lid)
		}
		if other, dup := lids[n.lid]; dup {
			t.Fatalf("LID %#x held by active nodes %#x and %#x", n.lid, other, guid)
		}
		lids[n.lid] = guid
	}
	fm.directory() // the directory can be built from whatever state is left
	return fm
}

// The fuzz target's honest seed takes both nodes through the join and the
// EM's configuration: the harness reaches the FM's deep states, so that
// the fuzzer's changes to answers are tested there.
func TestHostileNodeHarnessHonest(t *testing.T) {
	var ops []byte
	for range 40 {
		ops = append(ops, 0, 0, 0, 3, 4, 0, 0, 0, 0, 3, 4, 1)
	}
	fm := runHostile(t, ops)
	for _, name := range []string{"host-a", "host-b"} {
		n, ok := fm.Node(name)
		if !ok || n.State != NodeActive {
			t.Fatalf("%s: %+v, want active", name, n)
		}
	}
	for _, v := range fm.VESWs() {
		for _, m := range v.Members {
			if (m.Node == "host-a" || m.Node == "host-b") && !m.Configured {
				t.Errorf("vesw %d member %s/%d not configured", v.ID, m.Node, m.VPort)
			}
		}
	}
}
