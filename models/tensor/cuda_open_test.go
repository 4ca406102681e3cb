package tensor

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countingAPI counts NVRTC compiles of the API it wraps.
type countingAPI struct {
	cudaAPI
	compiles *atomic.Int32
}

func (a countingAPI) Compile(src, name, arch string, opts ...string) ([]byte, string, error) {
	a.compiles.Add(1)
	return a.cudaAPI.Compile(src, name, arch, opts...)
}

// TestCUDAKernelCache: the first backend compiles the kernels and stores the
// image under a key naming the architecture; the next one reads it back
// without compiling; a corrupt cached image is built again and replaced.
func TestCUDAKernelCache(t *testing.T) {
	api := emuCUDA(t).dev.api
	dir := t.TempDir()
	var n atomic.Int32
	open := func() {
		t.Helper()
		c, err := newCUDAWith(countingAPI{api, &n}, 0, CUDAOptions{KernelCache: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		x := c.Zeros(3)
		c.Scale(x, 2) // the first launch loads the kernels
		if got := down(c, x); got[0] != 0 {
			t.Fatalf("scaled zeros: %v", got)
		}
	}
	open()
	files, _ := filepath.Glob(filepath.Join(dir, "*-sm_90.cubin"))
	if n.Load() != 1 || len(files) != 1 {
		t.Fatalf("first backend: %d compiles, cache %v; want 1 and one sm_90 image", n.Load(), files)
	}
	open()
	if n.Load() != 1 {
		t.Fatalf("second backend compiled again (%d compiles) despite %s", n.Load(), files[0])
	}
	if err := os.WriteFile(files[0], []byte("not a CUBIN"), 0o644); err != nil {
		t.Fatal(err)
	}
	open()
	if img, _ := os.ReadFile(files[0]); n.Load() != 2 || string(img) == "not a CUBIN" {
		t.Fatalf("corrupt cache: %d compiles, image %q...", n.Load(), img[:min(len(img), 12)])
	}
}

// TestNewCUDAErrors: a device index past the visible GPUs, and a directory
// without the libraries, are errors that say what was wanted and where.
func TestNewCUDAErrors(t *testing.T) {
	dir := cudaemuDir(t)
	if _, err := NewCUDAFrom([]string{dir}, 3, CUDAOptions{KernelCache: "-"}); err == nil ||
		!strings.Contains(err.Error(), "device 3 requested, but 1 visible") {
		t.Fatalf("device 3 of 1: %v", err)
	}
	empty := t.TempDir()
	_, err := NewCUDAFrom([]string{empty}, 0, CUDAOptions{})
	if err == nil || !strings.Contains(err.Error(), "libcudart.so.13") || !strings.Contains(err.Error(), empty) {
		t.Fatalf("no libraries in %s: %v", empty, err)
	}
	t.Logf("no libraries: %v", err)
}

// TestCUDAName: the name gives the device, its architecture and the math mode.
func TestCUDAName(t *testing.T) {
	c, err := newCUDAWith(emuCUDA(t).dev.api, 0, CUDAOptions{TF32: true, KernelCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Name() != "cuda:0/sm_90/cublas+tf32" || c.Arch() != "sm_90" {
		t.Fatalf("name %q, arch %q", c.Name(), c.Arch())
	}
}
