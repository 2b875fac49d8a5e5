package fm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/statefile"
)

// The MAC file keeps what the EM knows of each member's MAC across FM
// restarts (docs/management.md §4, step 4): the MAC learned from a trap, if any,
// and the config's fixed `mac` when it was recorded. Without it a restarted
// FM can only guess from the port, which cannot tell a learned MAC from a
// fixed `mac` changed while the FM was down. The file lists the members the
// FM has read or configured; a member it does not list is guessed as
// before.
//
// The same file keeps the FM's saved LIDs (lids.go, docs/management.md §2.3): the
// pool LID each port GUID last had. The field is optional: a file written
// before it (version 1 still) loads with no saved LIDs.
const macFileVersion = 1

type macFile struct {
	Version int        `json:"version"`
	FM      string     `json:"fm"`
	Members []macEntry `json:"members"`
	// Deletes are the DeleteVESWs the EM owes nodes (a member removed by
	// a reload while its node was down): a restarted FM still sends them.
	Deletes []deleteEntry `json:"deletes,omitempty"`
	// LIDs are the saved LIDs, by LID.
	LIDs []lidEntry `json:"lids,omitempty"`
}

// lidEntry is one saved LID: port GUID GUID ("0x" and 16 hex digits) last
// had pool LID LID; Used orders the records for reuse (smaller: seen
// longer ago).
type lidEntry struct {
	GUID string `json:"guid"`
	LID  uint32 `json:"lid"`
	Used uint64 `json:"used"`
}

// deleteEntry is one DeleteVESW owed to the node of config name Node.
type deleteEntry struct {
	VESW  encap.VESWID `json:"vesw"`
	Node  string       `json:"node"`
	VPort uint8        `json:"vport"`
}

// macEntry is one member: Learned is the MAC learned from a trap ("" when
// the member has the config's MAC), Fixed the config's `mac` then ("" when
// derived from the LID).
type macEntry struct {
	VESW    encap.VESWID `json:"vesw"`
	Node    string       `json:"node"`
	VPort   uint8        `json:"vport"`
	Learned string       `json:"learned,omitempty"`
	Fixed   string       `json:"fixed,omitempty"`
}

// savedMAC is a macEntry read back.
type savedMAC struct {
	learned, fixed [6]byte
}

// MACFilePath is where an FM whose control socket is sock keeps its MAC
// file: beside the socket, `.macs.json` for `.sock`; "" for an abstract
// socket (no file).
func MACFilePath(sock string) string {
	if sock == "" || strings.HasPrefix(sock, "@") {
		return ""
	}
	return strings.TrimSuffix(sock, ".sock") + ".macs.json"
}

// SetMACFile makes the FM keep its MAC file at path ("" for none) and reads
// what an earlier run kept there. Call it before Run. A missing file is no
// error (a first run, or /run emptied by a reboot): the FM then guesses
// from the ports as it would without one. A file it cannot read or parse is
// an error, but the FM is set up as for a missing one and writes the file
// anew at its first change; the caller may log the error and go on (the
// daemon does). A file it cannot parse is first renamed to path + ".bad",
// so that the new one does not destroy it.
func (f *FM) SetMACFile(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.macPath, f.saved, f.macWritten, f.owed = path, nil, nil, nil
	f.setLIDRecords(nil)
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fm: MAC file: %w", err)
	}
	st, err := parseStateFile(b)
	if err != nil {
		// Out of the way of the first write, which would destroy it.
		if bad, serr := statefile.SetAside(path); serr == nil {
			return fmt.Errorf("fm: MAC file %s (kept as %s): %w", path, bad, err)
		}
		return fmt.Errorf("fm: MAC file %s: %w", path, err)
	}
	// A member the last run configured that the config no longer has was
	// removed while the FM was down: its node is owed a DeleteVESW, as a
	// reload would have sent it.
	saved, owed := st.saved, st.owed
	for k := range saved {
		if _, _, ok := f.member(k); !ok {
			owed[k] = true
			delete(saved, k)
		}
	}
	for k := range owed {
		if _, _, ok := f.member(k); ok {
			delete(owed, k) // a member again: its push makes the port
		}
	}
	f.saved, f.macWritten = saved, b
	for k := range owed {
		f.oweDelete(k)
	}
	f.setLIDRecords(st.lids)
	return nil
}

// parseMACFile parses a MAC file's members.
func parseMACFile(b []byte) (map[memberKey]savedMAC, error) {
	st, err := parseStateFile(b)
	return st.saved, err
}

// stateFile is what a MAC file holds, parsed.
type stateFile struct {
	saved map[memberKey]savedMAC
	owed  map[memberKey]bool // the DeleteVESWs owed
	lids  map[uint64]savedLID
}

// parseStateFile parses a MAC file: its members, the DeleteVESWs it says
// are owed and the saved LIDs. A saved LID that is malformed (a GUID not
// of the form the FM writes, or 0; a LID that is not a unicast LID), a
// second record of one GUID or one LID, or more records than the FM keeps
// (MaxNodes) make the file an error, as a bad MAC does: the FM never writes
// them.
func parseStateFile(b []byte) (stateFile, error) {
	var mf macFile
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&mf); err != nil {
		return stateFile{}, err
	}
	if mf.Version != macFileVersion {
		return stateFile{}, fmt.Errorf("version %d, want %d", mf.Version, macFileVersion)
	}
	lids, err := parseLIDs(mf.LIDs)
	if err != nil {
		return stateFile{}, err
	}
	saved := make(map[memberKey]savedMAC, len(mf.Members))
	for i, e := range mf.Members {
		var s savedMAC
		for _, x := range []struct {
			text string
			to   *[6]byte
		}{{e.Learned, &s.learned}, {e.Fixed, &s.fixed}} {
			if x.text == "" {
				continue
			}
			hw, err := net.ParseMAC(x.text)
			if err != nil || len(hw) != 6 {
				return stateFile{}, fmt.Errorf("members[%d]: bad MAC %q", i, x.text)
			}
			copy(x.to[:], hw)
		}
		saved[memberKey{e.VESW, e.Node, e.VPort}] = s
	}
	owed := make(map[memberKey]bool, len(mf.Deletes))
	for _, e := range mf.Deletes {
		owed[memberKey{e.VESW, e.Node, e.VPort}] = true
	}
	return stateFile{saved: saved, owed: owed, lids: lids}, nil
}

// parseLIDs checks and collects the file's saved LIDs (parseStateFile).
func parseLIDs(es []lidEntry) (map[uint64]savedLID, error) {
	if len(es) > MaxNodes {
		return nil, fmt.Errorf("lids: %d records, at most %d", len(es), MaxNodes)
	}
	lids := make(map[uint64]savedLID, len(es))
	byLID := make(map[uint32]bool, len(es))
	for i, e := range es {
		g, err := parseGUID(e.GUID)
		if err != nil {
			return nil, fmt.Errorf("lids[%d]: %w", i, err)
		}
		if !encap.Is16BUnicast(e.LID) {
			return nil, fmt.Errorf("lids[%d]: LID 0x%X is not a unicast LID", i, e.LID)
		}
		if _, dup := lids[g]; dup {
			return nil, fmt.Errorf("lids[%d]: GUID %s has a second record", i, e.GUID)
		}
		if byLID[e.LID] {
			return nil, fmt.Errorf("lids[%d]: LID 0x%X has a second record", i, e.LID)
		}
		lids[g], byLID[e.LID] = savedLID{lid: e.LID, used: e.Used}, true
	}
	return lids, nil
}

// parseGUID parses a GUID as formatGUID writes it.
func parseGUID(s string) (uint64, error) {
	if len(s) != 18 || !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("bad GUID %q, want 0x and 16 hex digits", s)
	}
	g, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil || g == 0 {
		return 0, fmt.Errorf("bad GUID %q, want 0x and 16 hex digits, not 0", s)
	}
	return g, nil
}

func formatGUID(g uint64) string { return fmt.Sprintf("0x%016x", g) }

// savedLearned returns the learned MAC (zero for none) the MAC file holds
// for member k, and whether it lists k. A learned MAC recorded under another
// fixed `mac` than the config's is none: a changed `mac` replaces a learned
// one, as a reload does (f.mu held).
func (f *FM) savedLearned(k memberKey, m *Member) ([6]byte, bool) {
	s, ok := f.saved[k]
	if !ok || s.fixed != m.MAC {
		return [6]byte{}, ok
	}
	return s.learned, true
}

// afterMACFile runs push, which follows a port read that may change what
// the MAC file holds, once the file is written (f.mu held): at once without
// a file, else at the next tick, which writes the file once for every push
// waiting (flushMACs). Each write encodes every member: one per port read
// would cost a start-up sweep time quadratic in the members, under f.mu.
func (f *FM) afterMACFile(push func()) {
	if f.macPath == "" {
		push()
		return
	}
	f.macPushes = append(f.macPushes, push)
}

// flushMACs writes the MAC file for the pushes afterMACFile holds, then
// sends them (f.mu held).
func (f *FM) flushMACs() {
	if len(f.macPushes) == 0 {
		return
	}
	f.saveMACs()
	pushes := f.macPushes
	f.macPushes = nil
	for _, push := range pushes {
		push()
	}
}

// saveMACs writes the MAC file when what it would hold changed (f.mu held):
// every config member the FM has read or configured in this run, and, for
// the others, what the file held. It is written before the push that
// follows a change goes out, so that a crash between the two never leaves a
// port with a MAC the file does not know. A write that fails is logged and
// the old file removed (a restart then guesses, as without one); the FM
// goes on.
func (f *FM) saveMACs() {
	if f.macPath == "" {
		return
	}
	mf := macFile{Version: macFileVersion, FM: f.cfg.FM.Name, Members: []macEntry{}}
	for _, v := range f.cfg.VESWs {
		for _, m := range v.Members {
			k := memberKey{v.ID, m.Node, m.VPort}
			s, ok := f.saved[k]
			if st := f.members[k]; st != nil && (st.adopted || st.learned != [6]byte{}) {
				s, ok = savedMAC{learned: st.learned, fixed: m.MAC}, true
			}
			if !ok {
				continue
			}
			e := macEntry{VESW: k.vesw, Node: k.node, VPort: k.vport}
			if s.learned != [6]byte{} {
				e.Learned = net.HardwareAddr(s.learned[:]).String()
			}
			if s.fixed != [6]byte{} {
				e.Fixed = net.HardwareAddr(s.fixed[:]).String()
			}
			mf.Members = append(mf.Members, e)
		}
	}
	sort.Slice(mf.Members, func(i, j int) bool {
		a, b := mf.Members[i], mf.Members[j]
		return keyLess(memberKey{a.VESW, a.Node, a.VPort}, memberKey{b.VESW, b.Node, b.VPort})
	})
	for _, ks := range f.owed {
		for k := range ks {
			mf.Deletes = append(mf.Deletes, deleteEntry{VESW: k.vesw, Node: k.node, VPort: k.vport})
		}
	}
	for _, dels := range f.deletes {
		for vport, d := range dels {
			if d.node != "" && !f.owed[d.node][memberKey{d.vesw, d.node, vport}] {
				mf.Deletes = append(mf.Deletes, deleteEntry{VESW: d.vesw, Node: d.node, VPort: vport})
			}
		}
	}
	sort.Slice(mf.Deletes, func(i, j int) bool {
		a, b := mf.Deletes[i], mf.Deletes[j]
		return keyLess(memberKey{a.VESW, a.Node, a.VPort}, memberKey{b.VESW, b.Node, b.VPort})
	})
	f.lidsDirty = false
	for g, r := range f.lidRecs {
		mf.LIDs = append(mf.LIDs, lidEntry{GUID: formatGUID(g), LID: r.lid, Used: r.used})
	}
	sort.Slice(mf.LIDs, func(i, j int) bool { return mf.LIDs[i].LID < mf.LIDs[j].LID })
	b, err := json.MarshalIndent(mf, "", "  ")
	if err != nil {
		return
	}
	b = append(b, '\n')
	if bytes.Equal(b, f.macWritten) {
		return
	}
	if err := statefile.Write(f.macPath, b); err != nil {
		// The old file no longer says what the ports carry: a restart
		// that trusted it would set its older MACs again. Without it, a
		// restart guesses from the ports.
		msg := "cannot write the MAC file; removed it: a restart will guess learned MACs from the ports"
		if rerr := os.Remove(f.macPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			msg, err = "cannot write or remove the MAC file; a restart may set the older MACs it holds again", errors.Join(err, rerr)
		}
		f.warn("macfile", msg, zap.String("path", f.macPath), zap.Error(err))
		f.macWritten = nil
		return
	}
	f.macWritten = b
}

func keyLess(a, b memberKey) bool {
	if a.vesw != b.vesw {
		return a.vesw < b.vesw
	}
	if a.node != b.node {
		return a.node < b.node
	}
	return a.vport < b.vport
}

// takeOwed moves the DeleteVESWs owed to n's config node (by name: the
// MAC file's, or a reload's for a node the FM had not seen) to n, now
// active (f.mu held). A node the config no longer names matches by its
// NodeDescription. It looks up n's names, not every DeleteVESW owed.
func (f *FM) takeOwed(n *node) {
	f.takeOwedAs(n, n.cfgName)
	if n.cfgName == "" {
		f.takeOwedAs(n, n.name)
	}
}

// takeOwedAs moves the DeleteVESWs owed to the node called name to n.
func (f *FM) takeOwedAs(n *node, name string) {
	ks := f.owed[name]
	delete(f.owed, name)
	for k := range ks {
		if f.deletes[n.portGUID] == nil {
			f.deletes[n.portGUID] = map[uint8]*pendingDelete{}
		}
		if f.deletes[n.portGUID][k.vport] == nil {
			f.deletes[n.portGUID][k.vport] = &pendingDelete{vesw: k.vesw, node: k.node}
		}
	}
}
