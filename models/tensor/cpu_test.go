package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

func randTensor(r *rand.Rand, shape ...int) *Tensor {
	t := New(shape...)
	for i := range t.Data {
		t.Data[i] = float32(r.NormFloat64())
	}
	return t
}

// backends returns every CPU backend this machine can run: gonum and the Go
// kernels always, OpenBLAS where libopenblas.so.0 loads.
func backends(t *testing.T) []*CPU {
	t.Helper()
	goCPU, err := NewCPU("go")
	if err != nil {
		t.Fatal(err)
	}
	bs := []*CPU{gonumCPU(), goCPU}
	if o, err := NewCPU("openblas"); err == nil {
		bs = append(bs, o)
	} else {
		t.Logf("OpenBLAS path not tested: %v", err)
	}
	return bs
}

// naiveGemm is the float64 reference for C = alpha·op(A)·op(B) + beta·C.
func naiveGemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if ta {
					ai = p*lda + i
				}
				if tb {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
		}
	}
}

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("%s[%d] = %v, want %v (tol %g)", what, i, g, w, tol)
		}
	}
}

func TestMatMulAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, be := range backends(t) {
		// The larger shapes take the blocked parallel path (rows, then columns).
		for _, sh := range [][3]int{{3, 5, 7}, {1100, 40, 30}, {40, 1100, 30}} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					m, n, k := sh[0], sh[1], sh[2]
					a := randTensor(r, m, k)
					if ta {
						a = randTensor(r, k, m)
					}
					b := randTensor(r, k, n)
					if tb {
						b = randTensor(r, n, k)
					}
					c := randTensor(r, m, n)
					want := c.Clone()
					naiveGemm(ta, tb, m, n, k, 0.5, a.Data, a.Shape[1], b.Data, b.Shape[1], 2, want.Data, n)
					be.MatMul(c, a, ta, b, tb, 0.5, 2)
					// float32 sums of k=30 products of unit normals, against
					// float64: rounding is ~k·2⁻²⁴·|terms| ≈ 1e-5 relative at worst.
					closeTo(t, fmt.Sprintf("%s %v ta=%v tb=%v", be.Name(), sh, ta, tb), c.Data, want.Data, 1e-4)
				}
			}
		}
	}
}

func TestLinearAndBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, be := range backends(t) {
		n, in, out := 9, 6, 5
		x, w, bias, res := randTensor(r, n, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, n, out)
		y := New(n, out)
		be.Linear(y, x, w, bias, res)
		want := res.Clone()
		for i := range n {
			for j := range out {
				want.Data[i*out+j] += bias.Data[j]
			}
		}
		naiveGemm(false, true, n, out, in, 1, x.Data, in, w.Data, in, 1, want.Data, out)
		// Sums of at most 9 float32 products: rounding stays below 1e-6 relative.
		closeTo(t, be.Name()+" linear", y.Data, want.Data, 1e-5)

		dy := randTensor(r, n, out)
		dx, dw, db := New(n, in), New(out, in), New(out)
		be.LinearBackwardInput(dx, dy, w)
		be.LinearBackwardWeight(dw, db, dy, x)
		wdx, wdw, wdb := New(n, in), New(out, in), New(out)
		naiveGemm(false, false, n, in, out, 1, dy.Data, out, w.Data, in, 0, wdx.Data, in)
		naiveGemm(true, false, out, in, n, 1, dy.Data, out, x.Data, in, 0, wdw.Data, in)
		for i := range n {
			for j := range out {
				wdb.Data[j] += dy.Data[i*out+j]
			}
		}
		closeTo(t, be.Name()+" dx", dx.Data, wdx.Data, 1e-5)
		closeTo(t, be.Name()+" dw", dw.Data, wdw.Data, 1e-5)
		closeTo(t, be.Name()+" db", db.Data, wdb.Data, 1e-5)
	}
}

// attnRef is float64 causal attention for one (batch, head): probabilities
// P[i][j] (j ≤ i) and, given dO, the gradients for q, k and v.
type attnRef struct{ p, dq, dk, dv [][]float64 }

func refAttention(qkv, dout *Tensor, b, h, T, D, hd int) attnRef {
	at := func(row, col int) float64 { return float64(qkv.Data[(b*T+row)*3*D+col]) }
	scale := 1 / math.Sqrt(float64(hd))
	mat := func(n, m int) [][]float64 {
		x := make([][]float64, n)
		for i := range x {
			x[i] = make([]float64, m)
		}
		return x
	}
	r := attnRef{p: mat(T, T), dq: mat(T, hd), dk: mat(T, hd), dv: mat(T, hd)}
	for i := range T {
		mx := math.Inf(-1)
		for j := 0; j <= i; j++ {
			for c := range hd {
				r.p[i][j] += at(i, h*hd+c) * at(j, D+h*hd+c)
			}
			r.p[i][j] *= scale
			mx = math.Max(mx, r.p[i][j])
		}
		var z float64
		for j := 0; j <= i; j++ {
			r.p[i][j] = math.Exp(r.p[i][j] - mx)
			z += r.p[i][j]
		}
		for j := 0; j <= i; j++ {
			r.p[i][j] /= z
		}
	}
	if dout == nil {
		return r
	}
	do := func(i, c int) float64 { return float64(dout.Data[(b*T+i)*D+h*hd+c]) }
	for i := range T {
		dp := make([]float64, i+1)
		var s float64
		for j := 0; j <= i; j++ {
			for c := range hd {
				dp[j] += do(i, c) * at(j, 2*D+h*hd+c)
				r.dv[j][c] += r.p[i][j] * do(i, c)
			}
			s += dp[j] * r.p[i][j]
		}
		for j := 0; j <= i; j++ {
			ds := r.p[i][j] * (dp[j] - s) * scale
			for c := range hd {
				r.dq[i][c] += ds * at(j, D+h*hd+c)
				r.dk[j][c] += ds * at(i, h*hd+c)
			}
		}
	}
	return r
}

// TestAttentionAgainstReference covers one block of positions (T=5) and
// several, the last partial (T=70), forward and backward.
func TestAttentionAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, T := range []int{5, 70} {
		B, H, hd := 2, 3, 4
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		for _, be := range backends(t) {
			out, probs, dqkv := New(B, T, D), New(B, H, T, T), New(B, T, 3*D)
			be.Attention(out, probs, qkv, H)
			be.AttentionBackward(dqkv, dout, qkv, probs, H)
			want, wantD := make([]float32, B*T*D), make([]float32, B*T*3*D)
			for b := range B {
				for h := range H {
					ref := refAttention(qkv, dout, b, h, T, D, hd)
					for i := range T {
						for c := range hd {
							var o float64
							for j := 0; j <= i; j++ {
								o += ref.p[i][j] * float64(qkv.Data[(b*T+j)*3*D+2*D+h*hd+c])
							}
							want[(b*T+i)*D+h*hd+c] = float32(o)
							row := (b*T + i) * 3 * D
							wantD[row+h*hd+c] = float32(ref.dq[i][c])
							wantD[row+D+h*hd+c] = float32(ref.dk[i][c])
							wantD[row+2*D+h*hd+c] = float32(ref.dv[i][c])
						}
					}
				}
			}
			// float32 softmax (exp32 within 4e-7) and sums of up to 70 terms
			// against float64; the backward chains three such products, so
			// its bound is ten times looser.
			closeTo(t, fmt.Sprintf("%s attention T=%d", be.Name(), T), out.Data, want, 1e-5)
			closeTo(t, fmt.Sprintf("%s attention backward T=%d", be.Name(), T), dqkv.Data, wantD, 1e-4)
		}
	}
}

func TestCrossEntropyAndEmbed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	be := gonumCPU()
	logits := randTensor(r, 4, 6)
	targets := []int32{0, 5, 2, 2}
	var want float64
	for i, tg := range targets {
		var z float64
		for _, v := range logits.Data[i*6 : (i+1)*6] {
			z += math.Exp(float64(v))
		}
		want += math.Log(z) - float64(logits.Data[i*6+int(tg)])
	}
	want /= 4
	probs := New(4, 6)
	// A float32 softmax of 6 values against float64: about 1e-7 per row.
	if got := be.CrossEntropy(probs, logits, targets, 0); math.Abs(got-want) > 1e-5 {
		t.Fatalf("cross entropy %v, want %v", got, want)
	}

	wte, wpe := randTensor(r, 6, 3), randTensor(r, 2, 3)
	tokens := []int32{1, 4, 4, 0}
	y := New(2, 2, 3)
	be.Embed(y, wte, wpe, tokens)
	for i, tok := range tokens {
		for j := range 3 {
			if w := wte.Data[int(tok)*3+j] + wpe.Data[(i%2)*3+j]; y.Data[i*3+j] != w {
				t.Fatalf("embed[%d,%d] = %v, want %v", i, j, y.Data[i*3+j], w)
			}
		}
	}
	dy := randTensor(r, 2, 2, 3)
	dwte, dwpe := New(6, 3), New(2, 3)
	be.EmbedBackward(dwte, dwpe, dy, tokens)
	// Token 4 appears twice: its gradient is the sum of rows 1 and 2, added in
	// row order onto zero, so exactly the float32 sum.
	closeTo(t, "dwte[4]", dwte.Data[12:15], []float32{dy.Data[3] + dy.Data[6], dy.Data[4] + dy.Data[7], dy.Data[5] + dy.Data[8]}, 0)
	closeTo(t, "dwpe[0]", dwpe.Data[0:3], []float32{dy.Data[0] + dy.Data[6], dy.Data[1] + dy.Data[7], dy.Data[2] + dy.Data[8]}, 0)
	if slices.ContainsFunc(dwte.Data[6:9], func(v float32) bool { return v != 0 }) {
		t.Fatalf("dwte for unused token 2 is %v, want zeros", dwte.Data[6:9])
	}
}

// TestThreadCountInvariance runs every operation on shapes large enough to be
// cut into several blocks (row and column splits of a product, rows of
// LayerNorm, elements of GELU, column blocks of the embedding gradient) at
// GOMAXPROCS 1, 2 and 3: the results must be identical bit for bit.
func TestThreadCountInvariance(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	N, in, out := 520, 96, 300
	x, w, bias, res := randTensor(r, N, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, N, out)
	wide, tall := randTensor(r, 40, 30), randTensor(r, 1100, 30) // a product cut by columns
	gamma, beta := randTensor(r, out), randTensor(r, out)
	qkv := randTensor(r, 3, 40, 3*32)
	V := 50
	wte, wpe := randTensor(r, V, 600), randTensor(r, 4, 600) // 600 columns: three blocks of colGrain
	tokens, targets := make([]int32, N), make([]int32, N)
	for i := range tokens {
		tokens[i], targets[i] = int32(r.IntN(V)), int32(r.IntN(out))
	}
	for _, be := range backends(t) {
		run := func() [][]float32 {
			y := New(N, out)
			be.Linear(y, x, w, bias, res)
			dx, dw, db := New(N, in), New(out, in), New(out)
			be.LinearBackwardInput(dx, y, w)
			be.LinearBackwardWeight(dw, db, y, x)
			cols := New(40, 1100)
			be.MatMul(cols, wide, false, tall, true, 1, 0)
			ln, mean, rstd := New(N, out), New(N), New(N)
			be.LayerNorm(ln, mean, rstd, y, gamma, beta, 1e-5)
			dln, dg, dbeta := New(N, out), New(out), New(out)
			be.LayerNormBackwardInput(dln, ln, y, mean, rstd, gamma)
			be.LayerNormBackwardWeight(dg, dbeta, ln, y, mean, rstd)
			g, th, dgelu := New(N, out), New(N, out), New(N, out)
			be.Gelu(g, th, y)
			be.GeluBackward(dgelu, ln, y, th)
			probs, dlogits := New(N, out), New(N, out)
			loss := be.CrossEntropy(probs, y, targets, 0)
			be.CrossEntropyBackward(dlogits, probs, targets, 0.5)
			att, ap := New(3, 40, 32), New(3, 4, 40, 40)
			be.Attention(att, ap, qkv, 4)
			dqkv := New(3, 40, 96)
			be.AttentionBackward(dqkv, att, qkv, ap, 4)
			emb := New(N/4, 4, 600)
			be.Embed(emb, wte, wpe, tokens)
			dwte, dwpe := New(V, 600), New(4, 600)
			be.EmbedBackward(dwte, dwpe, emb, tokens)
			return [][]float32{y.Data, dx.Data, dw.Data, db.Data, cols.Data, ln.Data, dln.Data, dg.Data, dbeta.Data,
				g.Data, dgelu.Data, {float32(loss)}, dlogits.Data, att.Data, dqkv.Data, emb.Data, dwte.Data, dwpe.Data}
		}
		old := runtime.GOMAXPROCS(1)
		one := run()
		for _, procs := range []int{2, 3} {
			runtime.GOMAXPROCS(procs)
			got := run()
			for i := range one {
				if !slices.Equal(one[i], got[i]) {
					runtime.GOMAXPROCS(old)
					t.Fatalf("%s: output %d differs between GOMAXPROCS 1 and %d", be.Name(), i, procs)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestLinearBiasAndResidual covers each combination of the optional bias and
// residual against the float64 reference.
func TestLinearBiasAndResidual(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	n, in, out := 7, 5, 4
	x, w, bias, res := randTensor(r, n, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, n, out)
	for _, be := range backends(t) {
		for _, c := range []struct {
			name      string
			bias, res *Tensor
		}{{"neither", nil, nil}, {"bias", bias, nil}, {"residual", nil, res}, {"both", bias, res}} {
			want := New(n, out)
			for i := range n {
				for j := range out {
					if c.bias != nil {
						want.Data[i*out+j] += c.bias.Data[j]
					}
					if c.res != nil {
						want.Data[i*out+j] += c.res.Data[i*out+j]
					}
				}
			}
			naiveGemm(false, true, n, out, in, 1, x.Data, in, w.Data, in, 1, want.Data, out)
			y := randTensor(r, n, out) // overwritten whole
			be.Linear(y, x, w, c.bias, c.res)
			// Five products and two additions per value: float32 rounding is
			// well below 1e-5 relative.
			closeTo(t, be.Name()+" linear with "+c.name, y.Data, want.Data, 1e-5)
		}
	}
}

func TestNewCPUChoice(t *testing.T) {
	if _, err := NewCPU("mkl"); err == nil {
		t.Fatal("NewCPU(mkl) accepted an unknown BLAS")
	}
	g, err := NewCPU("gonum")
	if err != nil || g.Name() != "cpu/gonum" {
		t.Fatalf("NewCPU(gonum) = %v, %v", g, err)
	}
}

func TestLayerNormAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	n, d := 7, 37
	x, g, b := randTensor(r, n, d), randTensor(r, d), randTensor(r, d)
	for i := range x.Data {
		x.Data[i] = x.Data[i]*3 + 5 // an offset mean, as activations have
	}
	for _, be := range backends(t) {
		y, mean, rstd := New(n, d), New(n), New(n)
		be.LayerNorm(y, mean, rstd, x, g, b, 1e-5)
		want := make([]float32, n*d)
		for i := range n {
			row := x.Data[i*d : (i+1)*d]
			var mu, v float64
			for _, xv := range row {
				mu += float64(xv)
			}
			mu /= float64(d)
			for _, xv := range row {
				v += (float64(xv) - mu) * (float64(xv) - mu)
			}
			rs := 1 / math.Sqrt(v/float64(d)+1e-5)
			for j, xv := range row {
				want[i*d+j] = float32((float64(xv)-mu)*rs*float64(g.Data[j]) + float64(b.Data[j]))
			}
		}
		// Mean and variance of 37 values near 5 in float32 lose about
		// 37·2⁻²⁴·5 ≈ 1e-5 of the variance; 2e-5 relative covers it.
		closeTo(t, be.Name()+" layernorm", y.Data, want, 2e-5)
	}
}

// TestGeluVectorMatchesScalar: the vector kernel gives the scalar loop's bits,
// including for saturated, infinite and NaN inputs.
func TestGeluVectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	n := 1003
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 4)
	}
	xs[0], xs[1], xs[2], xs[3] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 30
	t1, y1 := make([]float32, n), make([]float32, n)
	t2, y2 := make([]float32, n), make([]float32, n)
	done := geluVector(xs, t1, y1)
	if done == 0 {
		t.Skip("no vector GELU kernel on this CPU or architecture")
	}
	geluScalar(xs[done:], t1[done:], y1[done:])
	geluScalar(xs, t2, y2)
	dy := make([]float32, n)
	for i := range dy {
		dy[i] = float32(r.NormFloat64())
	}
	d1, d2 := make([]float32, n), make([]float32, n)
	done = geluBackVector(xs, t2, dy, d1)
	geluBackScalar(xs[done:], t2[done:], dy[done:], d1[done:])
	geluBackScalar(xs, t2, dy, d2)
	for i := range xs {
		if math.Float32bits(t1[i]) != math.Float32bits(t2[i]) || math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
			t.Fatalf("x=%v: vector (%v, %v), scalar (%v, %v)", xs[i], t1[i], y1[i], t2[i], y2[i])
		}
		if math.Float32bits(d1[i]) != math.Float32bits(d2[i]) {
			t.Fatalf("x=%v: derivative vector %v, scalar %v", xs[i], d1[i], d2[i])
		}
	}
}

// BenchmarkMatMul times a GPT-sized product (2048×768 from 256, the qkv
// projection of gpt-small at batch 16) on each BLAS path, side by side.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, w, y := randTensor(r, 2048, 256), randTensor(r, 768, 256), New(2048, 768)
	for _, name := range []string{"openblas", "go", "gonum"} {
		be, err := NewCPU(name)
		if err != nil {
			b.Logf("%s: %v", name, err)
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				be.MatMul(y, x, false, w, true, 1, 0)
			}
			b.ReportMetric(2*2048*768*256*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
