package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// flashShapes are (B, T, H, hd): T of one position, not a multiple of a tile
// (32 on CUDA's forward, 16 on its backward, 64 on the CPU), and head widths
// 32, 64, 80 and 128.
var flashShapes = [][4]int{{1, 1, 1, 32}, {2, 70, 2, 32}, {1, 65, 1, 64}, {1, 33, 2, 80}, {1, 130, 1, 128}}

// toBF16 is t rounded to a bfloat16 tensor; asF32 widens any tensor to a
// host float32 slice.
func toBF16(t *Tensor) *Tensor {
	h := NewAs(BFloat16, t.Shape...)
	PackBF16(h.Half, t.Data)
	return h
}

func asF32(t *Tensor) []float32 {
	if t.DType() == Float32 {
		return t.Data
	}
	d := make([]float32, t.Len())
	UnpackBF16(d, t.Half)
	return d
}

// unfusedCPU is the reference path: Attention, AttentionBackward.
func unfusedCPU(be *CPU, qkv, dout *Tensor, H int) (out, dqkv []float32) {
	B, T, D := qkv.Shape[0], qkv.Shape[1], qkv.Shape[2]/3
	o, p, d := New(B, T, D), New(B, H, T, T), New(B, T, 3*D)
	be.Attention(o, p, qkv, H)
	be.AttentionBackward(d, dout, qkv, p, H)
	return o.Data, d.Data
}

// fusedCPU runs FlashAttention and its backward at dtype dt for every
// activation (lse stays float32).
func fusedCPU(be *CPU, qkv, dout *Tensor, H int, dt DType) (out, lse, dqkv []float32) {
	B, T, D := qkv.Shape[0], qkv.Shape[1], qkv.Shape[2]/3
	q, do := qkv, dout
	if dt == BFloat16 {
		q, do = toBF16(qkv), toBF16(dout)
	}
	o, l, d := NewAs(dt, B, T, D), New(B, H, T), NewAs(dt, B, T, 3*D)
	be.FlashAttention(o, l, q, H)
	be.FlashAttentionBackward(d, do, q, o, l, H)
	return asF32(o), l.Data, asF32(d)
}

// refLSE is log Σ_{j≤i} exp(q_i·k_j/√hd) in float64.
func refLSE(qkv *Tensor, b, h, i, T, D, hd int) float64 {
	at := func(row, col int) float64 { return float64(qkv.Data[(b*T+row)*3*D+col]) }
	s := make([]float64, i+1)
	mx := math.Inf(-1)
	for j := range s {
		for c := range hd {
			s[j] += at(i, h*hd+c) * at(j, D+h*hd+c)
		}
		s[j] /= math.Sqrt(float64(hd))
		mx = math.Max(mx, s[j])
	}
	var z float64
	for _, v := range s {
		z += math.Exp(v - mx)
	}
	return mx + math.Log(z)
}

// TestCPUFlashAttentionMatchesUnfused: in float32 the fused attention sums
// the same products in another order (blocks of keys, an online rescaling,
// exp of s - lse instead of a division): the outputs agree to float32
// rounding of sums of up to 130 terms, the gradients (three chained
// products) to twice that. lse agrees with float64 to a few ulp of its size.
// Two runs give the same bits.
func TestCPUFlashAttentionMatchesUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, sh := range append(flashShapes, [4]int{2, 5, 3, 7}) { // the CPU takes any head width
		B, T, H, hd := sh[0], sh[1], sh[2], sh[3]
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		for _, be := range backends(t) {
			wo, wd := unfusedCPU(be, qkv, dout, H)
			o, l, d := fusedCPU(be, qkv, dout, H, Float32)
			o2, l2, d2 := fusedCPU(be, qkv, dout, H, Float32)
			name := fmt.Sprintf("%s %v", be.Name(), sh)
			sameBits(t, name+" out twice", o, o2)
			sameBits(t, name+" lse twice", l, l2)
			sameBits(t, name+" dqkv twice", d, d2)
			closeTo(t, name+" out", o, wo, 1e-5)
			closeTo(t, name+" dqkv", d, wd, 2e-5)
			for b := range B {
				for h := range H {
					for i := range T {
						want := refLSE(qkv, b, h, i, T, D, hd)
						if got := float64(l[(b*H+h)*T+i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("%s lse[%d,%d,%d] = %v, want %v", name, b, h, i, got, want)
						}
					}
				}
			}
		}
	}
}

// TestCPUFlashAttentionBF16: with bf16 storage the inputs are read exactly
// (rounded beforehand, as the unfused reference is fed) and each output is
// rounded once, so each value is within half a bf16 ulp (2⁻⁸ relative: 8 significant bits) of
// the float32 result, which is itself within float32 noise of the unfused
// one: 2⁻⁸ of the output's scale plus the float32 bound.
func TestCPUFlashAttentionBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	be := gonumCPU()
	for _, sh := range flashShapes {
		B, T, H, hd := sh[0], sh[1], sh[2], sh[3]
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		qkv, dout = fromBF16(toBF16(qkv)), fromBF16(toBF16(dout))
		wo, wd := unfusedCPU(be, qkv, dout, H)
		o, _, d := fusedCPU(be, qkv, dout, H, BFloat16)
		o2, _, d2 := fusedCPU(be, qkv, dout, H, BFloat16)
		name := fmt.Sprintf("bf16 %v", sh)
		sameBits(t, name+" out twice", o, o2)
		sameBits(t, name+" dqkv twice", d, d2)
		if e := maxRelErr(o, wo); e > 0x1p-8+1e-5 {
			t.Fatalf("%s out: max relative error %.3g", name, e)
		}
		// The backward reads out and dout as bf16 for the row dots D: one
		// more rounding of its inputs, so twice the bound.
		if e := maxRelErr(d, wd); e > 2*(0x1p-8+2e-5) {
			t.Fatalf("%s dqkv: max relative error %.3g", name, e)
		}
		for i := range o {
			if o[i] != RoundBF16(o[i]) {
				t.Fatalf("%s: out[%d] = %v is not a bfloat16", name, i, o[i])
			}
		}
	}
}

func fromBF16(h *Tensor) *Tensor {
	t := New(h.Shape...)
	UnpackBF16(t.Data, h.Half)
	return t
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: [%d] %v then %v", what, i, a[i], b[i])
		}
	}
}

// TestCPUFlashAttentionFiniteDifferences checks the fused gradients against
// central differences of L = Σ dout·out, in float64 around float32 values:
// the step 1e-2 keeps float32 rounding (≈1e-7·|L|/h) below the truncation
// error (≈h²), so 2e-3 of the gradient's scale is a loose bound.
func TestCPUFlashAttentionFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	be := gonumCPU()
	B, T, H, hd := 1, 9, 2, 3
	D := H * hd
	qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
	_, _, grad := fusedCPU(be, qkv, dout, H, Float32)
	loss := func() float64 {
		o, l := New(B, T, D), New(B, H, T)
		be.FlashAttention(o, l, qkv, H)
		var s float64
		for i, v := range o.Data {
			s += float64(v) * float64(dout.Data[i])
		}
		return s
	}
	var scale float64
	for _, g := range grad {
		scale = math.Max(scale, math.Abs(float64(g)))
	}
	const h = 1e-2
	for i := range qkv.Data {
		x := qkv.Data[i]
		qkv.Data[i] = x + h
		up := loss()
		qkv.Data[i] = x - h
		dn := loss()
		qkv.Data[i] = x
		fd := (up - dn) / (2 * h)
		if math.Abs(fd-float64(grad[i])) > 2e-3*scale {
			t.Fatalf("dqkv[%d] = %v, finite difference %v", i, grad[i], fd)
		}
	}
}

// TestCPUFlashAttentionMemoryIsLinear: no scratch buffer of the fused path
// grows with T² — at T=1024 the largest is a few T·hd floats, where the
// unfused path holds B·H·T·T probabilities.
func TestCPUFlashAttentionMemoryIsLinear(t *testing.T) {
	var mu sync.Mutex
	largest := 0
	flashScratchHook = func(n int) {
		mu.Lock()
		largest = max(largest, n)
		mu.Unlock()
	}
	defer func() { flashScratchHook = nil }()
	r := rand.New(rand.NewPCG(67, 68))
	B, T, H, hd := 1, 1024, 2, 32
	D := H * hd
	qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
	fusedCPU(gonumCPU(), qkv, dout, H, Float32)
	bound := 5*T*hd + T + 2*flashBlock*hd + 2*flashBlock*flashBlock
	if largest == 0 || largest > bound || largest >= T*T/4 {
		t.Fatalf("largest scratch %d floats, want at most %d (linear in T) and far below T² = %d", largest, bound, T*T)
	}
}

// TestFlashAttentionRefusesBadShapes: wrong lse shapes or dtypes are a
// panic naming the operand.
func TestFlashAttentionRefusesBadShapes(t *testing.T) {
	be := gonumCPU()
	for _, c := range []struct {
		name string
		lse  *Tensor
		want string
	}{{"lse shape", New(1, 2, 5), "shape"}, {"lse dtype", NewAs(BFloat16, 1, 2, 4), "float32"}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Fatalf("%s: panic %v, want one saying %q", c.name, r, c.want)
				}
			}()
			be.FlashAttention(New(1, 4, 8), c.lse, New(1, 4, 24), 2)
		}()
	}
}

// BenchmarkCPUAttention times forward and backward of the unfused and the
// fused attention side by side (sub-benchmarks alternate with -count) at
// the default model's shape (gpt-tiny: B=16, T=64, 4 heads of 32) and at
// T=1024 (B=2), and of heads 64 wide at T=128 (gpt-small, B=16), 256 and 512.
func BenchmarkCPUAttention(b *testing.B) {
	be, err := NewCPU("auto")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(69, 70))
	for _, sh := range [][4]int{{16, 64, 4, 32}, {16, 128, 4, 64}, {4, 256, 4, 64}, {2, 512, 4, 64}, {2, 1024, 4, 32}} {
		B, T, H, hd := sh[0], sh[1], sh[2], sh[3]
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		out, dqkv, lse, probs := New(B, T, D), New(B, T, 3*D), New(B, H, T), New(B, H, T, T)
		name := fmt.Sprintf("B=%d,T=%d,H=%d,hd=%d", B, T, H, hd)
		b.Run("unfused/"+name, func(b *testing.B) {
			for b.Loop() {
				be.Attention(out, probs, qkv, H)
				be.AttentionBackward(dqkv, dout, qkv, probs, H)
			}
		})
		b.Run("fused/"+name, func(b *testing.B) {
			for b.Loop() {
				be.FlashAttention(out, lse, qkv, H)
				be.FlashAttentionBackward(dqkv, dout, qkv, out, lse, H)
			}
		})
	}
}
