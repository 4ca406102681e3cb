package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestStepReport(t *testing.T) {
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 32, Heads: 2, Seq: 16}
	rep, err := Step(StepOptions{Model: cfg, Batch: 2, Threads: 1, Steps: 2, Warmup: 0, BLAS: "auto", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.StepMS <= 0 || rep.TokensPerSec <= 0 || rep.GFLOP != cfg.StepFLOPs(2)/1e9 || rep.Threads != 1 || rep.Loss < 5 {
		t.Fatalf("implausible report %+v", rep)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "tokens/s") {
		t.Fatalf("text report %q: %v", text.String(), err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back StepReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Batch != 2 || back.Model != cfg {
		t.Fatalf("JSON report does not read back: %v %+v", err, back)
	}
	if _, err := Step(StepOptions{Model: cfg, Batch: 0, Steps: 1}); err == nil {
		t.Fatal("batch 0 accepted")
	}
}

// TestStepReportBF16: bench step in bf16 reports its precision and holds
// about half the activation bytes of fp32 (the per-row statistics and the
// token ids stay four bytes).
func TestStepReportBF16(t *testing.T) {
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 32, Heads: 2, Seq: 16}
	run := func(p models.Precision) StepReport {
		rep, err := Step(StepOptions{Model: cfg, Batch: 2, Threads: 1, Steps: 1, BLAS: "go", Seed: 1, Precision: p})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	f32, bf16 := run(models.FP32), run(models.BF16)
	if bf16.Precision != "bf16" || f32.Precision != "fp32" {
		t.Fatalf("precision %q and %q, want bf16 and fp32", bf16.Precision, f32.Precision)
	}
	if r := float64(bf16.PeakActBytes) / float64(f32.PeakActBytes); r <= 0.5 || r > 0.55 {
		t.Fatalf("peak act %d bytes in bf16, %d in fp32: ratio %.3f, want just over 0.5", bf16.PeakActBytes, f32.PeakActBytes, r)
	}
	if bf16.Loss == f32.Loss {
		t.Fatal("bf16 gave fp32's loss bit for bit: the activations were not rounded")
	}
}

// BenchmarkStep times the reference step: GPT, vocab 256, width 256,
// 4 heads, 4 layers, sequence 128, batch 16, one thread; the median of 3 steps
// after one untimed (the first step allocates every buffer).
func BenchmarkStep(b *testing.B) {
	cfg, _ := models.Preset("gpt-small")
	for b.Loop() {
		rep, err := Step(StepOptions{Model: cfg, Batch: 16, Threads: 1, Steps: 3, Warmup: 1, BLAS: "auto", Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rep.StepMS, "ms/step")
		b.ReportMetric(rep.GFLOPPerSec, "GFLOP/s")
	}
}
