package tensor

import (
	"strings"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

// blasRulesAPI keeps cuBLAS's rule for the handles of the API it wraps:
// cublasSetStream gives a handle back its default workspace, so a workspace
// set before the stream is lost.
type blasRulesAPI struct {
	cudaAPI
	mu sync.Mutex
	ws map[blasHandle][2]uintptr // pointer, bytes
}

func (a *blasRulesAPI) BlasSetStream(h blasHandle, s cuStream) error {
	a.mu.Lock()
	delete(a.ws, h)
	a.mu.Unlock()
	return a.cudaAPI.BlasSetStream(h, s)
}

func (a *blasRulesAPI) BlasSetWorkspace(h blasHandle, p devPtr, bytes int) error {
	a.mu.Lock()
	a.ws[h] = [2]uintptr{uintptr(p), uintptr(bytes)}
	a.mu.Unlock()
	return a.cudaAPI.BlasSetWorkspace(h, p, bytes)
}

// TestCUDAKeepsBlasWorkspace: once the backend is open, its cuBLAS handle
// has the backend's own 32 MiB workspace on the backend's stream, under
// cuBLAS's rule that setting the stream resets the workspace.
func TestCUDAKeepsBlasWorkspace(t *testing.T) {
	api := &blasRulesAPI{cudaAPI: emuCUDA(t).dev.api, ws: map[blasHandle][2]uintptr{}}
	c, err := newCUDAWith(api, 0, CUDAOptions{KernelCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	api.mu.Lock()
	got, ok := api.ws[c.dev.blas]
	api.mu.Unlock()
	if want := [2]uintptr{uintptr(c.dev.ws), blasWorkspace}; !ok || got != want || c.dev.ws == 0 {
		t.Fatalf("handle's workspace %#x of %d bytes (set %v), want the backend's %#x of %d bytes: the stream was set after the workspace",
			got[0], got[1], ok, want[0], want[1])
	}
}

// busyAPI is a GPU in exclusive-process compute mode that another process
// holds: cudaSetDevice fails with cudaErrorDevicesUnavailable.
type busyAPI struct{ cudaAPI }

func (busyAPI) SetDevice(int) error {
	return &cbits.CUDAError{Lib: "cudart", Call: "cudaSetDevice(0)", Code: cbits.ErrDevicesUnavailable, Name: "cudaErrorDevicesUnavailable",
		Message: "CUDA-capable device(s) is/are busy or unavailable"}
}

// TestCUDAExclusiveProcess: a GPU held by another process in exclusive-process
// mode is an error that says so and how to share it.
func TestCUDAExclusiveProcess(t *testing.T) {
	_, err := newCUDAWith(busyAPI{emuCUDA(t).dev.api}, 0, CUDAOptions{KernelCache: "-"})
	for _, want := range []string{"cudaErrorDevicesUnavailable (46)", "GPU 0 takes one process at a time (exclusive-process compute mode)", "nvidia-cuda-mps-control -d"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
