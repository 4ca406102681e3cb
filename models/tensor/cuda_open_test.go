package tensor

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countingAPI counts NVRTC compiles of the API it wraps and keeps the sizes
// of the images handed to the runtime.
type countingAPI struct {
	cudaAPI
	compiles atomic.Int32
	mu       sync.Mutex
	loaded   []int
}

func (a *countingAPI) Compile(src, name, arch string, opts ...string) ([]byte, string, error) {
	a.compiles.Add(1)
	return a.cudaAPI.Compile(src, name, arch, opts...)
}

func (a *countingAPI) LibraryLoadData(image []byte) (cuLibrary, error) {
	a.mu.Lock()
	a.loaded = append(a.loaded, len(image))
	a.mu.Unlock()
	return a.cudaAPI.LibraryLoadData(image)
}

// TestCUDAKernelCache: the first backend compiles the kernels and stores the
// image under a key naming the architecture; the next one reads it back
// without compiling; a corrupt cached image (other bytes, or the image cut
// short) is never handed to the runtime, but built again and replaced.
func TestCUDAKernelCache(t *testing.T) {
	api := &countingAPI{cudaAPI: emuCUDA(t).dev.api}
	dir := t.TempDir()
	open := func() {
		t.Helper()
		c, err := newCUDAWith(api, 0, CUDAOptions{KernelCache: dir})
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
	if api.compiles.Load() != 1 || len(files) != 1 {
		t.Fatalf("first backend: %d compiles, cache %v; want 1 and one sm_90 image", api.compiles.Load(), files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil || checkImage(good) != nil {
		t.Fatalf("cached image: %v, %v", err, checkImage(good))
	}
	open()
	if api.compiles.Load() != 1 {
		t.Fatalf("second backend compiled again (%d compiles) despite %s", api.compiles.Load(), files[0])
	}
	for i, bad := range [][]byte{[]byte("not a CUBIN"), good[:len(good)/2], good[:100]} {
		if err := os.WriteFile(files[0], bad, 0o644); err != nil {
			t.Fatal(err)
		}
		api.mu.Lock()
		api.loaded = nil
		api.mu.Unlock()
		open()
		img, _ := os.ReadFile(files[0])
		if want := int32(2 + i); api.compiles.Load() != want || !bytes.Equal(img, good) {
			t.Fatalf("corrupt cache of %d bytes: %d compiles (want %d), cache now %d bytes (want %d)", len(bad), api.compiles.Load(), want, len(img), len(good))
		}
		if !slices.Equal(api.loaded, []int{len(good)}) {
			t.Errorf("corrupt cache of %d bytes: the runtime was handed images of %v bytes, want only the rebuilt %d", len(bad), api.loaded, len(good))
		}
	}
}

// TestCheckImage: only a whole 64-bit ELF file passes.
func TestCheckImage(t *testing.T) {
	self, err := os.ReadFile(os.Args[0]) // this test binary: a whole ELF64 file
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImage(self); err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	for _, c := range []struct {
		name  string
		image []byte
		want  string
	}{
		{"empty", nil, "not an ELF image"},
		{"text", []byte("not a CUBIN, and longer than an ELF header would be: 64 bytes and more"), "not an ELF image"},
		{"header only", self[:64], "damaged ELF image"},
		{"cut short", self[:len(self)-4096], "damaged ELF image"},
	} {
		if err := checkImage(c.image); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestNewCUDAErrors: a device index past the visible GPUs, and a directory
// without the libraries, are errors that say what was wanted and where.
func TestNewCUDAErrors(t *testing.T) {
	if emulatorElsewhere(t) {
		return
	}
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
