package encap

import (
	"encoding/binary"
	"hash/crc32"
)

// icrcMask holds, for each header byte, the bits a switch may change in
// flight; the ICRC counts them as ones (WIRE.md §5): BECN (QW0 bit 31), SC
// (QW0 bits 52-56), FECN (QW0 bit 60) and Age (QW1 bits 48-55).
var icrcMask = [HeaderLen]byte{
	3:  0x80,        // BECN
	6:  0xF0,        // SC[3:0]
	7:  0x01 | 0x10, // SC[4], FECN
	14: 0xFF,        // Age
}

// ICRC computes the 16B ICRC of pkt (WIRE.md §5): CRC-32 (IEEE, as
// crc32.ChecksumIEEE) over every byte before the ICRC, with the variant header
// fields counted as all ones. pkt is the whole packet, at least 24 bytes; the
// last 5 bytes (ICRC and tail) are not read. It neither writes nor keeps pkt.
func ICRC(pkt []byte) uint32 {
	tab := crc32.IEEETable
	crc := ^uint32(0)
	// The masked header goes through the table byte by byte: copying it into
	// a local array for crc32.Update would make that array escape.
	for i, b := range pkt[:HeaderLen] {
		crc = tab[byte(crc)^(b|icrcMask[i])] ^ crc>>8
	}
	return crc32.Update(^crc, tab, pkt[HeaderLen:len(pkt)-TrailerLen])
}

// CheckICRC reports whether the ICRC stored in pkt matches its contents.
func CheckICRC(pkt []byte) bool {
	n := len(pkt)
	return binary.LittleEndian.Uint32(pkt[n-TrailerLen:]) == ICRC(pkt)
}

// putICRC computes and stores the ICRC of a fully built packet.
func putICRC(pkt []byte) {
	binary.LittleEndian.PutUint32(pkt[len(pkt)-TrailerLen:], ICRC(pkt))
}
