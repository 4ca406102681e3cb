package tensor

import (
	"fmt"
	"os"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/models/tensor/sgemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BLASEnv names the environment variable that picks the CPU matrix-product
// library: "openblas" (fail if it cannot be loaded), "go" (this project's
// SIMD kernels, package sgemm), "gonum" (gonum's pure-Go BLAS), or
// "auto"/unset (see chooseBLAS).
const BLASEnv = "PPLAUNCH_BLAS"

// The libraries NewCPU can run matrix products on.
const (
	blasOpenBLAS = "openblas"
	blasGo       = "go"
	blasGonum    = "gonum"
)

// openBLASGain is how much faster a training step runs on OpenBLAS than on
// the Go kernels (CPU time per step, go / openblas): bench step at 1 thread,
// medians of three alternating rounds on the 2-core development machine on
// 1 December 2026, 1.19 for the default model and 1.16 for a GPT-2-small
// block (docs/benchmarks.md, "The Go SIMD matrix product"). Under 1.10 the
// start-up hint would not be worth a line; auto prefers OpenBLAS above 1.
const openBLASGain = 1.17

// chooseBLAS decides which library runs the products, from the request,
// whether OpenBLAS loaded (loadErr nil) and how much faster it runs a step
// (gain), and whether to say what installing OpenBLAS would gain. auto takes
// OpenBLAS where it loads and is faster, else the Go kernels; the hint is
// given where OpenBLAS did not load and would gain 10% or more.
func chooseBLAS(requested string, loadErr error, gain float64) (lib string, hint bool, err error) {
	switch requested {
	case blasGo, blasGonum:
		return requested, false, nil
	case blasOpenBLAS:
		if loadErr != nil {
			return "", false, fmt.Errorf("cpu backend: BLAS openblas chosen, but %w (install libopenblas0-pthread, or choose go)", loadErr)
		}
		return blasOpenBLAS, false, nil
	case "auto", "":
		if loadErr == nil && gain > 1 {
			return blasOpenBLAS, false, nil
		}
		return blasGo, loadErr != nil && gain >= 1.10, nil
	}
	return "", false, fmt.Errorf("cpu backend: unknown BLAS %q (want auto, openblas, go or gonum)", requested)
}

// NewCPU returns the CPU backend using the given BLAS: "openblas", "go",
// "gonum", or "auto" / "" (chooseBLAS).
func NewCPU(blasName string) (*CPU, error) {
	var o *cbits.OpenBLAS
	loadErr := fmt.Errorf("not loaded")
	if blasName == blasOpenBLAS || blasName == "auto" || blasName == "" {
		o, loadErr = cbits.LoadOpenBLAS()
	}
	lib, hint, err := chooseBLAS(blasName, loadErr, openBLASGain)
	if err != nil {
		return nil, err
	}
	switch lib {
	case blasOpenBLAS:
		return &CPU{name: "cpu/openblas", sgemm: o.Sgemm, chunky: true, hint: o.Note()}, nil
	case blasGonum:
		return gonumCPU(), nil
	}
	e := sgemm.Default()
	c := &CPU{name: "cpu/go", sgemm: e.Gemm, threaded: e.GemmParallel}
	if hint {
		c.hint = openBLASHint(loadErr)
	}
	return c, nil
}

// openBLASHint says what OpenBLAS would gain, and how to get it, after it
// failed to load.
func openBLASHint(err error) string {
	return fmt.Sprintf("matrix products run on pplaunch's own SIMD kernels (%s); OpenBLAS, which did not load (%v), runs a training step %.1fx as fast here: "+
		"install it with `apt-get install libopenblas0-pthread` (or set %s=go to silence this)", sgemm.Default().Name(), err, openBLASGain, BLASEnv)
}

// OpenBLASHint is a line for the start of a run about OpenBLAS, else "":
// where NewCPU chose the Go kernels because OpenBLAS did not load and it
// would be measurably faster, how to get it; where OpenBLAS runs kernels
// pplaunch chose because its own detection fell short, which.
func (c *CPU) OpenBLASHint() string { return c.hint }

// NewCPUFromEnv is NewCPU with the choice taken from $PPLAUNCH_BLAS.
func NewCPUFromEnv() (*CPU, error) { return NewCPU(os.Getenv(BLASEnv)) }

func gonumCPU() *CPU {
	impl := gonum.Implementation{}
	return &CPU{name: "cpu/gonum", sgemm: func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		impl.Sgemm(trans(ta), trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
