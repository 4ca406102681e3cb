package main

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestResolvePrecision(t *testing.T) {
	for _, c := range []struct {
		precision string
		tf32      bool
		device    string
		want      models.Precision
		err       string
	}{
		{"fp32", false, "cpu", models.FP32, ""},
		{"", false, "cpu", models.FP32, ""},
		{"bf16", false, "cpu", models.BF16, ""},
		{"bf16", false, "cuda", models.BF16, ""},
		{"tf32", false, "cuda", models.TF32, ""},
		{"fp32", true, "cuda", models.TF32, ""},
		{"tf32", true, "cuda", models.TF32, ""},
		{"tf32", false, "cpu", "", "--precision tf32 is for --device cuda"},
		{"fp32", true, "cpu", "", "--tf32 is for --device cuda"},
		{"bf16", true, "cuda", "", "--tf32 and --precision bf16: give one"},
		{"half", false, "cpu", "", `--precision "half": want fp32, tf32 or bf16`},
	} {
		p, err := resolvePrecision(c.precision, c.tf32, c.device)
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
