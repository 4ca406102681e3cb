package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// TestBenchStepCUDAPrecision runs `bench step --device cuda` over the CUDA
// emulator at --precision fp32 and bf16 with a head width of 32, where the
// fused attention runs: bf16 reports its precision, the device's peak
// memory and about half fp32's activation bytes, and a loss of its own
// (rounded activations); --explain --precision bf16 gives the roofline
// beside the measured step.
func TestBenchStepCUDAPrecision(t *testing.T) {
	env := []string{"PPLAUNCH_CUDA_LIBS=" + cudaemu.Dir(t), "XDG_CACHE_HOME=" + t.TempDir()}
	args := []string{"bench", "step", "--device", "cuda", "--model", "gpt-tiny", "--layers", "1", "--width", "32", "--heads", "1",
		"--seq", "16", "--vocab", "256", "--batch", "2", "--steps", "1", "--warmup", "0"}
	step := func(prec string) bench.StepReport {
		t.Helper()
		out, code := runPPLaunch(t, env, append(args, "--precision", prec, "--json")...)
		var rep bench.StepReport
		if code != 0 {
			t.Fatalf("--precision %s: exit %d\n%s", prec, code, out)
		}
		at := strings.Index("\n"+out, "\n{") // the report's first line
		if at < 0 {
			t.Fatalf("--precision %s: no JSON report in\n%s", prec, out)
		}
		if err := json.Unmarshal([]byte(out[at:]), &rep); err != nil {
			t.Fatalf("--precision %s: %v in\n%s", prec, err, out)
		}
		return rep
	}
	f32, bf16 := step("fp32"), step("bf16")
	if bf16.Precision != "bf16" || f32.Precision != "fp32" {
		t.Fatalf("precision %q and %q, want bf16 and fp32", bf16.Precision, f32.Precision)
	}
	if bf16.DevicePeakBytes <= 0 || bf16.StepMS <= 0 {
		t.Errorf("bf16 step: device peak %d bytes, %v ms, want both positive", bf16.DevicePeakBytes, bf16.StepMS)
	}
	if r := float64(bf16.PeakActBytes) / float64(f32.PeakActBytes); r <= 0.5 || r > 0.6 {
		t.Errorf("peak act %d bytes in bf16, %d in fp32: ratio %.3f, want just over 0.5", bf16.PeakActBytes, f32.PeakActBytes, r)
	}
	if bf16.Loss == f32.Loss || bf16.Loss < 5 || bf16.Loss > 6 {
		t.Errorf("loss %v in bf16, %v in fp32: want near ln 256 and not fp32's bits", bf16.Loss, f32.Loss)
	}
	out, code := runPPLaunch(t, env, append(args, "--precision", "bf16", "--explain")...)
	if code != 0 || !strings.Contains(out, "ms per step") || !strings.Contains(out, "MFU") {
		t.Errorf("--explain --precision bf16 on the emulator: exit %d, want the roofline beside a measured step\n%s", code, out)
	}
}
