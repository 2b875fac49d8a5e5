package vema

import (
	"github.com/opavnic/opavnic/encap"
)

// put writes v at b[off:], the way golden vectors are written out by hand:
// one call per kernel field, at the kernel's offset.
func put(b []byte, off int, v ...byte) { copy(b[off:], v) }

// seq returns n bytes start, start+1, ... so that every byte of an array field
// is distinct and a shifted field shows up.
func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func gidSeq(start byte) encap.GID { return encap.GID(seq(start, 16)) }
func mac(start byte) [6]byte      { return [6]byte(seq(start, 6)) }

// golden is one hand-written vector: val encodes to want, and want decodes to
// val. zero returns a fresh value of val's type to decode into.
type golden struct {
	name string
	val  codec
	want []byte
	zero func() codec
	// variable is set for types whose decoder takes the whole input (SMP,
	// SAMAD), so trailing bytes are not ignored.
	variable bool
}
