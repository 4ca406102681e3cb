package tensor

import (
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// The cuda_*_emu_test.go tests run the CUDA backend over the emulator (cbits/cudaemu):
// the NVIDIA libraries' sonames and C symbols, device memory in host memory,
// reference cuBLAS, and NVRTC compiling kernels/*.cu with the host C++
// compiler. They check the kernels' arithmetic and the GEMM conventions
// against the CPU backend, and that every result is the same bits run to run.

var emu struct {
	once sync.Once
	be   *CUDA
	err  error
}

// DeviceTestEnv set to "cuda" runs the cuda_*_emu_test.go tests on the first real
// GPU instead of the emulator (bench/gpu/check.sh does, on a GPU machine).
const DeviceTestEnv = "PPLAUNCH_TEST_DEVICE"

// emuCUDA is the CUDA backend over the emulator, built once per test binary
// (the test skips, saying why, where there is no C++ compiler), or the real
// first GPU under PPLAUNCH_TEST_DEVICE=cuda.
func emuCUDA(t *testing.T) *CUDA {
	t.Helper()
	if os.Getenv(DeviceTestEnv) == "cuda" {
		emu.once.Do(func() { emu.be, emu.err = NewCUDA(0, CUDAOptions{KernelCache: t.TempDir()}) })
		if emu.err != nil {
			t.Fatal(emu.err)
		}
		return emu.be
	}
	dir := cudaemuDir(t)
	emu.once.Do(func() { emu.be, emu.err = NewCUDAFrom([]string{dir}, 0, CUDAOptions{KernelCache: t.TempDir()}) })
	if emu.err != nil {
		t.Fatal(emu.err)
	}
	return emu.be
}

// emulatorElsewhere is for a test that loads the emulator itself: under
// DeviceTestEnv=cuda the real libraries are loaded in this process, and the
// emulator's share their sonames (its cuBLAS would bind to the real
// runtime), so the test runs again in a child process without the variable
// and passes or fails with it. It returns true in that parent, which then
// has nothing left to do.
func emulatorElsewhere(t *testing.T) bool {
	t.Helper()
	if os.Getenv(DeviceTestEnv) != "cuda" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, DeviceTestEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	t.Logf("%s over the emulator in a child process:\n%s", t.Name(), out)
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skip("skipped in the child process (see above)")
	}
	return true
}

// cudaemuDir is where the emulator's libraries are built (once per test binary).
func cudaemuDir(t *testing.T) string { return cudaemu.Dir(t) }

// up copies a host tensor to the device; down copies a device tensor back.
func up(c *CUDA, h *Tensor) *Tensor {
	if h == nil {
		return nil
	}
	d := c.Alloc(h.Shape...)
	c.Upload(d, h.Data)
	return d
}

func down(c *CUDA, d *Tensor) []float32 {
	h := make([]float32, d.Len())
	c.Download(h, d)
	return h
}

// maxRelErr is max |got - want| over the largest |want|: relative to the
// output's scale, so values that happen to be near zero do not dominate.
func maxRelErr(got, want []float32) float64 {
	var diff, scale float64
	for i := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

// check compares the CUDA result with the CPU's: bit for bit when tol is 0,
// else within tol (maxRelErr).
func check(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for _, v := range got {
		if math.IsNaN(float64(v)) {
			t.Fatalf("%s: NaN", what)
		}
	}
	if tol == 0 {
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, want %v bit for bit", what, i, got[i], want[i])
			}
		}
		return
	}
	e := maxRelErr(got, want)
	if e > tol {
		t.Fatalf("%s: max relative error %.3g > %g", what, e, tol)
	}
	t.Logf("%s: max relative error %.2g (bound %g)", what, e, tol)
}

// twice runs f (which returns the CUDA outputs) two times and fails unless
// both runs give the same bits.
func twice(t *testing.T, what string, f func() [][]float32) [][]float32 {
	t.Helper()
	a, b := f(), f()
	for i := range a {
		if !slices.EqualFunc(a[i], b[i], func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
			t.Fatalf("%s: output %d differs between two runs of the same inputs", what, i)
		}
	}
	return a
}

// Tolerances where the CUDA and CPU computations differ in order, each a
// float32 rounding bound with room: gemmTol for products of up to ~260 terms
// summed in another order (γ_k ≈ k·6e-8 at worst, √k·6e-8 typically, relative
// to the output's scale), rowTol for a row's mean and variance summed by 256
// threads instead of four running sums.
const (
	gemmTol = 1e-5
	rowTol  = 1e-5
)

// The op tests (cuda_<family>_emu_test.go) run each operation with float32 activations and with
// bfloat16 ones (acts), against the CPU's float32 operations: for bfloat16,
// on the rounded inputs, with bfloat16 outputs rounded (cuda_bf16_emu_test.go).
var acts = []DType{Float32, BFloat16}
