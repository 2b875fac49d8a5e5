package encap

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

// xPowModP is x^k mod P for the IEEE polynomial, in normal bit order.
func xPowModP(k int) uint32 {
	r := uint64(1)
	for range k {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= 0x104C11DB7
		}
	}
	return uint32(r)
}

// foldConstant is the constant crc_amd64.s multiplies by to fold over n bits
// (k = n+32 or n-32).
func foldConstant(k int) uint64 { return uint64(bits.Reverse32(xPowModP(k))) << 1 }

// TestFoldConstants checks the formula against the constants of hash/crc32
// (and of Intel's paper) for 512- and 128-bit folds, then that it gives the
// 1024-bit constants crc_amd64.s holds.
func TestFoldConstants(t *testing.T) {
	for _, c := range []struct {
		k    int
		want uint64
	}{
		{4*128 + 32, 0x154442bd4}, {4*128 - 32, 0x1c6e41596}, // hash/crc32 r2r1, our fold512
		{128 + 32, 0x1751997d0}, {128 - 32, 0x0ccaa009e}, // hash/crc32 r4r3
		{8*128 + 32, 0x1e88ef372}, {8*128 - 32, 0x14a7fe880}, // our fold1024
	} {
		if got := foldConstant(c.k); got != c.want {
			t.Errorf("x^%d: %#x, want %#x", c.k, got, c.want)
		}
	}
}

// TestUpdateIEEE compares updateIEEE with hash/crc32 for every length up to
// 4 KiB, at every alignment within 32 bytes, from random registers, and for
// jumbo and 64 KB lengths.
func TestUpdateIEEE(t *testing.T) {
	if !hasVPCLMUL {
		t.Log("no VPCLMULQDQ here: updateIEEE is hash/crc32 itself")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 65536+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	check := func(off, n int) {
		t.Helper()
		crc := rng.Uint32()
		p := buf[off : off+n]
		if got, want := updateIEEE(crc, p), crc32.Update(crc, crc32.IEEETable, p); got != want {
			t.Fatalf("offset %d length %d from %#x: %#x, want %#x", off, n, crc, got, want)
		}
	}
	for n := 0; n <= 4096; n++ {
		check(n%32, n)
	}
	for off := range 32 {
		for _, n := range []int{foldMin, 1500, 9000, 9018, 65535, 65536} {
			check(off, n)
		}
	}
}

func BenchmarkUpdateIEEE(b *testing.B) {
	for _, n := range []int{256, 1500, 9000, 65536} {
		p := make([]byte, n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				updateIEEE(0, p)
			}
		})
	}
}
