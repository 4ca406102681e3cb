package tensor

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// fusedCUDA runs the CUDA fused attention and its backward with every
// activation at dt and returns out, lse and dqkv.
func fusedCUDA(c *CUDA, qkv, dout *Tensor, H int, dt DType) [][]float32 {
	return fusedCUDAAs(c, qkv, dout, H, [4]DType{dt, dt, dt, dt})
}

// fusedCUDAAs is fusedCUDA with the dtypes of qkv, out, dout and dqkv each
// given.
func fusedCUDAAs(c *CUDA, qkv, dout *Tensor, H int, dt [4]DType) [][]float32 {
	B, T, D := qkv.Shape[0], qkv.Shape[1], qkv.Shape[2]/3
	q, do := upAs(c, qkv, dt[0]), upAs(c, dout, dt[2])
	o, l, d := c.AllocAs(dt[1], B, T, D), c.Alloc(B, H, T), c.AllocAs(dt[3], B, T, 3*D)
	c.FlashAttention(o, l, q, H)
	c.FlashAttentionBackward(d, do, q, o, l, H)
	res := [][]float32{down(c, o), down(c, l), down(c, d)}
	for _, x := range []*Tensor{q, do, o, l, d} {
		c.Free(x)
	}
	return res
}

// TestCUDAFlashAttention runs the kernels over the emulator (which checks
// shared-memory races, unwritten shared memory and memory two blocks share)
// against the CPU's unfused attention. float32: the same products summed in
// another order (key tiles of 32 and 16, an online rescaling, exp(s - lse)),
// so float32 rounding of sums of up to 130 terms: gemmTol for out, twice for
// the chained backward, lse to a few ulp. bf16: each output rounded once, so
// half a bf16 ulp (2⁻⁸ relative) on top, twice for dqkv whose row dots read
// out and dout in bf16. Each run twice gives the same bits.
func TestCUDAFlashAttention(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(71, 72))
	for _, sh := range flashShapes {
		B, T, H, hd := sh[0], sh[1], sh[2], sh[3]
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		qkv, dout = fromBF16(toBF16(qkv)), fromBF16(toBF16(dout)) // exact in both dtypes
		wo, wd := unfusedCPU(cpu, qkv, dout, H)
		_, wl, _ := fusedCPU(cpu, qkv, dout, H, Float32)
		got := twice(t, "flash attention", func() [][]float32 { return fusedCUDA(c, qkv, dout, H, Float32) })
		check(t, fmt.Sprintf("flash out %v", sh), got[0], wo, gemmTol)
		check(t, fmt.Sprintf("flash lse %v", sh), got[1], wl, gemmTol)
		check(t, fmt.Sprintf("flash dqkv %v", sh), got[2], wd, 2*gemmTol)
		bf := twice(t, "flash attention bf16", func() [][]float32 { return fusedCUDA(c, qkv, dout, H, BFloat16) })
		check(t, fmt.Sprintf("flash bf16 out %v", sh), bf[0], wo, 0x1p-8+gemmTol)
		check(t, fmt.Sprintf("flash bf16 lse %v", sh), bf[1], wl, gemmTol)
		check(t, fmt.Sprintf("flash bf16 dqkv %v", sh), bf[2], wd, 2*(0x1p-8+2*gemmTol))
		// Each operand's dtype is its own: bf16 inputs with float32 outputs,
		// and the other way round.
		for _, mix := range [][4]DType{{BFloat16, Float32, BFloat16, Float32}, {Float32, BFloat16, Float32, BFloat16}} {
			m := fusedCUDAAs(c, qkv, dout, H, mix)
			check(t, fmt.Sprintf("flash %v out %v", mix, sh), m[0], wo, 0x1p-8+gemmTol)
			check(t, fmt.Sprintf("flash %v dqkv %v", mix, sh), m[2], wd, 2*(0x1p-8+2*gemmTol))
		}
	}
}

// TestCUDAFlashAttentionMemoryIsLinear: the fused forward and backward take
// from the caching allocator only the row dots, B·H·T floats, never the
// B·H·T·T probabilities (and scratch) the unfused path does.
func TestCUDAFlashAttentionMemoryIsLinear(t *testing.T) {
	c := emuCUDA(t)
	r := rand.New(rand.NewPCG(73, 74))
	B, T, H, hd := 1, 200, 2, 32
	D := H * hd
	q, do := up(c, randTensor(r, B, T, 3*D)), up(c, randTensor(r, B, T, D))
	o, l, d := c.Alloc(B, T, D), c.Alloc(B, H, T), c.Alloc(B, T, 3*D)
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	c.ResetPeakMemory()
	before := c.MemoryStats()
	c.FlashAttention(o, l, q, H)
	c.FlashAttentionBackward(d, do, q, o, l, H)
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	after := c.MemoryStats()
	grew, allowed := after.Peak-before.InUse, int64(sizeClass(B*H*T*4))
	if grew > allowed || grew >= int64(B*H*T*T*4)/16 {
		t.Fatalf("fused attention took %d bytes at its peak, want at most %d (B·H·T floats); B·H·T·T is %d", grew, allowed, B*H*T*T*4)
	}
	t.Logf("fused attention scratch: %d bytes; the unfused probabilities alone would be %d", grew, B*H*T*T*4)
}

// TestCUDAFlashAttentionRefusesHeadWidths: widths outside 32..128 are a
// panic that says so and what to do; the CPU takes them.
func TestCUDAFlashAttentionRefusesHeadWidths(t *testing.T) {
	c := emuCUDA(t)
	for _, hd := range []int{16, 31, 129, 160} {
		H := 2
		D := H * hd
		q, o, l := c.Alloc(1, 3, 3*D), c.Alloc(1, 3, D), c.Alloc(1, H, 3)
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, fmt.Sprintf("head width %d", hd)) || !strings.Contains(msg, "32..128") || !strings.Contains(msg, "--heads") {
					t.Fatalf("hd %d: panic %q, want one naming the width, the range and the fix", hd, msg)
				}
			}()
			c.FlashAttention(o, l, q, H)
		}()
		if c.FusedAttention(hd, 64) {
			t.Fatalf("FusedAttention(%d) = true on CUDA", hd)
		}
		if !gonumCPU().FusedAttention(hd, 1024) {
			t.Fatalf("the CPU refuses head width %d", hd)
		}
	}
}

// TestFlashGrid: blocks of rows cover T, the (sequence, head) pairs go on y,
// and more pairs than a launch takes is a panic that says what to change.
func TestFlashGrid(t *testing.T) {
	for _, c := range []struct {
		T, rows, bh int
		want        [3]uint32
	}{{1, 32, 1, [3]uint32{1, 1, 1}}, {64, 32, 24, [3]uint32{2, 24, 1}}, {65, 16, 65535, [3]uint32{5, 65535, 1}}} {
		if got := flashGrid("t", c.T, c.rows, c.bh); got != c.want {
			t.Errorf("flashGrid(%d, %d, %d) = %v, want %v", c.T, c.rows, c.bh, got, c.want)
		}
	}
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "65536 sequences × heads") || !strings.Contains(r, "fewer sequences") {
			t.Fatalf("panic %q", r)
		}
	}()
	flashGrid("t", 8, 32, 65536)
}
