package models

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// Precision is how a run computes: the dtype of its activations and whether
// float32 products may use TF32 tensor cores. Parameters, gradients and the
// optimizer state are float32 in every precision (tensor.Backend states the
// whole contract).
type Precision string

// The precisions --precision takes.
const (
	// FP32 keeps everything in float32 (the default).
	FP32 Precision = "fp32"
	// TF32 is FP32 with the matrix products on TF32 tensor cores (CUDA only).
	TF32 Precision = "tf32"
	// BF16 is mixed precision as PyTorch's autocast to bfloat16: activations
	// and their gradients in bfloat16, products on bfloat16 operands with
	// float32 accumulation, float32 master weights.
	BF16 Precision = "bf16"
)

// Precisions lists the precisions in the order the help gives them.
var Precisions = []Precision{FP32, TF32, BF16}

// ParsePrecision reads a --precision value ("" is fp32).
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(s); p {
	case "":
		return FP32, nil
	case FP32, TF32, BF16:
		return p, nil
	}
	return "", fmt.Errorf("--precision %q: want fp32, tf32 or bf16", s)
}

// Activations is the dtype of the activations and activation gradients.
func (p Precision) Activations() tensor.DType {
	if p == BF16 {
		return tensor.BFloat16
	}
	return tensor.Float32
}

// ActivationBytes is the size of one activation element: 2 in bf16, else 4.
func (p Precision) ActivationBytes() int { return p.Activations().Size() }

// String is the flag's spelling ("fp32" for the zero value).
func (p Precision) String() string {
	if p == "" {
		return string(FP32)
	}
	return string(p)
}

// ResolvePrecision is --precision with --tf32 (the older spelling of
// --precision tf32) folded in, checked against --device: TF32 tensor cores
// are a GPU's; the CPU computes fp32 and bf16.
func ResolvePrecision(precision string, tf32 bool, device string) (Precision, error) {
	p, err := ParsePrecision(precision)
	if err != nil {
		return "", err
	}
	if tf32 {
		if p == BF16 {
			return "", fmt.Errorf("--tf32 and --precision bf16: give one (--tf32 is --precision tf32)")
		}
		p = TF32
	}
	if p == TF32 && device != tensor.DeviceCUDA {
		flag := "--precision tf32"
		if tf32 {
			flag = "--tf32"
		}
		return "", fmt.Errorf("%s is for --device cuda (the CPU computes in float32; --precision bf16 runs mixed precision there too)", flag)
	}
	return p, nil
}
