package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/runconfig"
)

// scalingRequest is a request over a stand-in for train's parser: base are
// the train flags' values, and a world over maxWorld fails the check.
func scalingRequest(base ScalingTrain, maxWorld int, given ...string) ScalingRequest {
	q := ScalingRequest{NProc: "1,2,4", Mode: "weak", Grow: "pp", Steps: 2, Warmup: 1, Train: []string{"--layers", "4"}, Given: map[string]bool{},
		Parse: func([]string) (ScalingTrain, error) { return base, nil },
		Check: func(_ []string, world int) error {
			if world > maxWorld {
				return errors.New("too many stages")
			}
			return nil
		}}
	for _, g := range given {
		q.Given[g] = true
	}
	return q
}

// Everything is checked before the first size runs, in the order the
// flags are read.
func TestScalingRequestPrepare(t *testing.T) {
	base := ScalingTrain{Micro: 8, MicroSize: 4}
	cases := []struct {
		name string
		q    func(q *ScalingRequest)
		err  string
	}{
		{"no measured step", func(q *ScalingRequest) { q.Steps = 0 }, "--steps 0 --warmup-steps 1: want at least one measured step"},
		{"bad counts", func(q *ScalingRequest) { q.NProc = "1,x" }, `--nproc "1,x": want positive integers`},
		{"the train flags", func(q *ScalingRequest) {
			q.Parse = func([]string) (ScalingTrain, error) {
				return ScalingTrain{}, errors.New("train flags: unknown flag --layerz")
			}
		}, "train flags: unknown flag --layerz"},
		{"an owned flag", func(q *ScalingRequest) { q.Given["--checkpoint-dir"] = true }, "train flag --checkpoint-dir: bench scaling sets it at every size"},
		{"the growing dimension", func(q *ScalingRequest) { q.Given["--pp"] = true }, "train flag --pp: bench scaling sets it at every size (--steps and --warmup-steps are bench scaling's own; --grow pp sets --pp)"},
		{"a bad rate", func(q *ScalingRequest) { q.NetNS, q.LinkRate = 2, "fast" }, "--link-rate: "},
		{"a size the model cannot take", func(q *ScalingRequest) { q.NProc = "1,2,8" }, "at world 8 (1 node × 8 ranks, pp 8 × dp 1, 64 micro-batches): too many stages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := scalingRequest(base, 4)
			c.q(&q)
			_, err := q.Prepare(func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
		})
	}
}

// The sizes grow as asked, a --config file's global batch is the smallest
// size's, and each size's train flags come after the user's.
func TestScalingRequestSizes(t *testing.T) {
	q := scalingRequest(ScalingTrain{Micro: 8, MicroSize: 4}, 4)
	s, err := q.Prepare(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sizes) != 3 || s.Sizes[2].PP != 4 || s.Sizes[2].Micro != 32 || s.Sizes[2].MicroSize != 4 {
		t.Fatalf("sizes %+v: want worlds 1, 2, 4 as pp, 32 micro-batches of 4 at 4 (weak scaling)", s.Sizes)
	}
	want := "--layers 4 --pp 4 --dp 1 --microbatches 32 --microbatch-size 4 --steps 4 --eval-every 0 --metrics m.jsonl --profile p.json"
	if got := strings.Join(q.TrainArgs(s.Sizes[2], "m.jsonl", "p.json"), " "); got != want {
		t.Errorf("train args %q, want %q", got, want)
	}
	// train_batch_size 16 in micro-batches of 2 (DeepSpeed's), at dp 1.
	q = scalingRequest(ScalingTrain{Micro: 8, MicroSize: 2, Batch: runconfig.Batch{Total: 16, Micro: true}, Config: "ds.json"}, 4)
	q.Grow, q.NProc = "dp", "1,2"
	if s, err = q.Prepare(func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if z := s.Sizes[0]; z.GlobalBatch != 16 || z.MicroSize != 2 || z.Micro != 8 || s.Sizes[1].GlobalBatch != 32 {
		t.Errorf("sizes %+v: want a global batch of 16 at the smallest, in micro-batches of 2, 32 at the next", s.Sizes)
	}
}
