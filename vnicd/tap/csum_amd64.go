//go:build !purego

package tap

import "golang.org/x/sys/cpu"

// sumWords (csum_amd64.s) adds 16-bit words 32 bytes at a time in AVX2
// lanes; csumAdd uses it for long inputs where the CPU has AVX2.
//
//go:noescape
func sumWords(p []byte) uint64

// copySumWords (csum_amd64.s) is sumWords(p) that also copies p into dst,
// which holds len(p) bytes and does not overlap p.
//
//go:noescape
func copySumWords(dst, p []byte) uint64

var hasSumWords = cpu.X86.HasAVX2

// csumChunk bounds one sumWords call, so that no 32-bit lane can overflow:
// 2 * (csumChunk/32) * 0xFFFF < 2^32 for 64 KiB, with room to spare.
const csumChunk = 64 << 10
