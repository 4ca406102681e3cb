package tensor

import (
	"math"
	"math/rand/v2"
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
