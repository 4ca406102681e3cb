package main

import (
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// Everything is checked before the first size runs.
func TestScalingPrepare(t *testing.T) {
	cases := []struct {
		name  string
		cmd   benchScalingCmd
		train []string
		err   string
	}{
		{"an owned flag", benchScalingCmd{NProc: "1,2", Mode: "weak", Grow: "pp", Steps: 2}, []string{"--steps", "9"}, "train flag --steps: bench scaling sets it"},
		{"the growing dimension", benchScalingCmd{NProc: "1,2", Mode: "weak", Grow: "pp", Steps: 2}, []string{"--pp=2"}, "train flag --pp"},
		{"an unknown train flag", benchScalingCmd{NProc: "1,2", Mode: "weak", Grow: "pp", Steps: 2}, []string{"--layerz", "2"}, "train flags: unknown flag --layerz: did you mean --layers?"},
		{"a size the model cannot take", benchScalingCmd{NProc: "1,2,8", Mode: "weak", Grow: "pp", Steps: 2}, []string{"--layers", "4"},
			"at world 8 (1 node × 8 ranks, pp 8 × dp 1, 64 micro-batches)"},
		{"no measured step", benchScalingCmd{NProc: "1", Mode: "weak", Grow: "pp", Steps: 0}, nil, "--steps 0"},
		{"a bad rate", benchScalingCmd{NetNS: 2, LinkRate: "fast", Mode: "weak", Grow: "pp", Steps: 2}, nil, "--link-rate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cmd.train = c.train
			_, err := c.cmd.request().Prepare(envOf(nil))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
		})
	}
	ok := benchScalingCmd{NProc: "1,2,4", Mode: "strong", Grow: "pp", Steps: 2, WarmupSteps: 1}
	ok.train = []string{"--layers", "4", "--microbatches_size=2"}
	if _, err := ok.request().Prepare(envOf(nil)); err == nil || !strings.Contains(err.Error(), "microbatches-size") {
		t.Fatalf("a misspelt flag: %v", err)
	}
	ok.train = []string{"--layers", "4", "--microbatch_size=2"}
	s, err := ok.request().Prepare(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sizes) != 3 || s.Sizes[2].PP != 4 || s.Sizes[2].Micro != 8 || s.Sizes[2].MicroSize != 2 {
		t.Fatalf("sizes %+v: want worlds 1, 2, 4 as pp, 8 micro-batches of 2", s.Sizes)
	}
	args := ok.request().TrainArgs(s.Sizes[2], "m.jsonl", "p.json")
	want := "--layers 4 --microbatch_size=2 --pp 4 --dp 1 --microbatches 8 --microbatch-size 2 --steps 4 --eval-every 0 --metrics m.jsonl --profile p.json"
	if strings.Join(args, " ") != want {
		t.Errorf("train args %q, want %q", strings.Join(args, " "), want)
	}
	// The size's flags win over the user's, as the last of a flag given twice.
	ok.train = []string{"--layers", "4", "--microbatches", "3"}
	if s, err = ok.request().Prepare(envOf(nil)); err != nil {
		t.Fatal(err)
	}
	tc, err := parseTrainArgs(ok.request().TrainArgs(s.Sizes[2], "", ""))
	if err != nil || tc.Microbatches != 3 || tc.PP != 4 || s.Sizes[2].Micro != 3 {
		t.Fatalf("the last --microbatches: %+v %v; want 3 micro-batches at pp 4 (strong scaling)", tc, err)
	}
}

// Help and a train flag before -- say where the train flags go.
func TestScalingHelpNamesTheTrainFlags(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"bench", "scaling", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "The train flags go after --:") {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"bench", "scaling", "--layers", "3"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "unknown flag --layers") || !strings.Contains(errOut.String(), "The train flags go after --:") {
		t.Errorf("a train flag before --: exit %d\n%s", code, errOut.String())
	}
}

// A DeepSpeed config's train_batch_size is the smallest size's global
// batch; each size's flags win over it.
func TestScalingPrepareConfigFile(t *testing.T) {
	c := benchScalingCmd{NProc: "1,2,4", Mode: "weak", Grow: "pp", Steps: 1}
	c.train = []string{"--config", "../../examples/deepspeed.json"} // train_batch_size 16, micro-batches of 4
	s, err := c.request().Prepare(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{16, 32, 64} {
		if z := s.Sizes[i]; z.GlobalBatch != want || z.MicroSize != 4 || z.Micro != want/4 {
			t.Errorf("size %d: %+v, want a global batch of %d in micro-batches of 4", i, z, want)
		}
	}
	c.Mode = "strong"
	if s, err = c.request().Prepare(envOf(nil)); err != nil || s.Sizes[2].GlobalBatch != 16 || s.Sizes[2].Micro != 4 {
		t.Fatalf("strong: %+v, %v; want 16 sequences at every size", s, err)
	}
}
