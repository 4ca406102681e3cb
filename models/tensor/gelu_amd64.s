#include "textflag.h"

// func geluAVX2(x, th, y []float32, k *[17][8]float32)
// Rows of k: 0 geluA, 1 geluC, 2 clamp, 3 -clamp, 4 0.5, 5 1,
// 6..12 A13 A11 A9 A7 A5 A3 A1, 13..16 B6 B4 B2 B0 (each 32 bytes).
TEXT ·geluAVX2(SB), NOSPLIT, $0-80
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ th_base+24(FP), DI
	MOVQ y_base+48(FP), DX
	MOVQ k+72(FP), AX
	VMOVUPS 64(AX), Y10 // clamp
	VMOVUPS 96(AX), Y11 // -clamp
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0       // v
	VMULPS  0(AX), Y0, Y1  // geluA*v
	VMULPS  Y0, Y1, Y1     // *v
	VMULPS  Y0, Y1, Y1     // *v
	VADDPS  Y1, Y0, Y1     // v + geluA*v*v*v
	VMULPS  32(AX), Y1, Y1 // u = geluC*(...)
	VMINPS  Y1, Y10, Y1    // clamp < u ? clamp : u (keeps NaN)
	VMAXPS  Y1, Y11, Y1    // -clamp > u ? -clamp : u
	VMULPS  Y1, Y1, Y2     // u2
	VMOVUPS 192(AX), Y3    // p = A13
	VMULPS  Y2, Y3, Y3
	VADDPS  224(AX), Y3, Y3
	VMULPS  Y2, Y3, Y3
	VADDPS  256(AX), Y3, Y3
	VMULPS  Y2, Y3, Y3
	VADDPS  288(AX), Y3, Y3
	VMULPS  Y2, Y3, Y3
	VADDPS  320(AX), Y3, Y3
	VMULPS  Y2, Y3, Y3
	VADDPS  352(AX), Y3, Y3
	VMULPS  Y2, Y3, Y3
	VADDPS  384(AX), Y3, Y3
	VMOVUPS 416(AX), Y4    // q = B6
	VMULPS  Y2, Y4, Y4
	VADDPS  448(AX), Y4, Y4
	VMULPS  Y2, Y4, Y4
	VADDPS  480(AX), Y4, Y4
	VMULPS  Y2, Y4, Y4
	VADDPS  512(AX), Y4, Y4
	VMULPS  Y3, Y1, Y3     // u*p
	VDIVPS  Y4, Y3, Y3     // t = u*p/q
	VMOVUPS Y3, (DI)
	VMULPS  128(AX), Y0, Y5 // 0.5*v
	VADDPS  160(AX), Y3, Y6 // 1 + t
	VMULPS  Y6, Y5, Y5
	VMOVUPS Y5, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func geluBackAVX2(x, th, dy, dx []float32, k *[4][8]float32)
// Rows of k: 0 0.5, 1 1, 2 geluC, 3 3·geluA.
// dx = dy·(0.5·(1+t) + 0.5·v·(1-t·t)·geluC·(1+3·geluA·v·v)), left to right.
TEXT ·geluBackAVX2(SB), NOSPLIT, $0-104
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ th_base+24(FP), DI
	MOVQ dy_base+48(FP), DX
	MOVQ dx_base+72(FP), R8
	MOVQ k+96(FP), AX
	SHRQ $3, CX
	JZ   backdone

backloop:
	VMOVUPS (SI), Y0       // v
	VMOVUPS (DI), Y1       // t
	VADDPS  32(AX), Y1, Y2 // 1+t
	VMULPS  0(AX), Y2, Y2  // a = 0.5*(1+t)
	VMULPS  0(AX), Y0, Y3  // 0.5*v
	VMULPS  Y1, Y1, Y4     // t*t
	VMOVUPS 32(AX), Y5     // 1
	VSUBPS  Y4, Y5, Y4     // 1-t*t
	VMULPS  Y4, Y3, Y3     // 0.5*v*(1-t*t)
	VMULPS  64(AX), Y3, Y3 // *geluC
	VMULPS  96(AX), Y0, Y6 // 3*geluA*v
	VMULPS  Y0, Y6, Y6     // *v
	VADDPS  32(AX), Y6, Y6 // 1+...
	VMULPS  Y6, Y3, Y3     // b
	VADDPS  Y3, Y2, Y2     // g = a + b
	VMULPS  (DX), Y2, Y2   // dy*g
	VMOVUPS Y2, (R8)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	ADDQ    $32, R8
	DECQ    CX
	JNZ     backloop

backdone:
	VZEROUPPER
	RET
