//go:build !purego

#include "textflag.h"

// The word sums' parts, shared by sumWords and copySumWords. SUM_INIT clears
// the two accumulators (Y0: low words, Y1: high words) and puts 0x0000FFFF in
// each dword of Y7. SUM_ADD(r, t) adds the words of r (clobbered) into them,
// with t as scratch. SUM_REDUCE adds the lanes up into AX.
#define SUM_INIT \
	VPXOR    Y0, Y0, Y0; \
	VPXOR    Y1, Y1, Y1; \
	VPCMPEQD Y7, Y7, Y7; \
	VPSRLD   $16, Y7, Y7

#define SUM_ADD(r, t) \
	VPAND  Y7, r, t; \
	VPSRLD $16, r, r; \
	VPADDD t, Y0, Y0; \
	VPADDD r, Y1, Y1

#define SUM_REDUCE \
	VPADDD       Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPMOVZXDQ    X0, Y0; \
	VPMOVZXDQ    X1, Y1; \
	VPADDQ       Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDQ       X1, X0, X0; \
	VPSHUFD      $0x4E, X0, X1; \
	VPADDQ       X1, X0, X0; \
	VMOVQ        X0, AX; \
	VZEROUPPER

// func sumWords(p []byte) uint64
// The plain sum of p's little-endian 16-bit words; len(p) is a multiple of
// 32, at least 32 and at most csumChunk. Each 32-byte load is split into its
// low and high words, zero-extended into 32-bit lanes of two accumulators;
// at most csumChunk/32 words of 0xFFFF reach one lane, and the lanes are
// widened to 64 bits before the last additions.
TEXT ·sumWords(SB), NOSPLIT, $0-32
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	SUM_INIT

loop:
	VMOVDQU (SI), Y2
	SUM_ADD(Y2, Y3)
	ADDQ    $32, SI
	SUBQ    $32, CX
	JNZ     loop

	SUM_REDUCE
	MOVQ         AX, ret+24(FP)
	RET

// func copySumWords(dst, p []byte) uint64
// sumWords(p) that also copies p into dst, which must hold len(p) bytes and
// not overlap p: each 32-byte load is stored to dst before it is summed, so
// the bytes are read once for both.
TEXT ·copySumWords(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ p_base+24(FP), SI
	MOVQ p_len+32(FP), CX
	SUM_INIT

	CMPQ CX, $64
	JB   copyloop

copyloop64:
	VMOVDQU (SI), Y2
	VMOVDQU 32(SI), Y4
	VMOVDQU Y2, (DI)
	VMOVDQU Y4, 32(DI)
	SUM_ADD(Y2, Y3)
	SUM_ADD(Y4, Y5)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     copyloop64
	TESTQ   CX, CX
	JZ      copydone

copyloop:
	VMOVDQU (SI), Y2
	VMOVDQU Y2, (DI)
	SUM_ADD(Y2, Y3)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $32, CX
	JNZ     copyloop

copydone:
	SUM_REDUCE
	MOVQ         AX, ret+48(FP)
	RET
