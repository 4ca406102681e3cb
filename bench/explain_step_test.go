package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

// ExplainStep predicts the precision asked for and lays the others beside
// it, attention fused as the CUDA backend fuses it (heads 32 to 128 wide);
// Measure says why nothing ran where the device does not open; the JSON carries both.
func TestExplainStep(t *testing.T) {
	gpt2 := models.Config{Kind: "gpt", Vocab: 50304, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true}
	r, also, err := ExplainStep(gpt2, 8, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	fused, _ := Explain(gpt2, 8, "bf16", true, H200)
	if r.S != fused.S || len(also) != 2 || also[0].Precision != "fp32" || also[1].Precision != "tf32" {
		t.Fatalf("roofline %v s (fused: %v s), others %d", r.S, fused.S, len(also))
	}
	r, err = r.Measure(StepOptions{Model: gpt2, Batch: 8, Steps: 1, Threads: 1, Device: "tpu"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteExplainJSON(&b, r, also); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Roofline map[string]any   `json:"roofline"`
		Also     []map[string]any `json:"other_precisions"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.Roofline["precision"] != "bf16" || got.Roofline["measured"] != `device "tpu": want cpu or cuda` || len(got.Also) != 2 {
		t.Fatalf("JSON %s: %v", b.String(), err)
	}
}
