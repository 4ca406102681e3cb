package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestCUDAMultiTensor: SumSquaresAll gives each tensor the bits SumSquares
// gives it (float32 and bfloat16 tensors, empty ones, lengths that take one
// block and many), and AdamWAll the bits of AdamW on each tensor with its
// own scalars, which are the CPU's.
func TestCUDAMultiTensor(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(73, 74))
	lens := []int{1000, 0, 1, 100003, 2048, 5000}
	var ts []*Tensor
	for i, n := range lens {
		dt := Float32
		if i == 4 {
			dt = BFloat16
		}
		ts = append(ts, upAs(c, randTensor(r, n), dt))
	}
	all := c.SumSquaresAll(ts)
	for i, x := range ts {
		if one := c.SumSquares(x); math.Float64bits(all[i]) != math.Float64bits(one) {
			t.Errorf("Σx² of tensor %d (%d values): %v together, %v alone", i, lens[i], all[i], one)
		}
	}
	if got := c.SumSquaresAll(nil); len(got) != 0 {
		t.Errorf("Σx² of no tensors: %v", got)
	}
	var us []AdamWUpdate
	var want [][]float32
	for i, n := range lens {
		w, g, m, v := randTensor(r, n), randTensor(r, n), randTensor(r, n), randTensor(r, n)
		for j := range v.Data {
			v.Data[j] *= v.Data[j]
		}
		h := AdamWStep{Beta1: 0.9, Beta2: 0.95, GradScale: 0.5, Decay: 1 - 1e-4*float32(i), Step: 1e-3 * float32(i+1), InvBC2: 3.2, Eps: 1e-8}
		us = append(us, AdamWUpdate{W: up(c, w), G: up(c, g), M: up(c, m), V: up(c, v), H: h})
		cpu.AdamW(w, g, m, v, h)
		want = append(want, w.Data, m.Data, v.Data)
	}
	c.AdamWAll(us)
	for i, u := range us {
		for j, x := range []*Tensor{u.W, u.M, u.V} {
			check(t, fmt.Sprintf("adamw tensor %d (%d values) output %d", i, lens[i], j), down(c, x), want[3*i+j], 0)
		}
	}
}
