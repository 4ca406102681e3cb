#include "textflag.h"

// func copyRows32(dst, src *float32, k, pstride int, mask uint64, alpha float32)
// For p = 0..k-1: the 32 floats of dst row p get alpha·src[p·pstride + i]
// in the lanes i that mask selects (bits 0-15 the first vector, 16-31 the
// second), 0 in the others; src is read only in the selected lanes.
TEXT ·copyRows32(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ k+16(FP), CX
	MOVQ pstride+24(FP), DX
	SHLQ $2, DX
	MOVQ mask+32(FP), AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	VBROADCASTSS alpha+40(FP), Z31
	TESTQ CX, CX
	JZ done

loop:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K2, Z1
	VMULPS Z31, Z0, Z0
	VMULPS Z31, Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ DX, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
