package vema

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Errors. A short input wraps both ErrShort and io.ErrUnexpectedEOF.
var (
	ErrShort          = fmt.Errorf("vema: short input: %w", io.ErrUnexpectedEOF)
	ErrTooLong        = errors.New("vema: data longer than a MAD holds")
	ErrTooManyEntries = errors.New("vema: more entries than one MAD holds")
	ErrCount          = errors.New("vema: entry count field does not match the entries")
	ErrRange          = errors.New("vema: field value does not fit its bits")
)

func errShort(what string, need, have int) error {
	return fmt.Errorf("%w: %s needs %d bytes, got %d", ErrShort, what, need, have)
}

func errRange(what string, v uint64, bits uint) error {
	return fmt.Errorf("%w: %s = %#x (%d bits)", ErrRange, what, v, bits)
}

// fits reports whether v fits in bits bits.
func fits(v uint64, bits uint) bool { return v>>bits == 0 }

var be = binary.BigEndian

// dec reads big-endian fields in order from a slice whose length the caller
// has already checked.
type dec struct{ b []byte }

func (d *dec) u8() uint8 {
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u16() uint16 {
	v := be.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *dec) u32() uint32 {
	v := be.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) u64() uint64 {
	v := be.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) read(dst []byte) { d.b = d.b[copy(dst, d.b):] }

// marshal is MarshalBinary in terms of AppendBinary.
func marshal(size int, app func([]byte) ([]byte, error)) ([]byte, error) {
	return app(make([]byte, 0, size))
}

func b2u8(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// codec is what every type of the package implements.
type codec interface {
	encoding.BinaryAppender
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

var (
	_ codec = (*MADHeader)(nil)
	_ codec = (*RMPPHeader)(nil)
	_ codec = (*VendorHeader)(nil)
	_ codec = (*MAD)(nil)
	_ codec = (*TrapMAD)(nil)
	_ codec = (*Notice)(nil)
	_ codec = (*VESWPortTrap)(nil)
	_ codec = (*ClassPortInfo)(nil)
	_ codec = (*VESWInfo)(nil)
	_ codec = (*PerVESWPortInfo)(nil)
	_ codec = (*VESWPortInfo)(nil)
	_ codec = (*MACTableHeader)(nil)
	_ codec = (*MACTableEntry)(nil)
	_ codec = (*VESWPortMACEntries)(nil)
	_ codec = (*IfaceMACsHeader)(nil)
	_ codec = (*IfaceMACs)(nil)
	_ codec = (*SummaryCounters)(nil)
	_ codec = (*ErrorCounters)(nil)
	_ codec = (*SMPHeader)(nil)
	_ codec = (*SMP)(nil)
	_ codec = (*NodeInfo)(nil)
	_ codec = (*NodeDescription)(nil)
	_ codec = (*PortInfo)(nil)
	_ codec = (*SMPNotice)(nil)
	_ codec = (*SAHeader)(nil)
	_ codec = (*SAMAD)(nil)
	_ codec = (*PathRecord)(nil)
	_ codec = (*IBPathRecord)(nil)
)
