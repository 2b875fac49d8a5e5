package encap

import (
	"encoding/binary"
	"hash/crc32"
)

// icrcMask holds, per little-endian header QW, the bits a switch may change
// in flight; the ICRC counts them as ones (docs/wire.md §5): in QW0 BECN (bit 31),
// SC (bits 52-56) and FECN (bit 60), in QW1 Age (bits 48-55).
var icrcMask = [2]uint64{
	becnBit | scMask<<(32+scShift) | fecnBit<<32,
	ageMask << (32 + ageShift),
}

// crcTab8 is the slicing-by-8 table of the IEEE polynomial: crcTab8[0] is
// crc32.IEEETable, crcTab8[k][b] the CRC of byte b followed by k zero bytes.
// hash/crc32 keeps its own copy unexported; this one costs 8 KiB, built once.
var crcTab8 = func() *[8][256]uint32 {
	t := new([8][256]uint32)
	t[0] = *crc32.IEEETable
	for i := range 256 {
		crc := t[0][i]
		for k := 1; k < 8; k++ {
			crc = t[0][byte(crc)] ^ crc>>8
			t[k][i] = crc
		}
	}
	return t
}()

// update8 advances a raw (uncomplemented) CRC register by the 8 bytes of
// the little-endian word v.
func update8(crc uint32, v uint64) uint32 {
	t := crcTab8
	lo := uint32(v) ^ crc
	hi := uint32(v >> 32)
	return t[7][byte(lo)] ^ t[6][byte(lo>>8)] ^ t[5][byte(lo>>16)] ^ t[4][lo>>24] ^
		t[3][byte(hi)] ^ t[2][byte(hi>>8)] ^ t[1][byte(hi>>16)] ^ t[0][hi>>24]
}

// ICRC computes the 16B ICRC of pkt (docs/wire.md §5): CRC-32 (IEEE, as
// crc32.ChecksumIEEE) over every byte before the ICRC, with the variant header
// fields counted as all ones. pkt is the whole packet, at least 24 bytes; the
// last 5 bytes (ICRC and tail) are not read. It neither writes nor keeps pkt.
func ICRC(pkt []byte) uint32 {
	le := binary.LittleEndian
	// The masked header goes through the slicing table a word at a time:
	// copying it into a local array for crc32.Update would make that array
	// escape, and a byte loop costs a table lookup chain per byte.
	crc := update8(^uint32(0), le.Uint64(pkt[0:])|icrcMask[0])
	crc = update8(crc, le.Uint64(pkt[8:])|icrcMask[1])
	// The body goes through updateIEEE (carry-less multiply folding, crc_*.go)
	// in whole 16-byte blocks, the remainder below 16 bytes here, 8 bytes at
	// a time when possible: hash/crc32 would take it a byte at a time.
	body := pkt[HeaderLen : len(pkt)-TrailerLen]
	n := len(body) &^ 15
	crc = ^updateIEEE(^crc, body[:n])
	rest := body[n:]
	if len(rest) >= 8 {
		crc = update8(crc, le.Uint64(rest))
		rest = rest[8:]
	}
	tab := crc32.IEEETable
	for _, b := range rest {
		crc = tab[byte(crc)^b] ^ crc>>8
	}
	return ^crc
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
