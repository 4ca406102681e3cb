package models

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

func TestParsePrecision(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  Precision
		act   tensor.DType
		bytes int
		err   string
	}{
		{"", FP32, tensor.Float32, 4, ""},
		{"fp32", FP32, tensor.Float32, 4, ""},
		{"tf32", TF32, tensor.Float32, 4, ""},
		{"bf16", BF16, tensor.BFloat16, 2, ""},
		{"fp16", "", 0, 0, `--precision "fp16": want fp32, tf32 or bf16`},
		{"BF16", "", 0, 0, `want fp32, tf32 or bf16`},
	} {
		p, err := ParsePrecision(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || p != c.want || p.Activations() != c.act || p.ActivationBytes() != c.bytes {
			t.Errorf("%q: %v %v %v %d, want %v %v %d", c.in, p, err, p.Activations(), p.ActivationBytes(), c.want, c.act, c.bytes)
		}
	}
}

// TestResolvePrecision: --tf32 folds into --precision, and TF32 is refused
// off the GPU, naming the flag that asked for it.
func TestResolvePrecision(t *testing.T) {
	for _, c := range []struct {
		precision string
		tf32      bool
		device    string
		want      Precision
		err       string
	}{
		{"fp32", false, "cpu", FP32, ""},
		{"", false, "cpu", FP32, ""},
		{"bf16", false, "cpu", BF16, ""},
		{"bf16", false, "cuda", BF16, ""},
		{"tf32", false, "cuda", TF32, ""},
		{"fp32", true, "cuda", TF32, ""},
		{"tf32", true, "cuda", TF32, ""},
		{"tf32", false, "cpu", "", "--precision tf32 is for --device cuda"},
		{"fp32", true, "cpu", "", "--tf32 is for --device cuda"},
		{"bf16", true, "cuda", "", "--tf32 and --precision bf16: give one"},
		{"half", false, "cpu", "", `--precision "half": want fp32, tf32 or bf16`},
	} {
		p, err := ResolvePrecision(c.precision, c.tf32, c.device)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q tf32=%v %s: error %v, want %q", c.precision, c.tf32, c.device, err, c.err)
			}
			continue
		}
		if err != nil || p != c.want {
			t.Errorf("%q tf32=%v %s: %v %v, want %v", c.precision, c.tf32, c.device, p, err, c.want)
		}
	}
}
