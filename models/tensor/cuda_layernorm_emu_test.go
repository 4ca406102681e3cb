package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

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
