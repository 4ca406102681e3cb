package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

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
