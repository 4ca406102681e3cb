package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

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
