package ranks

import (
	"errors"
	"slices"
	"testing"
)

func TestSampleToken(t *testing.T) {
	for _, tc := range []struct {
		name        string
		probs       []float32
		temperature float64
		topK        int
		u           float64
		want        int
	}{
		{"temperature 0 takes the most likely", []float32{0.2, 0.5, 0.3}, 0, 0, 0.99, 1},
		{"top-k 1 takes the most likely", []float32{0.2, 0.5, 0.3}, 1, 1, 0.99, 1},
		{"a tie goes to the lower id", []float32{0.4, 0.2, 0.4}, 0, 0, 0, 0},
		{"u 0 takes the most likely", []float32{0.25, 0.5, 0.25}, 1, 0, 0, 1},
		{"u along the cumulative sum", []float32{0.5, 0.25, 0.25}, 1, 0, 0.6, 1},
		{"u near 1 takes the least likely", []float32{0.5, 0.25, 0.25}, 1, 0, 0.9999, 2},
		// T 0.5 squares the probabilities: 0.25, 0.0625, 0.0625 of 0.375.
		{"a low temperature sharpens", []float32{0.5, 0.25, 0.25}, 0.5, 0, 0.7, 1},
		{"a low temperature sharpens (first)", []float32{0.5, 0.25, 0.25}, 0.5, 0, 0.66, 0},
		{"top-k leaves the rest out", []float32{0.25, 0.5, 0.25}, 1, 2, 0.9999, 0},
		{"a zero probability is never drawn", []float32{0.5, 0.5, 0}, 1, 0, 0.9999999, 1},
		{"u of exactly 1 still draws a token with weight", []float32{0.5, 0.5, 0}, 1, 0, 1, 1},
	} {
		if got := SampleToken(tc.probs, tc.temperature, tc.topK, tc.u); got != tc.want {
			t.Errorf("%s: SampleToken(%v, T %v, top-k %d, u %v) = %d, want %d", tc.name, tc.probs, tc.temperature, tc.topK, tc.u, got, tc.want)
		}
	}
}

// TestTrainSampleAnyLayout: the end-of-training sample is the same text
// through one stage, a two-stage pipeline and an interleaved one, and
// another seed gives another text.
func TestTrainSampleAnyLayout(t *testing.T) {
	run := func(pp int, schedule string, seed uint64) []Sample {
		cfg := tiny(t)
		cfg.PP, cfg.Schedule = pp, schedule
		var got []Sample
		_, errs := trainInProcess(t, cfg, func(rank int, _ <-chan struct{}, job *Job) {
			job.Sample = &SampleOptions{Tokens: 12, Temperature: 1, TopK: 20, Seed: seed, Every: 1}
			if rank == 0 {
				job.OnSample = func(s Sample) { got = append(got, s) }
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("pp %d %s: %v", pp, schedule, err)
		}
		return got
	}
	one := run(1, "1f1b", 5)
	if len(one) != 2 || one[0].Step != 1 || one[1].Step != 2 || len(one[1].Tokens) != 12 {
		t.Fatalf("samples %+v: want 12 tokens after steps 1 and 2", one)
	}
	for _, l := range []struct {
		pp       int
		schedule string
	}{{2, "1f1b"}, {2, "interleaved"}} {
		got := run(l.pp, l.schedule, 5)
		for i := range one {
			if !slices.Equal(got[i].Tokens, one[i].Tokens) || !slices.Equal(got[i].Prompt, one[i].Prompt) {
				t.Errorf("pp %d %s, step %d: sample %v from %v, one stage gives %v from %v", l.pp, l.schedule, got[i].Step, got[i].Tokens, got[i].Prompt, one[i].Tokens, one[i].Prompt)
			}
		}
	}
	if other := run(1, "1f1b", 6); slices.Equal(other[1].Tokens, one[1].Tokens) {
		t.Errorf("seeds 5 and 6 gave the same sample %v", one[1].Tokens)
	}
}

// TestPositionRow: a position's row is found with the padded width of the
// model's rows, and holds the vocabulary's tokens only, never a padding
// column (vocabulary 3 padded to 4 here).
func TestPositionRow(t *testing.T) {
	probs := []float32{
		0.1, 0.2, 0.7, 0, // position 0
		0.5, 0.5, 0, 0, // position 1
		0, 0, 1, 0, // position 2
	}
	for _, c := range []struct {
		pos  int
		want []float32
	}{{0, []float32{0.1, 0.2, 0.7}}, {1, []float32{0.5, 0.5, 0}}, {2, []float32{0, 0, 1}}} {
		got := positionRow(probs, c.pos, 4, 3)
		if !slices.Equal(got, c.want) {
			t.Errorf("position %d: %v, want %v", c.pos, got, c.want)
		}
	}
}
