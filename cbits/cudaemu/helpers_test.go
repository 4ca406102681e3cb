package cudaemu_test

import (
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// load opens the emulator and locks the test's goroutine to its OS thread,
// as cbits requires of every caller: the emulator keeps the last error's
// detail per thread, as CUDA keeps the last error, and a goroutine that
// moves between cudaDeviceSynchronize and the binding's cudaGetErrorString
// (likely on a loaded machine, after a long call) loses the report. The lock
// ends with the test's goroutine, which also runs its cleanups.
func load(t *testing.T) *cbits.CUDALibs {
	t.Helper()
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	c, err := cbits.LoadCUDAFrom(cudaemu.Dir(t))
	if err != nil && strings.Contains(err.Error(), "without cgo") {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// upload copies v to a new device buffer.
func upload(t *testing.T, c *cbits.CUDALibs, v []float32) cbits.DevPtr {
	t.Helper()
	p, err := c.Malloc(4 * len(v))
	must(t, err)
	if len(v) > 0 {
		must(t, c.MemcpyHtoDAsync(p, unsafe.Pointer(&v[0]), 4*len(v), 0))
		// Work on other streams does not wait for the default stream: wait here.
		must(t, c.StreamSynchronize(0))
	}
	t.Cleanup(func() { c.Free(p) })
	return p
}

// download copies n floats back from p.
func download(t *testing.T, c *cbits.CUDALibs, p cbits.DevPtr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if n > 0 {
		must(t, c.MemcpyDtoHAsync(unsafe.Pointer(&out[0]), p, 4*n, 0))
	}
	must(t, c.DeviceSynchronize())
	return out
}

// kernel compiles src for sm_90 and returns its entry name.
func kernel(t *testing.T, c *cbits.CUDALibs, src, name string) cbits.Kernel {
	t.Helper()
	bin, log, err := c.Compile(src, name+".cu", "sm_90")
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	if log != "" {
		t.Logf("%s log: %s", name, log)
	}
	lib, err := c.LibraryLoadData(bin)
	must(t, err)
	t.Cleanup(func() { c.LibraryUnload(lib) })
	k, err := c.LibraryGetKernel(lib, name)
	must(t, err)
	return k
}

// seq is a deterministic pseudo-random vector in [-1, 1).
func seq(n int, seed uint32) []float32 {
	v := make([]float32, n)
	x := seed*2654435761 + 1
	for i := range v {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		v[i] = float32(x%2000)/1000 - 1
	}
	return v
}

func near(a, b, tol float32) bool {
	return math.Abs(float64(a-b)) <= float64(tol)*(1+math.Abs(float64(b)))
}

// child reports whether this process is the re-executed child of name.
func child(name string) bool { return os.Getenv("CUDAEMU_TEST_CHILD") == name }
