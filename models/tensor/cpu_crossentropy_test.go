package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// At GPT-2's vocabulary the softmax denominator is a sum of 50257 terms.
// With terms of one size (logits in [-1, 0]) a float32 running sum puts this
// loss 2.2e-8 relative off the float64 reference; summed in float64 it is
// 2.4e-10 off (the rest is exp32's error, which averages out).
func TestCrossEntropyLargeVocabularyPrecision(t *testing.T) {
	const rows, V = 4, 50257
	r := rand.New(rand.NewPCG(50257, 1))
	logits := New(rows, V)
	for i := range logits.Data {
		logits.Data[i] = -float32(r.Float64()) // terms of one size: the float32 sum loses most
	}
	targets := []int32{0, 17, 50000, 50256}
	probs := New(rows, V)
	c, _ := NewCPU("go")
	got := c.CrossEntropy(probs, logits, targets, 0)
	var want float64
	for i := range rows {
		row := logits.Data[i*V : (i+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - mx)
		}
		want += math.Log(s) - (float64(row[targets[i]]) - mx)
	}
	want /= rows
	t.Logf("loss %.12g, float64 reference %.12g: %.2g relative", got, want, math.Abs(got-want)/want)
	if rel := math.Abs(got-want) / want; rel > 2e-9 {
		t.Fatalf("loss %.12g, float64 reference %.12g: %.2g relative, want under 2e-9", got, want, rel)
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
