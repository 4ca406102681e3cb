package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

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
