package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

// TestPredictMemory checks the memory arithmetic on a profile written by
// hand: two blocks of 100 parameters, 1000 bytes of activations each (400
// after the input pass), AdamW, 1F1B on two ranks with 4 micro-batches.
func TestPredictMemory(t *testing.T) {
	p := &Profile{Version: 1, MicroBatchSize: 2, OptimizerState: 2,
		Model: ProfileModel{Layers: 2, Seq: 4, Width: 8},
		Units: []UnitProfile{
			{Unit: -1, F: 0, I: 0, W: 0, Params: 10},
			{Unit: 0, F: 1, I: 1, W: 1, Params: 100, ActivationBytes: 1000, AfterInputBytes: 400},
			{Unit: 1, F: 1, I: 1, W: 1, Params: 100, ActivationBytes: 1000, AfterInputBytes: 400},
			{Unit: 2, F: 0, I: 0, W: 0, Params: 20},
		},
		Boundaries: []BoundaryCost{{After: 0, Bytes: 256, Forward: 0.5, Backward: 0.5}},
	}
	pr, err := Predict(p, Candidate{PP: 2, DP: 1, Schedule: "1f1b", Micro: 4, MicroSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Rank 0 holds the embedding and block 0, rank 1 block 1 and the head.
	// Gradients: the sum and 1+⌈log₂ 4⌉ = 3 partial buffers.
	want := map[string][]int64{
		"params": {440, 480}, "grads": {1760, 1920}, "optim": {880, 960},
		"act": {2000, 1000}, // 1F1B: rank 0 holds 2 micro-batches, rank 1 one
	}
	got := map[string][]int64{"params": pr.Params, "grads": pr.Grads, "optim": pr.Optim, "act": pr.Activations}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s %v, want %v", k, got[k], w)
		}
	}
	// Makespan: 1F1B on 2 stages of F=1, B=2 with 4 micro-batches is
	// (M+P-1)(F+B) = 15 without transfers; each of the 2·2 transfers on the
	// critical path at the pipeline's ends adds 0.5.
	if pr.StepS != 17 || !slices.Equal(pr.Cut, []int{1, 1}) || pr.SlowestStageS != 3 {
		t.Errorf("step %v s, cut %v, slowest stage %v", pr.StepS, pr.Cut, pr.SlowestStageS)
	}
	rc, err := Predict(p, Candidate{PP: 2, DP: 1, Schedule: "1f1b", Micro: 4, MicroSize: 4, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	// Twice the sequences: the input gradient pays the forward again, a
	// stage keeps its input (tokens: 4·4·4 bytes; an activation 4·4·4·8 and
	// the targets on the last), and a forward's 2000 bytes on top.
	if !slices.Equal(rc.Activations, []int64{128, 576}) || !slices.Equal(rc.Transient, []int64{2000, 2000}) {
		t.Errorf("recompute: activations %v transient %v", rc.Activations, rc.Transient)
	}
	// In bf16 (plan --precision bf16) the kept activations, a recomputing
	// stage's input (not its token ids) and the transfers halve.
	half, err := p.AtPrecision(models.BF16)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := Predict(half, Candidate{PP: 2, DP: 1, Schedule: "1f1b", Micro: 4, MicroSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hb.Activations, []int64{1000, 500}) || hb.StepS != 16 || !slices.Equal(hb.Params, pr.Params) {
		t.Errorf("bf16: activations %v (want [1000 500]), step %v s (want 16: transfers of 0.25), params %v", hb.Activations, hb.StepS, hb.Params)
	}
	hrc, err := Predict(half, Candidate{PP: 2, DP: 1, Schedule: "1f1b", Micro: 4, MicroSize: 4, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hrc.Activations, []int64{128, 320}) || !slices.Equal(hrc.Transient, []int64{1000, 1000}) {
		t.Errorf("bf16 recompute: activations %v (want [128 320]) transient %v (want [1000 1000])", hrc.Activations, hrc.Transient)
	}
	if _, err := (&Profile{Precision: "fp8"}).AtPrecision(models.BF16); err == nil || !strings.Contains(err.Error(), "fp8") {
		t.Errorf("a profile of precision fp8: %v, want an error naming it", err)
	}
	if _, err := Predict(p, Candidate{PP: 2, DP: 1, Schedule: "1f1b", Micro: 4, MicroSize: 2, Cut: []int{2}}); err == nil {
		t.Error("a one-stage cut for two stages was accepted")
	}
	// ZeRO stage 1 on 3 replicas: each rank keeps the state of ⌈110/3⌉ = 37
	// and ⌈120/3⌉ = 40 parameters; the rest is as without it.
	z, err := Predict(p, Candidate{PP: 2, DP: 3, Schedule: "1f1b", Micro: 4, MicroSize: 2, Zero: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(z.Optim, []int64{4 * 2 * 37, 4 * 2 * 40}) || !slices.Equal(z.Params, pr.Params) || !slices.Equal(z.Grads, pr.Grads) {
		t.Errorf("zero 1 on dp 3: optimizer %v params %v grads %v", z.Optim, z.Params, z.Grads)
	}
	if z.Memory[1] != pr.Memory[1]-960+320 {
		t.Errorf("zero 1 on dp 3: rank 1 memory %d, want %d", z.Memory[1], pr.Memory[1]-960+320)
	}
	if _, err := Predict(p, Candidate{PP: 2, DP: 2, Schedule: "1f1b", Micro: 4, MicroSize: 2, Zero: 2}); err == nil || !strings.Contains(err.Error(), "pipelines allow only stage 0") {
		t.Errorf("zero 2: %v, want the refusal", err)
	}
}
