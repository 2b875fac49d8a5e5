//go:build !purego

#include "textflag.h"

// CRC-32 (IEEE, reflected) folding with VPCLMULQDQ on 256-bit registers:
// eight 128-bit lanes, 128 bytes a round, each lane folded 1024 bits
// forward per round, then the eight lanes folded into four and those into one, the
// 16-byte blocks left folded in, and the 128 bits reduced to the CRC. The
// method is the carry-less multiplication folding of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel,
// 2009), whose constants for a fold over n bits are k = x^(n+32) mod P and
// x^(n-32) mod P, bit-reflected and shifted left by one (crc_amd64.go says
// how they were made and checked); the last steps are those of hash/crc32's
// ieeeCLMUL.

// x^(1024+32), x^(1024-32): fold a lane over 128 bytes.
DATA fold1024<>+0(SB)/8, $0x1e88ef372
DATA fold1024<>+8(SB)/8, $0x14a7fe880
GLOBL fold1024<>(SB), RODATA, $16

// x^(512+32), x^(512-32): fold a lane over 64 bytes.
DATA fold512<>+0(SB)/8, $0x154442bd4
DATA fold512<>+8(SB)/8, $0x1c6e41596
GLOBL fold512<>(SB), RODATA, $16

// x^(128+32), x^(128-32): fold a lane over 16 bytes.
DATA fold128<>+0(SB)/8, $0x1751997d0
DATA fold128<>+8(SB)/8, $0x0ccaa009e
GLOBL fold128<>(SB), RODATA, $16

// x^64 mod P: 64 bits to 32 plus a carry.
DATA fold64<>+0(SB)/8, $0x163cd6124
GLOBL fold64<>(SB), RODATA, $8

// Barrett reduction: P' and mu = x^64 / P, reflected.
DATA barrett<>+0(SB)/8, $0x1db710641
DATA barrett<>+8(SB)/8, $0x1f7011641
GLOBL barrett<>(SB), RODATA, $16

// func foldIEEE256(crc uint32, p []byte) uint32
// crc is the raw (uninverted) CRC register, and so is the result; len(p) is
// a multiple of 16 and at least 128.
TEXT ·foldIEEE256(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	VMOVDQU 0(SI), Y1
	VMOVDQU 32(SI), Y2
	VMOVDQU 64(SI), Y3
	VMOVDQU 96(SI), Y4
	VMOVD   AX, X0 // zeroes the rest of Y0
	VPXOR   Y0, Y1, Y1
	ADDQ    $128, SI
	SUBQ    $128, CX
	VBROADCASTI128 fold1024<>(SB), Y0
	CMPQ    CX, $128
	JB      reduce

loop:
	VPCLMULQDQ $0x00, Y0, Y1, Y5
	VPCLMULQDQ $0x11, Y0, Y1, Y1
	VPCLMULQDQ $0x00, Y0, Y2, Y6
	VPCLMULQDQ $0x11, Y0, Y2, Y2
	VPCLMULQDQ $0x00, Y0, Y3, Y7
	VPCLMULQDQ $0x11, Y0, Y3, Y3
	VPCLMULQDQ $0x00, Y0, Y4, Y8
	VPCLMULQDQ $0x11, Y0, Y4, Y4
	VPXOR      0(SI), Y5, Y5
	VPXOR      32(SI), Y6, Y6
	VPXOR      64(SI), Y7, Y7
	VPXOR      96(SI), Y8, Y8
	VPXOR      Y5, Y1, Y1
	VPXOR      Y6, Y2, Y2
	VPXOR      Y7, Y3, Y3
	VPXOR      Y8, Y4, Y4
	ADDQ       $128, SI
	SUBQ       $128, CX
	CMPQ       CX, $128
	JAE        loop

reduce:
	// Lanes 0-3 (Y1, Y2) fold 64 bytes forward into lanes 4-7 (Y3, Y4).
	VBROADCASTI128 fold512<>(SB), Y0
	VPCLMULQDQ $0x00, Y0, Y1, Y5
	VPCLMULQDQ $0x11, Y0, Y1, Y1
	VPCLMULQDQ $0x00, Y0, Y2, Y6
	VPCLMULQDQ $0x11, Y0, Y2, Y2
	VPXOR      Y5, Y1, Y1
	VPXOR      Y6, Y2, Y2
	VPXOR      Y1, Y3, Y3
	VPXOR      Y2, Y4, Y4
	// Lanes 4-7 in X1, X2, X3, X4; then each folds 16 bytes into the next.
	VEXTRACTI128 $1, Y3, X2
	VEXTRACTI128 $1, Y4, X6
	VMOVDQA    X3, X1
	VMOVDQA    X4, X3
	VMOVDQA    X6, X4
	VZEROUPPER
	MOVOU      fold128<>(SB), X0
	MOVOA      X1, X5
	PCLMULQDQ  $0x00, X0, X1
	PCLMULQDQ  $0x11, X0, X5
	PXOR       X5, X1
	PXOR       X2, X1
	MOVOA      X1, X5
	PCLMULQDQ  $0x00, X0, X1
	PCLMULQDQ  $0x11, X0, X5
	PXOR       X5, X1
	PXOR       X3, X1
	MOVOA      X1, X5
	PCLMULQDQ  $0x00, X0, X1
	PCLMULQDQ  $0x11, X0, X5
	PXOR       X5, X1
	PXOR       X4, X1

	// The 16-byte blocks left.
	CMPQ       CX, $16
	JB         finish
blocks16:
	MOVOU      0(SI), X2
	MOVOA      X1, X5
	PCLMULQDQ  $0x00, X0, X1
	PCLMULQDQ  $0x11, X0, X5
	PXOR       X5, X1
	PXOR       X2, X1
	ADDQ       $16, SI
	SUBQ       $16, CX
	CMPQ       CX, $16
	JAE        blocks16

finish:
	// 128 bits to 64 (times x^(128-32)), 64 to 32 plus carry (times x^64),
	// then Barrett: the CRC ends in the second dword.
	PCMPEQB    X3, X3
	PCLMULQDQ  $0x01, X1, X0
	PSRLDQ     $8, X1
	PXOR       X0, X1
	MOVOA      X1, X2
	MOVQ       fold64<>(SB), X0
	PSRLQ      $32, X3 // 0x00000000FFFFFFFF in each qword
	PSRLDQ     $4, X2
	PAND       X3, X1
	PCLMULQDQ  $0x00, X0, X1
	PXOR       X2, X1
	MOVOU      barrett<>(SB), X0
	MOVOA      X1, X2
	PAND       X3, X1
	PCLMULQDQ  $0x10, X0, X1
	PAND       X3, X1
	PCLMULQDQ  $0x00, X0, X1
	PXOR       X2, X1
	PEXTRD     $1, X1, AX
	MOVL       AX, ret+32(FP)
	RET

// func cpuid7() (ebx, ecx uint32)
TEXT ·cpuid7(SB), NOSPLIT, $0-8
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	MOVL BX, ebx+0(FP)
	MOVL CX, ecx+4(FP)
	RET
