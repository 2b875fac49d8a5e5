package fm

import (
	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vema"
)

// The SA (docs/management.md §5): PathRecord Get and ClassPortInfo Get.

// SA answer values (docs/management.md §5).
const (
	saMTU4096  = 5  // IB_MTU_4096
	saRate100G = 16 // IB_RATE_100_GBPS
)

// PathRecord returns the path record the SA answers for slid -> dlid: special
// GIDs carrying the LIDs and hop limit 1 when either LID is extended
// (>= 0xC000), prefix + port GUID and hop limit 0 otherwise.
func (f *FM) PathRecord(slid, dlid encap.LID) (vema.PathRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pathRecord(slid, dlid)
}

func (f *FM) portGUID(lid encap.LID) (uint64, bool) {
	if uint32(lid) == f.cfg.FM.LID {
		return f.cfg.FM.GUID, true
	}
	for _, n := range f.nodes {
		if n.state == NodeActive && n.lid == uint32(lid) && n.lid != 0 {
			return n.portGUID, true
		}
	}
	return 0, false
}

func (f *FM) pathRecord(slid, dlid encap.LID) (vema.PathRecord, error) {
	sg, ok1 := f.portGUID(slid)
	dg, ok2 := f.portGUID(dlid)
	if !ok1 || !ok2 {
		return vema.PathRecord{}, ErrUnknownLID
	}
	prefix := f.cfg.FM.SubnetPrefix
	r := vema.PathRecord{
		DLID: dlid, SLID: slid,
		Reversible: true, NumbPath: 1, PKey: 0xFFFF,
		L2_16B:      true,
		MTUSelector: vema.SelectorExactly, MTU: saMTU4096,
		RateSelector: vema.SelectorExactly, Rate: saRate100G,
	}
	if slid.IsExtended() || dlid.IsExtended() {
		r.SGID = encap.SpecialGID(prefix, slid)
		r.DGID = encap.SpecialGID(prefix, dlid)
		r.HopLimit = 1
	} else {
		r.SGID = gidOf(prefix, sg)
		r.DGID = gidOf(prefix, dg)
		r.L2_9B = true
	}
	return r, nil
}

func gidOf(prefix, guid uint64) encap.GID {
	var g encap.GID
	for i := range 8 {
		g[i] = byte(prefix >> (56 - 8*i))
		g[8+i] = byte(guid >> (56 - 8*i))
	}
	return g
}

// lidFromGID resolves a GID of a request: a special GID carries the LID, an
// ordinary one names a port GUID.
func (f *FM) lidFromGID(g encap.GID) encap.LID {
	// A GID of this subnet has its prefix or the link-local one, which
	// addresses any port of the local subnet (as OpenSM takes them); any
	// other prefix names another subnet, where this FM knows no port.
	if p := g.Prefix(); p != f.cfg.FM.SubnetPrefix && p != encap.DefaultSubnetPrefix {
		return 0
	}
	if g.IsOPA() {
		return g.LID()
	}
	guid := g.InterfaceID()
	if guid == f.cfg.FM.GUID {
		return encap.LID(f.cfg.FM.LID)
	}
	for _, n := range f.nodes {
		if n.state == NodeActive && n.portGUID == guid {
			return encap.LID(n.lid)
		}
	}
	return 0
}

// sa answers an SA request with one GetResp.
func (f *FM) sa(p *inbound) {
	var req vema.SAMAD
	if req.UnmarshalBinary(p.mad) != nil {
		f.BadMADs.Add(1)
		return
	}
	resp := vema.SAMAD{SAHeader: req.SAHeader}
	resp.RMPP = vema.RMPPHeader{}
	resp.Method = vema.MethodGetResp
	resp.Status = vema.StatusSuccess
	resp.AttrOffset = 0
	var data []byte
	switch {
	case req.Method != vema.MethodGet:
		resp.Status = vema.StatusUnsupportedMethod
	case req.BaseVersion != vema.BaseVersion || req.ClassVersion != vema.SAClassVersion:
		resp.Status = vema.StatusBadVersion
	case req.AttrID == vema.SAAttrClassPortInfo:
		cpi := vema.ClassPortInfo{BaseVersion: vema.BaseVersion, ClassVersion: vema.SAClassVersion}
		cpi.SetCapMask2(vema.CPICapMask2PRSupport)
		cpi.SetRespTime(vema.VEMACPIRespTime)
		data, _ = cpi.MarshalBinary()
	case req.AttrID == vema.SAAttrPathRecord:
		var q vema.PathRecord
		if q.UnmarshalBinary(req.Data) != nil {
			resp.Status = vema.StatusInvalidAttrValue
			break
		}
		slid, dlid := q.SLID, q.DLID
		if req.CompMask&vema.CompMaskSLID == 0 || slid == 0 {
			slid = f.lidFromGID(q.SGID)
		}
		if req.CompMask&vema.CompMaskDLID == 0 || dlid == 0 {
			dlid = f.lidFromGID(q.DGID)
		}
		r, err := f.pathRecord(slid, dlid)
		if err != nil {
			resp.Status = vema.StatusInvalidAttrValue // emulation: "none" as an error
			break
		}
		r.ServiceID = q.ServiceID
		data, _ = r.MarshalBinary()
		resp.AttrOffset = vema.PathRecordAttrOffset
	default:
		resp.Status = vema.StatusUnsupportedMethodAttr
	}
	resp.Data = make([]byte, vema.SADataLen)
	copy(resp.Data, data)
	mad, err := resp.MarshalBinary()
	if err != nil {
		return
	}
	f.log.Debug("SA", zap.Uint16("attr", req.AttrID), zap.Stringer("status", resp.Status), zap.Stringer("peer", p.src))
	f.sendOnce(p.src, f.gsiParams(p.slid, p.srcQPN), mad)
}
