//go:build !purego

package encap

import (
	"hash/crc32"

	"golang.org/x/sys/cpu"
)

// The ICRC's CRC-32 over a packet body. hash/crc32 folds 64 bytes a round
// with 128-bit carry-less multiplies (about 12 GB/s here, BenchmarkCRC32IEEE);
// where the CPU has VPCLMULQDQ with AVX2, foldIEEE256 folds 128 bytes a
// round with 256-bit ones (crc_amd64.s), hash/crc32 taking the last bytes
// of a length that is not a multiple of 16. The fold constants were computed as
// bitreverse32(x^k mod P) << 1 for P = 0x104C11DB7, a formula checked by
// reproducing hash/crc32's own 512-bit and 128-bit constants with it
// (TestFoldConstants), and the result is checked against hash/crc32 for
// every length up to 4 KiB and at every alignment (TestUpdateIEEE).

//go:noescape
func foldIEEE256(crc uint32, p []byte) uint32

func cpuid7() (ebx, ecx uint32)

// hasVPCLMUL is whether foldIEEE256 can run: AVX2 (with the OS saving the
// YMM registers, which cpu.X86.HasAVX2 includes), PCLMULQDQ, and VPCLMULQDQ
// (CPUID.7.0:ECX bit 10, which golang.org/x/sys/cpu reports only together
// with AVX-512).
var hasVPCLMUL = func() bool {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasPCLMULQDQ {
		return false
	}
	_, ecx := cpuid7()
	return ecx&(1<<10) != 0
}()

// foldMin is the shortest input foldIEEE256 is used for: below it
// hash/crc32 is as fast (BenchmarkUpdateIEEE).
const foldMin = 256

// updateIEEE is crc32.Update(crc, crc32.IEEETable, p).
func updateIEEE(crc uint32, p []byte) uint32 {
	if !hasVPCLMUL || len(p) < foldMin {
		return crc32.Update(crc, crc32.IEEETable, p)
	}
	n := len(p) &^ 15
	crc = ^foldIEEE256(^crc, p[:n])
	if n == len(p) {
		return crc
	}
	return crc32.Update(crc, crc32.IEEETable, p[n:])
}
