package tensor

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

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
