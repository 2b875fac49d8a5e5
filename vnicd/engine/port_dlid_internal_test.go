package engine

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// refDLID is portState.dlid as it was, with the MAC table keyed by [6]byte
// and looked up for every frame.
func refDLID(s *portState, table map[[6]byte]uint32, frame []byte, fi *encap.FrameInfo, entropy uint8) uint32 {
	if d, ok := table[[6]byte(frame[0:6])]; ok {
		return d
	}
	if fi.Multicast {
		return s.cfg.VESW.McastDLID & encap.LID16BMask
	}
	if encap.IsLocalMAC(frame) {
		return encap.DLIDFromMAC(frame)
	}
	if dp := s.flows.Port(entropy); dp < encap.MaxDefaultPort {
		return s.cfg.VESW.UcastDLID[dp] & encap.LID16BMask
	}
	return 0
}

// TestDLIDMACMemo checks transmit's DLID choice with the MAC table keyed by
// macKey and the batch's memo of its last lookup against the old [6]byte
// table looked up per frame: 20000 frames in random batches, to MACs in the
// table (some differing from another only in the first two or only in the
// last four bytes, where macKey packs them), not in it, multicast and
// locally administered; runs of one MAC and alternations. MACTable must
// give back the entries.
func TestDLIDMACMemo(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var entries []MACEntry
	table := map[[6]byte]uint32{}
	for i := range 24 {
		var mac [6]byte
		for j := range mac {
			mac[j] = byte(r.Uint32())
		}
		mac[0] &^= 1 // unicast
		if i%2 == 0 {
			mac[0] |= 2 // locally administered, in the table
		} else {
			mac[0] &^= 2
		}
		if i%3 == 1 && i > 0 {
			mac = entries[i-1].MAC
			mac[1] ^= 0x40 // only the first two bytes differ
		}
		if i%3 == 2 && i > 0 {
			mac = entries[i-1].MAC
			mac[5] ^= 0x01 // only the last four bytes differ
		}
		d := 0x100 + uint32(i)
		entries = append(entries, MACEntry{MAC: mac, DLID: d})
		table[mac] = d
	}
	cfg := PortConfig{VESW: VESWConfig{VESWID: 1, PKey: 0x8001, EthMTU: 1500, McastDLID: 0xF00001, DefPortMask: 3}}
	cfg.VESW.UcastDLID[0], cfg.VESW.UcastDLID[1] = 0x20, 0x21
	s := newPortState(cfg, entries)
	got := s.macs
	if len(got) != len(table) {
		t.Fatalf("%d table entries, want %d", len(got), len(table))
	}
	back := map[[6]byte]uint32{}
	var p Port
	p.st.Store(s)
	for _, e := range p.MACTable() {
		back[e.MAC] = e.DLID
	}
	if !maps.Equal(back, table) {
		t.Fatalf("MACTable %v, want %v", back, table)
	}
	frame := make([]byte, 64)
	binary.BigEndian.PutUint16(frame[12:], encap.EtherTypeIPv4)
	var m macMemo
	var prev [6]byte
	for i := range 20000 {
		if r.IntN(16) == 0 {
			m = macMemo{} // a new batch
		}
		var mac [6]byte
		switch r.IntN(6) {
		case 0, 1:
			mac = entries[r.IntN(len(entries))].MAC
		case 2:
			mac = prev
		case 3:
			mac = [6]byte{0x01, 0, 0x5e, 0, 0, byte(r.Uint32())} // multicast
		case 4:
			mac = [6]byte{0x02, 0, 0, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())} // local
		default:
			for j := range mac {
				mac[j] = byte(r.Uint32())
			}
		}
		prev = mac
		copy(frame, mac[:])
		frame[6+r.IntN(6)] = byte(r.Uint32()) // source MAC, for the flow hash
		fi := encap.ParseFrame(frame)
		entropy := encap.FoldEntropy(encap.FlowHash(frame, &fi))
		if got, want := s.dlid(frame, &fi, entropy, &m), refDLID(s, table, frame, &fi, entropy); got != want {
			t.Fatalf("frame %d to % x: DLID %#x, want %#x", i, mac, got, want)
		}
	}
}

var sinkDLID uint32

// BenchmarkMACTableLookup is the MAC table part of a transmit DLID choice,
// per frame of a batch to one destination, in a 24-entry table: the old
// [6]byte key, the uint64 key, and the uint64 key behind the batch's memo
// (portState.dlid, the frame's other choices included).
func BenchmarkMACTableLookup(b *testing.B) {
	old := map[[6]byte]uint32{}
	var entries []MACEntry
	for i := range 24 {
		mac := [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, byte(i)}
		old[mac] = 0x100 + uint32(i)
		entries = append(entries, MACEntry{MAC: mac, DLID: 0x100 + uint32(i)})
	}
	s := newPortState(PortConfig{VESW: VESWConfig{VESWID: 1, PKey: 0x8001, EthMTU: 1500}}, entries)
	frame := make([]byte, 64)
	copy(frame, entries[7].MAC[:])
	binary.BigEndian.PutUint16(frame[12:], encap.EtherTypeIPv4)
	fi := encap.ParseFrame(frame)
	b.Run("array-key", func(b *testing.B) {
		for b.Loop() {
			sinkDLID = old[[6]byte(frame[0:6])]
		}
	})
	b.Run("uint64-key", func(b *testing.B) {
		for b.Loop() {
			sinkDLID = s.macs[macKey(frame)]
		}
	})
	b.Run("memo", func(b *testing.B) {
		var m macMemo
		for b.Loop() {
			sinkDLID = s.dlid(frame, &fi, 0, &m)
		}
	})
}
