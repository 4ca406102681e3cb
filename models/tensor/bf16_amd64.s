#include "textflag.h"

// BF16CONSTS broadcasts the rounding's constants: Y8 1, Y9 0x7fff, Y10
// the sign-clearing mask, Y11 +Inf's bits, Y12 the quiet bit.
#define BF16CONSTS \
	MOVL $1, AX; VMOVD AX, X8; VPBROADCASTD X8, Y8 \
	MOVL $0x7fff, AX; VMOVD AX, X9; VPBROADCASTD X9, Y9 \
	MOVL $0x7fffffff, AX; VMOVD AX, X10; VPBROADCASTD X10, Y10 \
	MOVL $0x7f800000, AX; VMOVD AX, X11; VPBROADCASTD X11, Y11 \
	MOVL $0x00400000, AX; VMOVD AX, X12; VPBROADCASTD X12, Y12

// BF16ROUND rounds the float32 bits in x to nearest even in place of their
// top half (low half garbage), NaN made quiet: ToBF16 before its shift.
// t and n are scratch.
#define BF16ROUND(x, out, t, n) \
	VPSRLD $16, x, out \
	VPAND Y8, out, out \
	VPADDD Y9, out, out \
	VPADDD x, out, out \
	VPAND Y10, x, t \
	VPCMPGTD Y11, t, t \
	VPOR Y12, x, n \
	VPBLENDVB t, n, out, out


// func packBF16AVX2(dst []uint16, src []float32)
// Rounds the first len(src)&^15 values to bfloat16 as ToBF16 does: NaN
// made quiet (sign and top payload kept), everything else rounded to
// nearest even by adding 0x7fff plus the lowest kept bit.
TEXT ·packBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $4, CX
	JZ   pdone
	BF16CONSTS

ploop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1

	BF16ROUND(Y0, Y2, Y3, Y4)
	VPSRLD $16, Y2, Y2

	BF16ROUND(Y1, Y5, Y6, Y7)
	VPSRLD $16, Y5, Y5

	VPACKUSDW Y5, Y2, Y2 // 0-3 8-11 | 4-7 12-15
	VPERMQ $0xD8, Y2, Y2 // 0-15
	VMOVDQU Y2, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  ploop
	VZEROUPPER

pdone:
	RET

// func unpackBF16AVX2(dst []float32, src []uint16)
// Widens the first len(src)&^7 values.
TEXT ·unpackBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   udone

uloop:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  uloop
	VZEROUPPER

udone:
	RET

// func roundBF16AVX2(dst, src []float32)
// Rounds the first len(src)&^7 values to bfloat16 as RoundBF16 does, as
// float32s: the rounding of packBF16AVX2 with the low half cleared.
TEXT ·roundBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   rdone
	BF16CONSTS
	MOVL $0xffff0000, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13 // the bfloat16 half

rloop:
	VMOVDQU (SI), Y0
	BF16ROUND(Y0, Y2, Y3, Y4)
	VPAND  Y13, Y2, Y2
	VMOVDQU Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  rloop
	VZEROUPPER

rdone:
	RET
