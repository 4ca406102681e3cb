package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

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
