package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

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
