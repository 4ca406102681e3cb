package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// The tests in this file run the CUDA backend over the emulator (cbits/cudaemu):
// the NVIDIA libraries' sonames and C symbols, device memory in host memory,
// reference cuBLAS, and NVRTC compiling kernels/*.cu with the host C++
// compiler. They check the kernels' arithmetic and the GEMM conventions
// against the CPU backend, and that every result is the same bits run to run.

var emu struct {
	once sync.Once
	be   *CUDA
	err  error
}

// DeviceTestEnv set to "cuda" runs the tests of this file on the first real
// GPU instead of the emulator (bench/gpu/check.sh does, on a GPU machine).
const DeviceTestEnv = "PPLAUNCH_TEST_DEVICE"

// emuCUDA is the CUDA backend over the emulator, built once per test binary
// (the test skips, saying why, where there is no C++ compiler), or the real
// first GPU under PPLAUNCH_TEST_DEVICE=cuda.
func emuCUDA(t *testing.T) *CUDA {
	t.Helper()
	if os.Getenv(DeviceTestEnv) == "cuda" {
		emu.once.Do(func() { emu.be, emu.err = NewCUDA(0, CUDAOptions{KernelCache: t.TempDir()}) })
		if emu.err != nil {
			t.Fatal(emu.err)
		}
		return emu.be
	}
	dir := cudaemuDir(t)
	emu.once.Do(func() { emu.be, emu.err = NewCUDAFrom([]string{dir}, 0, CUDAOptions{KernelCache: t.TempDir()}) })
	if emu.err != nil {
		t.Fatal(emu.err)
	}
	return emu.be
}

// emulatorElsewhere is for a test that loads the emulator itself: under
// DeviceTestEnv=cuda the real libraries are loaded in this process, and the
// emulator's share their sonames (its cuBLAS would bind to the real
// runtime), so the test runs again in a child process without the variable
// and passes or fails with it. It returns true in that parent, which then
// has nothing left to do.
func emulatorElsewhere(t *testing.T) bool {
	t.Helper()
	if os.Getenv(DeviceTestEnv) != "cuda" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, DeviceTestEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	t.Logf("%s over the emulator in a child process:\n%s", t.Name(), out)
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skip("skipped in the child process (see above)")
	}
	return true
}

// cudaemuDir is where the emulator's libraries are built (once per test binary).
func cudaemuDir(t *testing.T) string { return cudaemu.Dir(t) }

// up copies a host tensor to the device; down copies a device tensor back.
func up(c *CUDA, h *Tensor) *Tensor {
	if h == nil {
		return nil
	}
	d := c.Alloc(h.Shape...)
	c.Upload(d, h.Data)
	return d
}

func down(c *CUDA, d *Tensor) []float32 {
	h := make([]float32, d.Len())
	c.Download(h, d)
	return h
}

// maxRelErr is max |got - want| over the largest |want|: relative to the
// output's scale, so values that happen to be near zero do not dominate.
func maxRelErr(got, want []float32) float64 {
	var diff, scale float64
	for i := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

// check compares the CUDA result with the CPU's: bit for bit when tol is 0,
// else within tol (maxRelErr).
func check(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for _, v := range got {
		if math.IsNaN(float64(v)) {
			t.Fatalf("%s: NaN", what)
		}
	}
	if tol == 0 {
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, want %v bit for bit", what, i, got[i], want[i])
			}
		}
		return
	}
	e := maxRelErr(got, want)
	if e > tol {
		t.Fatalf("%s: max relative error %.3g > %g", what, e, tol)
	}
	t.Logf("%s: max relative error %.2g (bound %g)", what, e, tol)
}

// twice runs f (which returns the CUDA outputs) two times and fails unless
// both runs give the same bits.
func twice(t *testing.T, what string, f func() [][]float32) [][]float32 {
	t.Helper()
	a, b := f(), f()
	for i := range a {
		if !slices.EqualFunc(a[i], b[i], func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
			t.Fatalf("%s: output %d differs between two runs of the same inputs", what, i)
		}
	}
	return a
}

// Tolerances where the CUDA and CPU computations differ in order, each a
// float32 rounding bound with room: gemmTol for products of up to ~260 terms
// summed in another order (γ_k ≈ k·6e-8 at worst, √k·6e-8 typically, relative
// to the output's scale), rowTol for a row's mean and variance summed by 256
// threads instead of four running sums.
const (
	gemmTol = 1e-5
	rowTol  = 1e-5
)

// The op tests below run each operation with float32 activations and with
// bfloat16 ones (acts), against the CPU's float32 operations: for bfloat16,
// on the rounded inputs, with bfloat16 outputs rounded (cuda_bf16_emu_test.go).
var acts = []DType{Float32, BFloat16}

func TestCUDAMatMulAndLinear(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(31, 32))
	for _, act := range acts {
		for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {65, 33, 129}} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					m, n, k := sh[0], sh[1], sh[2]
					a, b := randTensor(r, m, k), randTensor(r, k, n)
					if ta {
						a = randTensor(r, k, m)
					}
					if tb {
						b = randTensor(r, n, k)
					}
					// a and c have the activations' dtype; b stays float32
					// (a bfloat16 product rounds it).
					c0 := randTensor(r, m, n)
					want := rbIf(act, c0)
					cpu.MatMul(want, rbIf(act, a), ta, rbIf(act, b), tb, 0.5, 2)
					da, db := upAs(c, a, act), up(c, b)
					got := twice(t, "matmul", func() [][]float32 {
						dc := upAs(c, c0, act)
						c.MatMul(dc, da, ta, db, tb, 0.5, 2)
						return [][]float32{down(c, dc)}
					})
					checkOut(t, fmt.Sprintf("matmul %v %v ta=%v tb=%v", act, sh, ta, tb), act, got[0], want.Data, gemmTol)
				}
			}
		}
		for _, sh := range [][3]int{{1, 1, 1}, {7, 33, 45}, {130, 100, 257}} {
			testLinear(t, c, cpu, r, act, sh)
		}
	}
}

// testLinear checks Linear and its backward at one shape: x, y, dy and dx in
// act, w, bias and the weight gradients float32.
func testLinear(t *testing.T, c *CUDA, cpu Backend, r *rand.Rand, act DType, sh [3]int) {
	t.Helper()
	n, in, out := sh[0], sh[1], sh[2]
	x, w, bias, res, dy := randTensor(r, n, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, n, out), randTensor(r, n, out)
	bx, bw, bdy := rbIf(act, x), rbIf(act, w), rbIf(act, dy)
	dx, dw, wy := upAs(c, x, act), up(c, w), upAs(c, dy, act)
	cases := []struct {
		name      string
		bias, res *Tensor
		ydt       DType
	}{{"neither", nil, nil, act}, {"bias", bias, nil, act}, {"residual", nil, res, act}, {"both", bias, res, act},
		{"both into float32", bias, res, Float32}}
	for _, bc := range cases {
		want := New(n, out)
		cpu.Linear(want, bx, bw, bc.bias, rbIf(act, bc.res))
		db, dr := up(c, bc.bias), upAs(c, bc.res, act)
		got := twice(t, "linear", func() [][]float32 {
			y := c.AllocAs(bc.ydt, n, out)
			c.Linear(y, dx, dw, db, dr)
			return [][]float32{down(c, y)}
		})
		checkOut(t, fmt.Sprintf("linear %v %v with %s", act, sh, bc.name), bc.ydt, got[0], want.Data, gemmTol)
	}
	wdx, wdw, wdb := New(n, in), New(out, in), New(out)
	cpu.LinearBackwardInput(wdx, bdy, bw)
	cpu.LinearBackwardWeight(wdw, wdb, bdy, bx)
	got := twice(t, "linear backward", func() [][]float32 {
		gx, gw, gb := c.AllocAs(act, n, in), c.Alloc(out, in), c.Alloc(out)
		c.LinearBackwardInput(gx, wy, dw)
		c.LinearBackwardWeight(gw, gb, wy, dx)
		return [][]float32{down(c, gx), down(c, gw), down(c, gb)}
	})
	checkOut(t, fmt.Sprintf("linear dx %v %v", act, sh), act, got[0], wdx.Data, gemmTol)
	check(t, fmt.Sprintf("linear dw %v %v", act, sh), got[1], wdw.Data, gemmTol)
	check(t, fmt.Sprintf("linear dbias %v %v", act, sh), got[2], wdb.Data, gemmTol)
}

func TestCUDALayerNorm(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(33, 34))
	for _, act := range acts {
		for _, sh := range [][2]int{{1, 33}, {70, 100}, {130, 300}} {
			n, d := sh[0], sh[1]
			x, g, b, dy := randTensor(r, n, d), randTensor(r, d), randTensor(r, d), randTensor(r, n, d)
			bx, bdy := rbIf(act, x), rbIf(act, dy)
			y, mean, rstd := New(n, d), New(n), New(n)
			cpu.LayerNorm(y, mean, rstd, bx, g, b, 1e-5)
			dx, dg, db := New(n, d), New(d), New(d)
			cpu.LayerNormBackwardInput(dx, bdy, bx, mean, rstd, g)
			cpu.LayerNormBackwardWeight(dg, db, bdy, bx, mean, rstd)
			cx, cg, cb, cdy := upAs(c, x, act), up(c, g), up(c, b), upAs(c, dy, act)
			cmean, crstd := up(c, mean), up(c, rstd) // the backward starts from the CPU's statistics
			got := twice(t, "layernorm", func() [][]float32 {
				gy, gm, gr := c.AllocAs(act, n, d), c.Alloc(n), c.Alloc(n)
				c.LayerNorm(gy, gm, gr, cx, cg, cb, 1e-5)
				gdx, gdg, gdb := c.AllocAs(act, n, d), c.Alloc(d), c.Alloc(d)
				c.LayerNormBackwardInput(gdx, cdy, cx, cmean, crstd, cg)
				c.LayerNormBackwardWeight(gdg, gdb, cdy, cx, cmean, crstd)
				return [][]float32{down(c, gy), down(c, gm), down(c, gr), down(c, gdx), down(c, gdg), down(c, gdb)}
			})
			// The statistics and the weight gradients are float32 whatever act is.
			for i, w := range [][]float32{y.Data, mean.Data, rstd.Data, dx.Data, dg.Data, db.Data} {
				dt := Float32
				if i == 0 || i == 3 {
					dt = act
				}
				checkOut(t, fmt.Sprintf("layernorm %v %v output %d", act, sh, i), dt, got[i], w, rowTol)
			}
		}
	}
}

func TestCUDAGeluAddScaleCopy(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(35, 36))
	for _, act := range acts {
		for _, n := range []int{1, 1001} {
			x, dy, b := randTensor(r, n), randTensor(r, n), randTensor(r, n)
			for i := range x.Data {
				x.Data[i] *= 4 // reach the clamp of the tanh
			}
			bx, bdy := rbIf(act, x), rbIf(act, dy)
			y, th, dx, sum := New(n), New(n), New(n), New(n)
			cpu.Gelu(y, th, bx)
			cpu.GeluBackward(dx, bdy, bx, rbIf(act, th)) // th is kept in act
			cpu.Add(sum, bx, b)                          // b stays float32: mixed dtypes
			sc := bx.Clone()
			cpu.Scale(sc, 0.37)
			cx, cdy, cb := upAs(c, x, act), upAs(c, dy, act), up(c, b)
			got := twice(t, "gelu", func() [][]float32 {
				gy, gth, gdx, gs, cp := c.AllocAs(act, n), c.AllocAs(act, n), c.AllocAs(act, n), c.AllocAs(act, n), c.AllocAs(act, n)
				c.Gelu(gy, gth, cx)
				c.GeluBackward(gdx, cdy, cx, gth)
				c.Add(gs, cx, cb)
				c.Copy(cp, cx)
				c.Scale(cp, 0.37)
				return [][]float32{down(c, gy), down(c, gth), down(c, gdx), down(c, gs), down(c, cp)}
			})
			// The same float32 operations in the same order, rounded once: the same bits.
			for i, w := range [][]float32{y.Data, th.Data, dx.Data, sum.Data, sc.Data} {
				check(t, fmt.Sprintf("elementwise %v n=%d output %d", act, n, i), got[i], roundIf(act, w), 0)
			}
		}
	}
}

func TestCUDAAttention(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(37, 38))
	for _, act := range acts {
		for _, sh := range [][3]int{{1, 1, 1}, {2, 70, 3}, {1, 33, 2}} {
			B, T, H := sh[0], sh[1], sh[2]
			hd := 5 // D = 15 or 10: not a multiple of 32
			D := H * hd
			qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
			out, probs, dqkv := New(B, T, D), New(B, H, T, T), New(B, T, 3*D)
			cpu.Attention(out, probs, rbIf(act, qkv), H)
			// The backward reads the probabilities as they were kept.
			cpu.AttentionBackward(dqkv, rbIf(act, dout), rbIf(act, qkv), rbIf(act, probs), H)
			cq, cdo := upAs(c, qkv, act), upAs(c, dout, act)
			got := twice(t, "attention", func() [][]float32 {
				o, p, dq := c.AllocAs(act, B, T, D), c.AllocAs(act, B, H, T, T), c.AllocAs(act, B, T, 3*D)
				c.Attention(o, p, cq, H)
				c.AttentionBackward(dq, cdo, cq, p, H)
				return [][]float32{down(c, o), down(c, p), down(c, dq)}
			})
			checkOut(t, fmt.Sprintf("attention out %v %v", act, sh), act, got[0], out.Data, gemmTol)
			checkOut(t, fmt.Sprintf("attention probs %v %v", act, sh), act, got[1], probs.Data, gemmTol)
			// The backward chains three products and the softmax's: twice the
			// forward's bound.
			checkOut(t, fmt.Sprintf("attention dqkv %v %v", act, sh), act, got[2], dqkv.Data, 2*gemmTol)
		}
	}
}

func TestCUDAEmbedAndCrossEntropy(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(39, 40))
	for _, act := range acts {
		for _, sh := range [][4]int{{1, 1, 37, 1}, {3, 5, 37, 33}, {2, 70, 300, 40}} {
			testEmbedAndCrossEntropy(t, c, cpu, r, act, sh)
		}
	}
}

// testEmbedAndCrossEntropy checks at one shape the embeddings (y and dy in
// act, the tables and their gradients float32) and the cross-entropy
// (logits, probabilities and their gradients in act).
func testEmbedAndCrossEntropy(t *testing.T, c *CUDA, cpu Backend, r *rand.Rand, act DType, sh [4]int) {
	t.Helper()
	B, T, V, D := sh[0], sh[1], sh[2], sh[3]
	wte, wpe, dy := randTensor(r, V, D), randTensor(r, T+2, D), randTensor(r, B, T, D)
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(r.IntN(min(V, 7))) // repeats, and rows of wte no token uses
	}
	y, dwte, dwpe := New(B, T, D), New(V, D), New(T+2, D)
	cpu.Embed(y, wte, wpe, tokens)
	cpu.EmbedBackward(dwte, dwpe, rbIf(act, dy), tokens)
	logits := randTensor(r, B*T, V)
	probs, dl := New(B*T, V), New(B*T, V)
	loss := cpu.CrossEntropy(probs, rbIf(act, logits), tokens, 0)
	bprobs := rbIf(act, probs) // the backward starts from the CPU's probabilities, stored in act
	cpu.CrossEntropyBackward(dl, bprobs, tokens, 0.25)
	sevens := slices.Repeat([]float32{7}, V*D)
	cw, cp, cdy, cl, cprobs := up(c, wte), up(c, wpe), upAs(c, dy, act), upAs(c, logits, act), upAs(c, bprobs, act)
	var gloss []float64
	got := twice(t, "embed", func() [][]float32 {
		gy, gw, gp := c.AllocAs(act, B, T, D), c.Alloc(V, D), c.Alloc(T+2, D)
		c.Embed(gy, cw, cp, tokens)
		c.Upload(gw, sevens) // every row is overwritten, used or not
		c.EmbedBackward(gw, gp, cdy, tokens)
		gprobs, gdl := c.AllocAs(act, B*T, V), c.AllocAs(act, B*T, V)
		gloss = append(gloss, c.CrossEntropy(gprobs, cl, tokens, 0))
		c.CrossEntropyBackward(gdl, cprobs, tokens, 0.25)
		return [][]float32{down(c, gy), down(c, gw), down(c, gp), down(c, gprobs), down(c, gdl)}
	})
	if gloss[0] != gloss[1] {
		t.Fatalf("cross entropy %v %v: loss %v then %v", act, sh, gloss[0], gloss[1])
	}
	// A float32 softmax and log per row against the CPU's own exp and its
	// float64 log: a few float32 ulp.
	if math.Abs(gloss[0]-loss) > 1e-6*math.Abs(loss) {
		t.Fatalf("cross entropy %v %v: loss %v, want %v", act, sh, gloss[0], loss)
	}
	check(t, fmt.Sprintf("embed %v %v", act, sh), got[0], roundIf(act, y.Data), 0)
	check(t, fmt.Sprintf("embed dwte %v %v", act, sh), got[1], dwte.Data, 0)
	check(t, fmt.Sprintf("embed dwpe %v %v", act, sh), got[2], dwpe.Data, 0)
	// The CPU's exp32 polynomial against expf: within a few ulp.
	checkOut(t, fmt.Sprintf("cross entropy probs %v %v", act, sh), act, got[3], probs.Data, 1e-6)
	check(t, fmt.Sprintf("cross entropy backward %v %v", act, sh), got[4], roundIf(act, dl.Data), 0)
}

func TestCUDAMemoryAndOptimizers(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{1, 1000, 100003} {
		w, g, m, v, buf := randTensor(r, n), randTensor(r, n), randTensor(r, n), randTensor(r, n), randTensor(r, n)
		for i := range v.Data {
			v.Data[i] *= v.Data[i] // second moments are not negative
		}
		want := cpu.SumSquares(g)
		var sums []float64
		twice(t, "sum of squares", func() [][]float32 {
			sums = append(sums, c.SumSquares(up(c, g)))
			return nil
		})
		if sums[0] != sums[1] || math.Abs(sums[0]-want) > 1e-12*want {
			t.Fatalf("sum of squares n=%d: %v and %v, want %v", n, sums[0], sums[1], want)
		}
		h := AdamWStep{Beta1: 0.9, Beta2: 0.95, GradScale: 0.5, Decay: 0.999, Step: 1e-3, InvBC2: 3.2, Eps: 1e-8}
		sh := SGDStep{GradScale: 0.5, WeightDecay: 0.1, Momentum: 0.9, LR: 0.01}
		aw, am, av, sw, sb := w.Clone(), m.Clone(), v.Clone(), w.Clone(), buf.Clone()
		cpu.AdamW(aw, g, am, av, h)
		cpu.SGD(sw, g, sb, sh)
		cg := up(c, g)
		got := twice(t, "optimizers", func() [][]float32 {
			gw, gm, gv, gsw, gsb := up(c, w), up(c, m), up(c, v), up(c, w), up(c, buf)
			c.AdamW(gw, cg, gm, gv, h)
			c.SGD(gsw, cg, gsb, sh)
			return [][]float32{down(c, gw), down(c, gm), down(c, gv), down(c, gsw), down(c, gsb)}
		})
		for i, wv := range [][]float32{aw.Data, am.Data, av.Data, sw.Data, sb.Data} {
			check(t, fmt.Sprintf("optimizer n=%d output %d", n, i), got[i], wv, 0)
		}
		z := c.Zeros(n)
		if s := c.SumSquares(z); s != 0 {
			t.Fatalf("zeros n=%d: Σx² = %v", n, s)
		}
	}
}

// TestCUDAAllocatorReuses: a second pass over the same shapes takes every
// block from the cache, and freeing returns the bytes in use.
func TestCUDAAllocatorReuses(t *testing.T) {
	c := emuCUDA(t)
	pass := func() {
		ts := []*Tensor{c.Alloc(1000), c.Alloc(3, 77), c.Zeros(1 << 16)}
		for _, x := range ts {
			c.Free(x)
		}
	}
	pass()
	before := c.MemoryStats()
	pass()
	after := c.MemoryStats()
	if after.DriverAllocs != before.DriverAllocs || after.CacheHits != before.CacheHits+3 {
		t.Fatalf("second pass: %+v after %+v, want three cache hits and no driver allocation", after, before)
	}
	if after.InUse != before.InUse || after.Peak < 1<<18 {
		t.Fatalf("in use %d (was %d), peak %d", after.InUse, before.InUse, after.Peak)
	}
}

// TestCUDARefusesForeignTensors: a host tensor given to the CUDA backend is a
// panic that says what to do, never a read of host memory as device memory.
func TestCUDARefusesForeignTensors(t *testing.T) {
	c := emuCUDA(t)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "host tensor") {
			t.Fatalf("panic %v, want one naming a host tensor", r)
		}
	}()
	c.Add(c.Alloc(4), New(4), c.Alloc(4))
}
