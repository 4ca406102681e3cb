package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The exact GELU kernel (erff, expf) against the CPU's float64 erf and exp,
// rounded once: a few float32 ulp apart (then one rounding to bfloat16 for
// bfloat16 activations).
func TestCUDAGeluExact(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	for _, act := range acts {
		// The same inputs at both dtypes: erff's absolute error near Φ = 0
		// is 2^-25, so an input far below zero makes a relative bound meaningless.
		r := rand.New(rand.NewPCG(55, 56))
		for _, n := range []int{1, 1001} {
			x, dy := randTensor(r, n), randTensor(r, n)
			for i := range x.Data {
				x.Data[i] *= 4
			}
			bx := rbIf(act, x)
			y, cdf, dx := New(n), New(n), New(n)
			cpu.GeluExact(y, cdf, bx)
			cpu.GeluExactBackward(dx, rbIf(act, dy), bx, rbIf(act, cdf))
			cx, cdy := upAs(c, x, act), upAs(c, dy, act)
			got := twice(t, "gelu exact", func() [][]float32 {
				gy, gc, gdx := c.AllocAs(act, n), c.AllocAs(act, n), c.AllocAs(act, n)
				c.GeluExact(gy, gc, cx)
				c.Copy(gdx, cdy)
				c.GeluExactBackward(gdx, gdx, cx, gc) // in place, as the model calls it
				return [][]float32{down(c, gy), down(c, gc), down(c, gdx)}
			})
			for i, w := range [][]float32{y.Data, cdf.Data, dx.Data} {
				checkOut(t, fmt.Sprintf("gelu exact %v n=%d output %d", act, n, i), act, got[i], w, 1e-6)
			}
		}
	}
}

// The cross-entropy kernel masks the padding columns as the CPU does: the
// same loss within the float32 bound of the unmasked test, and exact zeros
// in the padding's probabilities and gradients.
func TestCUDACrossEntropyMasksPadding(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(57, 58))
	for _, sh := range [][3]int{{3, 37, 64}, {40, 300, 320}} {
		n, valid, V := sh[0], sh[1], sh[2]
		logits := randTensor(r, n, V)
		for i := range n {
			for j := valid; j < V; j++ {
				logits.Data[i*V+j] = 30
			}
		}
		targets := make([]int32, n)
		for i := range targets {
			targets[i] = int32(r.IntN(valid))
		}
		probs, dl := New(n, V), New(n, V)
		loss := cpu.CrossEntropy(probs, logits, targets, valid)
		cpu.CrossEntropyBackward(dl, probs, targets, 0.5)
		cl := up(c, logits)
		var gloss float64
		got := twice(t, "masked cross entropy", func() [][]float32 {
			gp, gdl := c.Alloc(n, V), c.Alloc(n, V)
			gloss = c.CrossEntropy(gp, cl, targets, valid)
			c.CrossEntropyBackward(gdl, gp, targets, 0.5)
			return [][]float32{down(c, gp), down(c, gdl)}
		})
		if math.Abs(gloss-loss) > 1e-6*math.Abs(loss) {
			t.Fatalf("masked cross entropy %v: loss %v, want %v", sh, gloss, loss)
		}
		check(t, fmt.Sprintf("masked cross entropy probs %v", sh), got[0], probs.Data, 1e-6)
		check(t, fmt.Sprintf("masked cross entropy backward %v", sh), got[1], dl.Data, 1e-6)
		for i := range n {
			for j := valid; j < V; j++ {
				if got[0][i*V+j] != 0 || got[1][i*V+j] != 0 {
					t.Fatalf("masked cross entropy %v: padding [%d,%d] has p %v, gradient %v", sh, i, j, got[0][i*V+j], got[1][i*V+j])
				}
			}
		}
	}
}
