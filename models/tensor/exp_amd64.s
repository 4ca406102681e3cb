#include "textflag.h"

// func expAVX2(dst, src []float32, shift float32, k *[17][8]float32)
// dst[i] = exp32(src[i] - shift) for the first len(src)&^7 elements, with
// exp32's operations in its order (no fused multiply-add), so the bits are
// the scalar function's. Rows of k: 0 log2e, 1 128.5, 2 int32 128,
// 3 ln2hi, 4 ln2lo, 5..11 1/720 1/120 1/24 1/6 0.5 1 1, 12 int32 127,
// 13 88.37, 14 -87.3, 15 +Inf, 16 unused.
TEXT ·expAVX2(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	VBROADCASTSS shift+48(FP), Y15
	MOVQ k+56(FP), AX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	VSUBPS  Y15, Y0, Y0        // d = x - shift
	VMULPS  0(AX), Y0, Y1      // d*log2e
	VADDPS  32(AX), Y1, Y1     // + 128.5
	VCVTTPS2DQ Y1, Y1          // truncated
	VPSUBD  64(AX), Y1, Y1     // ni = ... - 128
	VCVTDQ2PS Y1, Y2           // n
	VMULPS  96(AX), Y2, Y3     // n*ln2hi
	VSUBPS  Y3, Y0, Y3         // d - n*ln2hi
	VMULPS  128(AX), Y2, Y4    // n*ln2lo
	VSUBPS  Y4, Y3, Y3         // r
	VMULPS  160(AX), Y3, Y4    // p = r/720
	VADDPS  192(AX), Y4, Y4    // + 1/120
	VMULPS  Y3, Y4, Y4
	VADDPS  224(AX), Y4, Y4    // + 1/24
	VMULPS  Y3, Y4, Y4
	VADDPS  256(AX), Y4, Y4    // + 1/6
	VMULPS  Y3, Y4, Y4
	VADDPS  288(AX), Y4, Y4    // + 0.5
	VMULPS  Y3, Y4, Y4
	VADDPS  320(AX), Y4, Y4    // + 1
	VMULPS  Y3, Y4, Y4
	VADDPS  352(AX), Y4, Y4    // + 1
	VPADDD  384(AX), Y1, Y1    // ni + 127
	VPSLLD  $23, Y1, Y1        // 2^n
	VMULPS  Y1, Y4, Y4
	VCMPPS  $0x1e, 416(AX), Y0, Y5 // d > 88.37
	VBLENDVPS Y5, 480(AX), Y4, Y4  // +Inf there
	VCMPPS  $0x11, 448(AX), Y0, Y6 // d < -87.3
	VANDNPS Y4, Y6, Y4             // 0 there
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET
