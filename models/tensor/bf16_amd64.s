#include "textflag.h"

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
	MOVL $1, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8 // 1
	MOVL $0x7fff, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9 // 0x7fff
	MOVL $0x7fffffff, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10 // abs mask
	MOVL $0x7f800000, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11 // +Inf
	MOVL $0x00400000, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12 // quiet bit, before the shift

ploop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1

	VPSRLD $16, Y0, Y2
	VPAND  Y8, Y2, Y2
	VPADDD Y9, Y2, Y2
	VPADDD Y0, Y2, Y2        // rounded
	VPAND  Y10, Y0, Y3
	VPCMPGTD Y11, Y3, Y3     // NaN lanes
	VPOR   Y12, Y0, Y4       // quiet NaN
	VPBLENDVB Y3, Y4, Y2, Y2 // NaN ? quiet : rounded
	VPSRLD $16, Y2, Y2

	VPSRLD $16, Y1, Y5
	VPAND  Y8, Y5, Y5
	VPADDD Y9, Y5, Y5
	VPADDD Y1, Y5, Y5
	VPAND  Y10, Y1, Y6
	VPCMPGTD Y11, Y6, Y6
	VPOR   Y12, Y1, Y7
	VPBLENDVB Y6, Y7, Y5, Y5
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
