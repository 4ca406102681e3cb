package models

import (
	"math"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// TestInfer: a two-stage Infer gives probabilities that sum to one at
// every position, the same bits as one stage holding the whole model, and
// the loss Forward computes from them; nothing stays in flight.
func TestInfer(t *testing.T) {
	cfg := Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 16, Heads: 2, Seq: 8, Tied: true}
	be, _ := tensor.NewCPU("gonum")
	tokens := make([]int32, 2*cfg.Seq)
	for i := range tokens {
		tokens[i] = int32(7*i+3) % 256
	}
	whole, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := whole.Infer(Input{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	var stages []*Stage
	for i := range 2 {
		s, err := NewStage(cfg, []int{1, 1}, i, be, StageOptions{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		stages = append(stages, s)
	}
	act, _, err := stages[0].Infer(Input{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := stages[1].Infer(Input{Act: act})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tokens)*cfg.Vocab {
		t.Fatalf("%d probabilities, want %d", len(got), len(tokens)*cfg.Vocab)
	}
	var nll float64
	for pos := range tokens {
		row := got[pos*cfg.Vocab : (pos+1)*cfg.Vocab]
		var sum float64
		for v, p := range row {
			sum += float64(p)
			if p != want[pos*cfg.Vocab+v] {
				t.Fatalf("position %d token %d: %v in two stages, %v in one", pos, v, p, want[pos*cfg.Vocab+v])
			}
		}
		// float32 probabilities of 256 tokens: their sum is within 1e-5 of 1.
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("position %d: probabilities sum to %v", pos, sum)
		}
		nll -= math.Log(float64(row[tokens[(pos+1)%len(tokens)]]))
	}
	targets := make([]int32, len(tokens))
	for i := range targets {
		targets[i] = tokens[(i+1)%len(tokens)]
	}
	out, err := whole.Forward(0, Input{Tokens: tokens, Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	// The same probabilities, logged in float64 here and in float32 there.
	if l := nll / float64(len(tokens)); math.Abs(l-out.Loss) > 1e-4 {
		t.Fatalf("loss from Infer %v, Forward %v", l, out.Loss)
	}
	for _, s := range stages {
		if n := len(s.InFlight()); n != 0 {
			t.Fatalf("stage %d: %d micro-batches in flight after Infer", s.Index(), n)
		}
	}
}
