package fm

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vema"
	nodeside "github.com/opavnic/opavnic/vema/node" // node names the FM's record of one
)

// fakeNode speaks the node side of docs/management.md with the vema codecs: it
// announces, answers NodeInfo, NodeDescription and PortInfo SMPs, keeps the
// VEMA state the EM sets and the directory the FM pushes, and acks it all.
type fakeNode struct {
	t        *testing.T
	name     string
	guid     uint64
	ep, fmEP netip.AddrPort
	h        *hfi.HFI

	mu     sync.Mutex
	send   *hfi.Sender
	lid    uint32
	smLID  encap.LID // from the SM's PortInfo Set; 0 until then
	prefix uint64
	heard  time.Time
	vports map[uint8]vema.VESWPortInfo
	// netdevs is each vport's netdev MAC: base_mac_addr when the EM sets a
	// new one, the user's after trapMACChange (which, as vnicd, leaves
	// base_mac_addr as the EM set it).
	netdevs  map[uint8][6]byte
	tables   map[uint8][]vema.MACTableEntry // by vport, index = table index
	deleted  []uint8
	trapLID  encap.LID
	asm      nodeside.DirAssembler
	dirGen   uint32 // installed
	dir      []dirEntry
	groups   []dirGroup
	saResp   chan []byte
	announce int
	// refusedTables counts MAC table Sets for a vport that does not exist,
	// which the agent refuses (0x001C) as the kernel's did.
	refusedTables int
	// drop, when set, loses the incoming MADs it matches (counted in
	// dropped): packet loss, or a node that stops answering.
	drop    func(class vema.Class, method vema.Method, attr uint16) bool
	dropped int
	// sets records every VEMA Set the node took, in order.
	sets []vema.MAD
}

// setDrop makes the node lose the incoming MADs d matches (nil: none).
func (f *fakeNode) setDrop(d func(class vema.Class, method vema.Method, attr uint16) bool) {
	f.mu.Lock()
	f.drop = d
	f.mu.Unlock()
}

// dropping matches MADs of class, and of method and attr unless 0.
func dropping(class vema.Class, method vema.Method, attr uint16) func(vema.Class, vema.Method, uint16) bool {
	return func(c vema.Class, m vema.Method, a uint16) bool {
		return c == class && (method == 0 || m == method) && (attr == 0 || a == attr)
	}
}

func newFakeNode(t *testing.T, ctx context.Context, n *hfitest.Network, name string, ep, fmEP netip.AddrPort, lid uint32) *fakeNode {
	f := &fakeNode{t: t, name: name, guid: uint64(encap.GUIDFromName(name)), ep: ep, fmEP: fmEP, lid: lid,
		vports: map[uint8]vema.VESWPortInfo{}, netdevs: map[uint8][6]byte{}, tables: map[uint8][]vema.MACTableEntry{},
		saResp: make(chan []byte, 4)}
	f.h = hfi.New(n.Listen(ep), hfi.Config{LID: lid, VerifyICRC: true})
	d, _ := hfi.NewDirectory(map[uint32]netip.AddrPort{1: fmEP}, nil)
	f.h.SetDirectory(d)
	f.h.Register(encap.L4FabricMgt, f)
	f.send = f.h.NewSender()
	go f.h.Run(ctx)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.mu.Lock()
				if f.lid == 0 || time.Since(f.heard) > 600*time.Millisecond {
					f.sendAnnounce()
				}
				f.mu.Unlock()
			}
		}
	}()
	return f
}

func (f *fakeNode) slid() uint32 {
	if f.lid == 0 {
		return encap.LID16BPermissive
	}
	return f.lid
}

func (f *fakeNode) out(p encap.MgmtParams, mad []byte) {
	pkt, err := encap.AppendMgmt(nil, &p, mad)
	if err != nil {
		f.t.Errorf("%s: framing: %v", f.name, err)
		return
	}
	f.send.SendTo(pkt, f.fmEP)
}

func (f *fakeNode) sendAnnounce() {
	f.announce++
	ntc := vema.SMPNotice{GenericType: vema.NoticeGenericInfo, ProdTypeLSB: vema.NoticeProdCA,
		TrapNum: vema.TrapChangeCapability, IssuerLID: encap.LID(f.lid),
		IssuerGID: gidOf(encap.DefaultSubnetPrefix, f.guid)}
	ntc.Details[3] = byte(f.lid)
	data, _ := ntc.MarshalBinary()
	s := vema.SMP{SMPHeader: vema.SMPHeader{BaseVersion: 0x80, MgmtClass: vema.ClassSubnLIDRouted, ClassVersion: 0x80,
		Method: vema.MethodTrap, TID: uint64(f.announce), AttrID: vema.SMPAttrNotice}, Data: data}
	mad, _ := s.MarshalBinary()
	f.out(encap.MgmtParams{SLID: f.slid(), DLID: 1, SC: 15, PKey: 0x7FFF}, mad)
}

func (f *fakeNode) Flush() {}

func (f *fakeNode) Receive(pkt []byte, h encap.Header16B, src netip.AddrPort) {
	mp, err := encap.MgmtPayload(pkt)
	if err != nil {
		return
	}
	var hdr vema.MADHeader
	if hdr.UnmarshalBinary(mp.MAD) != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop != nil && f.drop(hdr.MgmtClass, hdr.Method, hdr.AttrID) {
		f.dropped++
		return
	}
	switch hdr.MgmtClass {
	case vema.ClassSubnDirectedRoute:
		f.heard = time.Now()
		f.smp(mp.MAD, h.SLID())
	case vema.ClassVEMA:
		f.vema(mp.MAD, h.SLID())
	case classDirectory:
		f.directory(mp.MAD, h.SLID())
	case vema.ClassSubnAdm:
		f.saResp <- append([]byte(nil), mp.MAD...)
	}
}

func (f *fakeNode) smp(mad []byte, fmLID uint32) {
	var s vema.SMP
	if s.UnmarshalBinary(mad) != nil {
		return
	}
	var attr []byte
	switch s.AttrID {
	case vema.SMPAttrNodeInfo:
		ni := vema.NodeInfo{BaseVersion: 0x80, ClassVersion: 0x80, NodeType: vema.NodeTypeCA, NumPorts: 1,
			NodeGUID: f.guid, PortGUID: f.guid, PartitionCap: 16, LocalPortNum: 1, VendorID: vema.IntelOUI}
		attr, _ = ni.MarshalBinary()
	case vema.SMPAttrNodeDescription:
		nd := vema.NodeDescriptionFrom(f.name)
		attr, _ = nd.MarshalBinary()
	case vema.SMPAttrPortInfo:
		if s.Method == vema.MethodSet {
			var pi vema.PortInfo
			pi.UnmarshalBinary(s.Data)
			f.lid = uint32(pi.LID)
			f.smLID, f.prefix = pi.SMLID, pi.SubnetPrefix
			f.h.SetLID(f.lid)
		}
		pi := vema.PortInfo{LID: encap.LID(f.lid), SMLID: f.smLID, SubnetPrefix: f.prefix}
		pi.SetPortState(4)
		attr, _ = pi.MarshalBinary()
	default:
		return
	}
	s.Method = vema.MethodGetResp
	s.Status |= vema.StatusDirection
	s.Data = append(attr, make([]byte, -len(attr)&7)...)
	out, _ := s.MarshalBinary()
	f.out(encap.MgmtParams{SLID: f.slid(), DLID: fmLID, SC: 15, PKey: 0x7FFF}, out)
}

func (f *fakeNode) reply(m *vema.MAD, fmLID uint32) {
	m.Method = vema.MethodGetResp
	out, _ := m.MarshalBinary()
	f.out(encap.MgmtParams{SLID: f.lid, DLID: fmLID, PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, out)
}

func (f *fakeNode) vema(mad []byte, fmLID uint32) {
	var m vema.MAD
	if m.UnmarshalBinary(mad) != nil {
		return
	}
	vp := m.VPortIndex()
	_, exists := f.vports[vp]
	if m.Method == vema.MethodSet {
		f.sets = append(f.sets, m)
	}
	switch {
	case m.AttrID == vema.AttrClassPortInfo && m.Method == vema.MethodSet:
		var c vema.ClassPortInfo
		c.UnmarshalBinary(m.Data[:])
		f.trapLID = c.TrapLID
	case m.AttrID == vema.AttrVESWPortInfo && m.Method == vema.MethodSet:
		var pi vema.VESWPortInfo
		pi.UnmarshalBinary(m.Data[:])
		if old, ok := f.vports[vp]; ok {
			pi.VPort.MACTblDigest = old.VPort.MACTblDigest
			if old.VPort.BaseMACAddr != pi.VPort.BaseMACAddr {
				f.netdevs[vp] = pi.VPort.BaseMACAddr
			}
		} else {
			f.netdevs[vp] = pi.VPort.BaseMACAddr
		}
		f.vports[vp] = pi
		pi.AppendBinary(m.Data[:0])
	case m.AttrID == vema.AttrVESWPortInfo && m.Method == vema.MethodGet:
		pi, ok := f.vports[vp]
		if !ok {
			m.Status = vema.StatusInvalidAttrValue
			pi = vema.PowerOnVESWPortInfo()
		}
		pi.AppendBinary(m.Data[:0])
	case m.AttrID == vema.AttrVESWPortMACEntries && m.Method == vema.MethodSet && !exists:
		m.Status = vema.StatusInvalidAttrValue
		f.refusedTables++
	case m.AttrID == vema.AttrVESWPortMACEntries && m.Method == vema.MethodSet:
		var t vema.VESWPortMACEntries
		t.UnmarshalBinary(m.Data[:])
		tbl := f.tables[vp]
		for i, e := range t.Entries {
			idx := int(t.Offset) + i
			for len(tbl) <= idx {
				tbl = append(tbl, vema.MACTableEntry{})
			}
			tbl[idx] = e
		}
		for len(tbl) > 0 && tbl[len(tbl)-1].IsDelete() {
			tbl = tbl[:len(tbl)-1]
		}
		f.tables[vp] = tbl
		if pi, ok := f.vports[vp]; ok {
			pi.VPort.MACTblDigest = t.Digest
			f.vports[vp] = pi
		}
	case m.AttrID == vema.AttrDeleteVESW:
		delete(f.vports, vp)
		delete(f.tables, vp)
		delete(f.netdevs, vp)
		f.deleted = append(f.deleted, vp)
	case m.AttrID == vema.AttrIfaceUcastMACs:
		l := vema.IfaceMACs{IfaceMACsHeader: vema.IfaceMACsHeader{NumMACsInMsg: 1, TotMACsInLst: 1},
			MACs: [][6]byte{f.netdevs[vp]}}
		if !exists {
			m.Status = vema.StatusInvalidAttrValue
		}
		l.AppendBinary(m.Data[:0])
	}
	f.reply(&m, fmLID)
}

// directory takes a block as vnicd does, with vema's DirAssembler.
func (f *fakeNode) directory(mad []byte, fmLID uint32) {
	var m vema.MAD
	if m.UnmarshalBinary(mad) != nil {
		return
	}
	var (
		eps    map[uint32]netip.AddrPort
		groups map[uint32][]uint32
		done   bool
		err    error
	)
	switch m.AttrID {
	case attrDirectoryBlock:
		var b vema.DirectoryBlock
		if err = b.UnmarshalBinary(m.Data[:]); err == nil {
			eps, groups, done, err = f.asm.AddDirectoryBlock(&b)
		}
	case attrMulticastBlock:
		var b vema.MulticastBlock
		if err = b.UnmarshalBinary(m.Data[:]); err == nil {
			eps, groups, done, err = f.asm.AddMulticastBlock(&b)
		}
	}
	if err != nil {
		f.t.Errorf("%s: directory block: %v", f.name, err)
		m.Status = vema.StatusInvalidAttrValue
	}
	if done {
		f.dirGen, _ = f.asm.Installed()
		f.dir, f.groups = nil, nil
		for l, ep := range eps {
			f.dir = append(f.dir, dirEntry{l, ep})
		}
		slices.SortFunc(f.dir, func(a, b dirEntry) int { return cmp.Compare(a.LID, b.LID) })
		for l, ms := range groups {
			f.groups = append(f.groups, dirGroup{l, slices.Sorted(slices.Values(ms))})
		}
		slices.SortFunc(f.groups, func(a, b dirGroup) int { return cmp.Compare(a.MLID, b.MLID) })
	}
	f.reply(&m, fmLID)
}

// restart forgets everything, as a restarted vnicd would.
func (f *fakeNode) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lid = 0
	f.h.SetLID(0)
	f.forget()
}

// restartKeepingLID forgets everything but the LID, as a restarted vnicd
// with node.lid in its config would: it starts with that LID and no SM LID.
func (f *fakeNode) restartKeepingLID() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forget()
}

func (f *fakeNode) forget() {
	f.smLID, f.prefix = 0, 0
	f.vports = map[uint8]vema.VESWPortInfo{}
	f.netdevs = map[uint8][6]byte{}
	f.tables = map[uint8][]vema.MACTableEntry{}
	f.dir, f.groups, f.dirGen, f.asm = nil, nil, 0, nodeside.DirAssembler{}
}

// trapMACChange sends a VEMA unicast-MAC-change trap for vport after
// setting its MAC.
func (f *fakeNode) trapMACChange(vport uint8, mac [6]byte) {
	f.mu.Lock()
	f.netdevs[vport] = mac
	f.mu.Unlock()
	f.sendTrapOf(f, vport)
}

// sendTrapOf sends, from f's endpoint, the VEMA unicast-MAC-change trap
// that node of (f itself, or another) would send for its vport.
func (f *fakeNode) sendTrapOf(of *fakeNode, vport uint8) {
	of.mu.Lock()
	pi, lid, trapLID := of.vports[vport], of.lid, of.trapLID
	of.mu.Unlock()
	var t vema.TrapMAD
	t.VendorHeader = vema.VendorHeader{MADHeader: vema.MADHeader{BaseVersion: 0x80, MgmtClass: vema.ClassVEMA,
		ClassVersion: 0x80, Method: vema.MethodTrap, TID: 77, AttrID: vema.AttrNotice}, OUI: vema.IntelOUI}
	t.Notice.GenType = vema.VEMANoticeGenType
	t.Notice.OUI = vema.IntelOUI
	t.Notice.IssuerLID = encap.LID(lid)
	t.Notice.Trap = vema.VESWPortTrap{VESWID: pi.VESW.VESWID, VESWPortIndex: vport, Opcode: vema.TrapIfaceUcastMACChange}
	mad, _ := t.MarshalBinary()
	f.mu.Lock() // out's Sender is the node's, shared with its receive path
	defer f.mu.Unlock()
	f.out(encap.MgmtParams{SLID: lid, DLID: uint32(trapLID), PKey: 0xFFFF, DestQPN: 1, SrcQPN: 1}, mad)
}

func (f *fakeNode) snapshot() (lid uint32, vports map[uint8]vema.VESWPortInfo, tables map[uint8][]vema.MACTableEntry, dir []dirEntry, groups []dirGroup, deleted []uint8) {
	f.mu.Lock()
	defer f.mu.Unlock()
	vports = map[uint8]vema.VESWPortInfo{}
	for k, v := range f.vports {
		vports[k] = v
	}
	tables = map[uint8][]vema.MACTableEntry{}
	for k, v := range f.tables {
		tables[k] = append([]vema.MACTableEntry(nil), v...)
	}
	return f.lid, vports, tables, append([]dirEntry(nil), f.dir...), append([]dirGroup(nil), f.groups...), append([]uint8(nil), f.deleted...)
}

// refused returns how many MAC table Sets the node refused.
func (f *fakeNode) refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refusedTables
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	waitfor.Until(t, timeout, what, cond)
}

// setsSince returns the VEMA Sets of attr the node took after the first
// from (a count of f.sets from an earlier call), and the count now.
func (f *fakeNode) setsSince(from int, attr uint16) ([]vema.MAD, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []vema.MAD
	for _, m := range f.sets[from:] {
		if m.AttrID == attr {
			out = append(out, m)
		}
	}
	return out, len(f.sets)
}

// droppedCount is how many MADs the node's drop filter lost.
func (f *fakeNode) droppedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}
