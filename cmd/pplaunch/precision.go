package main

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models"
)

// resolvePrecision is --precision with --tf32 (the older spelling of
// --precision tf32) folded in, checked against the device: TF32 tensor
// cores are a GPU's; the CPU computes fp32 and bf16.
func resolvePrecision(precision string, tf32 bool, device string) (models.Precision, error) {
	p, err := models.ParsePrecision(precision)
	if err != nil {
		return "", err
	}
	if tf32 {
		if p == models.BF16 {
			return "", fmt.Errorf("--tf32 and --precision bf16: give one (--tf32 is --precision tf32)")
		}
		p = models.TF32
	}
	if p == models.TF32 && device != deviceCUDA {
		flag := "--precision tf32"
		if tf32 {
			flag = "--tf32"
		}
		return "", fmt.Errorf("%s is for --device cuda (the CPU computes in float32; --precision bf16 runs mixed precision there too)", flag)
	}
	return p, nil
}
