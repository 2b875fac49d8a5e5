package encap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// Native fuzz targets. Each is seeded from the golden vectors and checks the
// package against a reference written from the spec in this file: the
// receive checks of docs/wire.md §7 (modelCheck), the header words of docs/wire.md §2
// (modelVNIC) and the bit map of header_test.go. Run one with
//
//	go test ./encap -run '^$' -fuzz FuzzDecapVNIC -fuzztime 60s -parallel 1
//
// Crashers go to testdata/fuzz/<target>/ and stay there as regressions.

// modelCheck is docs/wire.md §7's framing checks in order, up to L4.
func modelCheck(pkt []byte, l4 byte) error {
	n := len(pkt)
	le := binary.LittleEndian
	switch {
	case n < 24:
		return encap.ErrShort
	case int(le.Uint32(pkt[0:])>>20&0x7FF)*8 != n:
		return encap.ErrLength
	case le.Uint32(pkt[4:])>>29&3 != 2:
		return encap.ErrL2
	case le.Uint32(pkt[n-5:]) != refICRC(pkt):
		return encap.ErrICRC
	case pkt[8] != l4:
		return encap.ErrL4
	}
	return nil
}

// fixup lets the fuzzer get past the early checks: by the bits of fix it
// makes LEN match the length, sets L2 to 16B, sets L4, and stores a good
// ICRC (last, after the other edits).
func fixup(data []byte, fix, l4 byte) []byte {
	pkt := bytes.Clone(data)
	if fix&1 != 0 && len(pkt) >= 24 {
		pkt = pkt[:min(len(pkt)&^7, encap.MaxPacketLen)]
		setLEN(pkt, uint32(len(pkt)/8))
	}
	if fix&2 != 0 && len(pkt) >= 8 {
		setL2(pkt, 2)
	}
	if fix&4 != 0 && len(pkt) >= 9 {
		setL4(pkt, l4)
	}
	if fix&8 != 0 && len(pkt) >= 24 {
		storeRefICRC(pkt)
	}
	return pkt
}

// words decodes the header fields straight from docs/wire.md §2's words.
type words struct {
	slid, dlid, len, sc, rc, l2, l4, pkey, entropy, age uint32
	becn, fecn, lt                                      bool
}

func decodeWords(pkt []byte) words {
	le := binary.LittleEndian
	w0, w1, w2, w3 := le.Uint32(pkt[0:]), le.Uint32(pkt[4:]), le.Uint32(pkt[8:]), le.Uint32(pkt[12:])
	return words{
		slid: w0&0xFFFFF | (w2>>8&0xF)<<20, dlid: w1&0xFFFFF | (w2>>12&0xF)<<20,
		len: w0 >> 20 & 0x7FF, becn: w0>>31 == 1,
		sc: w1 >> 20 & 0x1F, rc: w1 >> 25 & 7, fecn: w1>>28&1 == 1, l2: w1 >> 29 & 3, lt: w1>>31 == 1,
		l4: w2 & 0xFF, pkey: w2 >> 16, entropy: w3 & 0xFFFF, age: w3 >> 16 & 0xFF,
	}
}

// checkAccessors compares every Header16B getter with decodeWords.
func checkAccessors(t *testing.T, h encap.Header16B) {
	t.Helper()
	w := decodeWords(h)
	if h.SLID() != w.slid || h.DLID() != w.dlid || uint32(h.Len()) != w.len || h.BECN() != w.becn ||
		uint32(h.SC()) != w.sc || uint32(h.RC()) != w.rc || h.FECN() != w.fecn || uint32(h.L2()) != w.l2 ||
		h.LT() != w.lt || uint32(h.L4()) != w.l4 || uint32(h.PKey()) != w.pkey ||
		uint32(h.Entropy()) != w.entropy || uint32(h.Age()) != w.age {
		t.Fatalf("accessors disagree with the spec's words on % x", []byte(h[:16]))
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func FuzzDecapVNIC(f *testing.F) {
	for _, v := range vnicVectors() {
		f.Add(v.wirePacket(), byte(0))
		f.Add(v.wirePacket(), byte(0x0F))
	}
	for _, v := range mgmtVectors() {
		f.Add(v.wirePacket(), byte(0x0D))
	}
	f.Add(tiny(24, 0x78, 0x40), byte(0))
	f.Add(tiny(32, 0x78, 0x47), byte(0))
	f.Add([]byte{}, byte(0))
	f.Add(make([]byte, 23), byte(0x0F))
	f.Fuzz(func(t *testing.T, data []byte, fix byte) {
		pkt := fixup(data, fix, 0x78)
		orig := bytes.Clone(pkt)
		frame, h, vesw, err := encap.DecapVNIC(pkt)
		if !bytes.Equal(pkt, orig) {
			t.Fatal("DecapVNIC wrote into the packet")
		}
		want := modelCheck(pkt, 0x78)
		n := len(pkt)
		end := 0
		if want == nil {
			end = n - 5 - int(pkt[n-1]&7)
			if end < 20 {
				want = encap.ErrTail
			}
		}
		if !errors.Is(err, want) || (err == nil) != (want == nil) {
			t.Fatalf("DecapVNIC err = %v, model says %v", err, want)
		}
		if err != nil {
			if frame != nil || h != nil || vesw != 0 {
				t.Fatal("failed decap returned values")
			}
			return
		}
		if len(frame) != end-20 || (len(frame) > 0 && &frame[0] != &pkt[20]) {
			t.Fatalf("frame is %d bytes, want pkt[20:%d]", len(frame), end)
		}
		if len(h) != 16 || &h[0] != &pkt[0] {
			t.Fatal("header view is not pkt[:16]")
		}
		checkAccessors(t, h)
		if vesw != encap.VESWID(binary.LittleEndian.Uint16(pkt[18:])&0xFFF) {
			t.Fatalf("vesw %#x", vesw)
		}
		f2, v2, err := encap.VNICFrame(pkt)
		if err != nil || len(f2) != len(frame) || v2 != vesw {
			t.Fatalf("VNICFrame disagrees: %v", err)
		}

		// A packet in the form EncapVNIC writes comes out of EncapVNIC again,
		// byte for byte, from its frame and header fields.
		w := decodeWords(pkt)
		if len(frame) < 60 || w.becn || w.fecn || !w.lt || w.age != 0 || pkt[15] != 0 ||
			pkt[16] != 0 || pkt[17] != 0 || pkt[n-1] != 0x40|byte(encap.VNICPad(len(frame))) ||
			!allZero(pkt[end:n-5]) {
			return
		}
		p := encap.VNICParams{SLID: w.slid, DLID: w.dlid, SC: uint8(w.sc), RC: uint8(w.rc),
			PKey: encap.PKey(w.pkey), Entropy: uint16(w.entropy),
			VESWID: encap.VESWID(binary.LittleEndian.Uint16(pkt[18:]))}
		buf := make([]byte, n)
		copy(buf[20:], frame)
		re, err := encap.EncapVNIC(buf, 20, len(frame), &p)
		if err != nil || !bytes.Equal(re, pkt) {
			t.Fatalf("re-encap differs (err %v)", err)
		}
	})
}

func FuzzParseMgmt(f *testing.F) {
	for _, v := range mgmtVectors() {
		f.Add(v.wirePacket(), byte(0))
		f.Add(v.wirePacket(), byte(0x0F))
	}
	f.Add(vnicVectors()[3].wirePacket(), byte(0x0D))
	f.Add(tiny(32, 0x08, 0x43), byte(0))
	f.Add(tiny(24, 0x08, 0x43), byte(0))
	f.Add([]byte{}, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, fix byte) {
		pkt := fixup(data, fix, 0x08)
		orig := bytes.Clone(pkt)
		m, err := encap.ParseMgmt(pkt)
		if !bytes.Equal(pkt, orig) {
			t.Fatal("ParseMgmt wrote into the packet")
		}
		want := modelCheck(pkt, 0x08)
		n := len(pkt)
		if want == nil && (pkt[n-1]&7 != 3 || n < 32) {
			want = encap.ErrTail
		}
		if !errors.Is(err, want) || (err == nil) != (want == nil) {
			t.Fatalf("ParseMgmt err = %v, model says %v", err, want)
		}
		if err != nil {
			if m.Header != nil || m.MAD != nil || m.DestQPN != 0 || m.SrcQPN != 0 {
				t.Fatal("failed parse returned values")
			}
			return
		}
		if len(m.MAD) != n-32 || (len(m.MAD) > 0 && &m.MAD[0] != &pkt[24]) {
			t.Fatalf("MAD is %d bytes, want pkt[24:%d]", len(m.MAD), n-8)
		}
		if len(m.Header) != 16 || &m.Header[0] != &pkt[0] {
			t.Fatal("header view is not pkt[:16]")
		}
		checkAccessors(t, m.Header)
		be := binary.BigEndian
		if m.DestQPN != be.Uint32(pkt[16:])&0xFFFFFF || m.SrcQPN != be.Uint32(pkt[20:])&0xFFFFFF {
			t.Fatalf("QPNs %#x %#x", m.DestQPN, m.SrcQPN)
		}

		// A packet in the form EncapMgmt writes round-trips byte for byte.
		w := decodeWords(pkt)
		if w.becn || w.fecn || w.lt || w.rc != 0 || !allZero(pkt[12:16]) || pkt[16] != 0 ||
			pkt[20] != 0 || !allZero(pkt[n-8:n-5]) || pkt[n-1] != 0x43 {
			return
		}
		p := encap.MgmtParams{SLID: w.slid, DLID: w.dlid, SC: uint8(w.sc), PKey: encap.PKey(w.pkey),
			DestQPN: m.DestQPN, SrcQPN: m.SrcQPN}
		re, err := encap.AppendMgmt(nil, &p, m.MAD)
		if err != nil || !bytes.Equal(re, pkt) {
			t.Fatalf("re-encap differs (err %v)", err)
		}
	})
}

func FuzzHeaderRoundTrip(f *testing.F) {
	for _, v := range vnicVectors() {
		p := v.p
		f.Add(v.hdr[:16], p.SLID, p.DLID, uint16(v.size/8), p.SC, p.RC, uint8(2), uint8(0x78),
			uint8(0), uint16(p.PKey), p.Entropy, uint8(0b100))
	}
	for _, v := range mgmtVectors() {
		p := v.p
		f.Add(v.hdr[:16], p.SLID, p.DLID, uint16(v.size/8), p.SC, uint8(0), uint8(2), uint8(0x08),
			uint8(0), uint16(p.PKey), uint16(0), uint8(0))
	}
	f.Add(bytes.Repeat([]byte{0xFF}, 16), uint32(0), uint32(0), uint16(0), uint8(0), uint8(0),
		uint8(0), uint8(0), uint8(0), uint16(0), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, bg []byte, slid, dlid uint32, length uint16, sc, rc, l2, l4, age uint8,
		pkey, entropy uint16, flags uint8) {
		var b [16]byte
		copy(b[:], bg)
		// Getters read what the spec's words say.
		checkAccessors(t, encap.Header16B(b[:]))

		vals := []uint64{uint64(slid), uint64(length), uint64(flags & 1), uint64(dlid), uint64(sc),
			uint64(rc), uint64(flags >> 1 & 1), uint64(l2), uint64(flags >> 2 & 1), uint64(l4),
			uint64(pkey), uint64(entropy), uint64(age)}
		// Each setter alone changes its own bits and nothing else.
		for i := range hfields {
			checkSet(t, &hfields[i], b[:], vals[i])
		}
		// All setters, in an order the input picks, then all getters.
		h := encap.Header16B(bytes.Clone(b[:]))
		start := int(flags>>3) % len(hfields)
		for k := range hfields {
			i := (start + k) % len(hfields)
			hfields[i].set(h, vals[i])
		}
		for i, f := range hfields {
			if got, want := f.get(h), vals[i]&f.mask(); got != want {
				t.Fatalf("%s = %#x after setting all, want %#x", f.name, got, want)
			}
		}
		if h[15] != b[15] {
			t.Fatal("reserved byte 15 changed")
		}
		checkAccessors(t, h)
	})
}

// modelVNIC builds the packet EncapVNIC must produce, from docs/wire.md §2-§3's
// word formulas and refICRC.
func modelVNIC(frame []byte, p *encap.VNICParams) []byte {
	fl := max(len(frame), 60)
	pad := -(20 + fl + 5) & 7
	size := 20 + fl + pad + 5
	pkt := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(pkt[0:], p.SLID&0xFFFFF|uint32(size/8)<<20)
	le.PutUint32(pkt[4:], p.DLID&0xFFFFF|uint32(p.SC&0x1F)<<20|uint32(p.RC&7)<<25|2<<29|1<<31)
	le.PutUint32(pkt[8:], 0x78|(p.SLID>>20&0xF)<<8|(p.DLID>>20&0xF)<<12|uint32(p.PKey)<<16)
	le.PutUint32(pkt[12:], uint32(p.Entropy))
	le.PutUint16(pkt[18:], uint16(p.VESWID))
	copy(pkt[20:], frame)
	pkt[size-1] = 0x40 | byte(pad)
	storeRefICRC(pkt)
	return pkt
}

func FuzzEncapDecapRoundTrip(f *testing.F) {
	for _, v := range vnicVectors() {
		p := v.p
		f.Add(v.frame, p.SLID, p.DLID, p.SC, p.RC, uint16(p.PKey), p.Entropy, uint16(p.VESWID),
			uint8(0), uint8(0xEE))
	}
	f.Add(make([]byte, encap.MaxFrameLen+1), uint32(1), uint32(2), uint8(0), uint8(0), uint16(0xFFFF),
		uint16(0), uint16(1), uint8(3), uint8(0))
	f.Add([]byte{1}, uint32(0xFFFFFFFF), uint32(0xF0000001), uint8(0xFF), uint8(0xFF), uint16(0),
		uint16(0xFFFF), uint16(0xFFFF), uint8(31), uint8(0xFF))
	f.Fuzz(func(t *testing.T, frame []byte, slid, dlid uint32, sc, rc uint8, pkey, entropy, vesw uint16,
		head, junk uint8) {
		p := encap.VNICParams{SLID: slid, DLID: dlid, SC: sc, RC: rc, PKey: encap.PKey(pkey),
			Entropy: entropy, VESWID: encap.VESWID(vesw)}
		lead := int(head % 32) // headroom beyond the 20 bytes needed
		extra := int(junk % 8) // tailroom beyond what is needed
		fl := max(len(frame), 60)
		size := 20 + fl + (-(20 + fl + 5))&7 + 5
		buf := bytes.Repeat([]byte{junk}, lead+size+extra)
		off := lead + 20
		copy(buf[off:], frame)
		pkt, err := encap.EncapVNIC(buf, off, len(frame), &p)
		if len(frame) > encap.MaxFrameLen {
			if !errors.Is(err, encap.ErrFrameTooLong) {
				t.Fatalf("%d-byte frame: err %v", len(frame), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("EncapVNIC: %v", err)
		}
		if len(pkt) != size || &pkt[0] != &buf[lead] || len(pkt)%8 != 0 {
			t.Fatalf("packet %d bytes at the wrong place, want %d", len(pkt), size)
		}
		if want := modelVNIC(frame, &p); !bytes.Equal(pkt, want) {
			t.Fatalf("packet differs from the spec model")
		}
		for i, c := range buf {
			if (i < lead || i >= lead+size) && c != junk {
				t.Fatalf("byte %d outside the packet was written", i)
			}
		}

		got, h, gotVESW, err := encap.DecapVNIC(pkt)
		if err != nil {
			t.Fatalf("DecapVNIC: %v", err)
		}
		want := append(bytes.Clone(frame), make([]byte, fl-len(frame))...)
		if !bytes.Equal(got, want) {
			t.Fatal("decapsulated frame differs")
		}
		checkVNICHeader(t, h, &p, size)
		if gotVESW != p.VESWID&0xFFF {
			t.Fatalf("vesw %#x", gotVESW)
		}

		// Switches may rewrite BECN, SC, FECN and Age in flight.
		h.SetBECN(true)
		h.SetFECN(true)
		h.SetSC(^sc)
		h.SetAge(junk)
		if got2, _, _, err := encap.DecapVNIC(pkt); err != nil || !bytes.Equal(got2, want) {
			t.Fatalf("DecapVNIC after in-flight changes: %v", err)
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	for _, v := range vnicVectors() {
		f.Add(v.frame)
	}
	f.Add(arpRequest)
	f.Add(vlanUDP)
	f.Add(eth(macA, []uint32{tagAD3, tagQ6}, 0x86DD, ip6(6, ip6A, ip6B, 0, l4(1, 2))))
	f.Add(eth(macA, nil, 0x0800, ip4(6, ip4A, ip4B, 1, 64, 0, l4(1, 2))))
	f.Fuzz(func(t *testing.T, frame []byte) {
		fi := encap.ParseFrame(frame)
		if fi.Multicast != (len(frame) > 0 && frame[0]&1 != 0) || fi.PCP > 7 {
			t.Fatalf("%+v", fi)
		}
		if fi.Tagged {
			tpid := binary.BigEndian.Uint16(frame[12:])
			if (tpid != 0x8100 && tpid != 0x88A8) || fi.PCP != frame[14]>>5 {
				t.Fatalf("tagged %+v", fi)
			}
		}
		switch {
		case fi.L3Off == 0:
		case fi.EtherType == 0x0800:
			if fi.L3Off+20 > len(frame) || fi.Proto != frame[fi.L3Off+9] {
				t.Fatalf("IPv4 %+v", fi)
			}
		case fi.EtherType == 0x86DD:
			if fi.L3Off+40 > len(frame) || fi.Proto != frame[fi.L3Off+6] {
				t.Fatalf("IPv6 %+v", fi)
			}
		default:
			t.Fatalf("L3Off without IP: %+v", fi)
		}
		if fi.L3Off != 0 && (fi.L3Off < 14 || (fi.L3Off-14)%4 != 0 ||
			binary.BigEndian.Uint16(frame[fi.L3Off-2:]) != fi.EtherType) {
			t.Fatalf("L3Off %d", fi.L3Off)
		}
		h := encap.FlowHash(frame, &fi)
		if encap.FlowHash(frame, &fi) != h {
			t.Fatal("FlowHash not stable")
		}
		m := encap.SCMap{}
		_ = m.SC(&fi)
		if c := encap.RCClass(&fi); c%4 != 0 || c > 24 {
			t.Fatalf("RCClass %d", c)
		}
		if encap.SelectRC(0xFFFFFFFF, &fi) != 7 {
			t.Fatal("SelectRC")
		}
	})
}
