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
