package sgemm_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/models/tensor/sgemm"
	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// trainingShapes are the products of a training step (M, N, K, transposes):
// the default model (gpt-tiny, 16×64 tokens, width 128, MLP 512, vocab 256)
// and a GPT-2-small block (4×256 tokens, width 768, MLP 3072): forward
// y = x·wᵀ, backward dx = dy·w and dw = dyᵀ·x.
var trainingShapes = []struct {
	name    string
	ta, tb  bool
	m, n, k int
}{
	{"tiny-qkv", false, true, 1024, 384, 128},
	{"tiny-fc", false, true, 1024, 512, 128},
	{"tiny-proj2", false, true, 1024, 128, 512},
	{"tiny-dx-fc", false, false, 1024, 128, 512},
	{"tiny-dw-fc", true, false, 512, 128, 1024},
	{"tiny-attn", false, true, 64, 64, 32},
	{"gpt2-qkv", false, true, 1024, 2304, 768},
	{"gpt2-fc", false, true, 1024, 3072, 768},
	{"gpt2-proj2", false, true, 1024, 768, 3072},
	{"gpt2-dx-fc", false, false, 1024, 768, 3072},
	{"gpt2-dw-fc", true, false, 3072, 768, 1024},
	{"gpt2-attn", false, true, 64, 256, 64},
}

type gemmFn func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

func libraries(b *testing.B) map[string]gemmFn {
	libs := map[string]gemmFn{"go": sgemm.Default().Gemm}
	g := gonum.Implementation{}
	tr := func(t bool) blas.Transpose {
		if t {
			return blas.Trans
		}
		return blas.NoTrans
	}
	libs["gonum"] = func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
		g.Sgemm(tr(ta), tr(tb), m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
	}
	if o, err := cbits.LoadOpenBLAS(); err == nil {
		libs["openblas"] = o.Sgemm
	} else {
		b.Logf("no OpenBLAS: %v", err)
	}
	return libs
}

// BenchmarkGemm times each library on each training shape on one goroutine
// and reports GFLOP/s per second of the process's CPU time, which the
// other jobs of a shared machine do not inflate (wall time, ns/op, they do). Compare libraries within one run:
//
//	go test -run '^$' -bench Gemm -benchtime 20x ./models/tensor/sgemm
func BenchmarkGemm(b *testing.B) {
	libs := libraries(b)
	for _, s := range trainingShapes {
		lda, ldb := s.k, s.n
		if s.ta {
			lda = s.m
		}
		if s.tb {
			ldb = s.k
		}
		a := make([]float32, s.m*s.k)
		bb := make([]float32, s.k*s.n)
		c := make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(i%7) - 3
		}
		for i := range bb {
			bb[i] = float32(i%5) - 2
		}
		for _, lib := range []string{"go", "openblas", "gonum"} {
			f, ok := libs[lib]
			if !ok {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", s.name, lib), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0 := threadCPU()
				for b.Loop() {
					f(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/(threadCPU()-t0).Seconds()/1e9, "cpu-GFLOP/s")
			})
		}
	}
}

// threadCPU is the CPU time the process has used, all threads together (gonum
// runs a product on several).
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
