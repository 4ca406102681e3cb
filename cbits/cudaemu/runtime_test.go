package cudaemu_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

func TestDevice(t *testing.T) {
	c := load(t)
	v := c.Versions()
	if v.Runtime != 13000 || v.Driver != 13000 || v.NVRTCMajor != 13 || v.CUBLAS != 130000 {
		t.Errorf("versions %+v", v)
	}
	for _, so := range []string{"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnvrtc.so.13", "libnvrtc-builtins.so.13.0"} {
		if v.Dirs[so] == "" {
			t.Errorf("no directory for %s in %v", so, v.Dirs)
		}
	}
	n, err := c.DeviceCount()
	if n != 1 || err != nil {
		t.Fatalf("DeviceCount %d, %v", n, err)
	}
	must(t, c.SetDevice(0))
	if err := c.SetDevice(1); err == nil || !strings.Contains(err.Error(), "cudaSetDevice(1): cudaErrorInvalidDevice (101)") {
		t.Errorf("SetDevice(1): %v", err)
	}
	for attr, want := range map[int]int{cbits.AttrComputeCapabilityMajor: 9, cbits.AttrComputeCapabilityMinor: 0,
		cbits.AttrMultiProcessorCount: 132, cbits.AttrMaxThreadsPerBlock: 1024, cbits.AttrWarpSize: 32} {
		if got, err := c.DeviceAttribute(attr, 0); got != want || err != nil {
			t.Errorf("attribute %d = %d, %v; want %d", attr, got, err, want)
		}
	}
}

func TestMemoryStreamsEvents(t *testing.T) {
	c := load(t)
	free0, total, err := c.MemGetInfo()
	must(t, err)
	p, err := c.Malloc(1 << 20)
	must(t, err)
	if free1, _, _ := c.MemGetInfo(); free1 != free0-1<<20 || total == 0 {
		t.Errorf("free %d -> %d after a 1 MiB malloc (total %d)", free0, free1, total)
	}
	if uintptr(p)%256 != 0 {
		t.Errorf("device pointer %#x not 256-byte aligned", uintptr(p))
	}
	s1, err := c.StreamCreate()
	must(t, err)
	s2, err := c.StreamCreate()
	must(t, err)
	e, err := c.EventCreate()
	must(t, err)

	src := seq(1000, 9)
	must(t, c.MemsetAsync(p, 0xff, 1<<20, s1))
	must(t, c.MemcpyHtoDAsync(p, unsafe.Pointer(&src[0]), 4000, s1))
	q := p + 8000
	must(t, c.MemcpyDtoDAsync(q, p, 4000, s1))
	must(t, c.EventRecord(e, s1))
	must(t, c.StreamWaitEvent(s2, e))
	// The work runs when waited for: the first query finds it pending, and
	// each query moves it on, so polling ends.
	polls := 0
	for {
		done, err := c.EventQuery(e)
		must(t, err)
		if done {
			break
		}
		if polls++; polls > 10 {
			t.Fatal("EventQuery never done")
		}
	}
	if polls == 0 && os.Getenv("CUDAEMU_SYNC") == "" {
		t.Error("queued work was done before anything waited for it")
	}
	must(t, c.EventSynchronize(e))
	host, err := c.MallocHost(12000)
	must(t, err)
	must(t, c.MemcpyDtoHAsync(host, p, 12000, s2))
	must(t, c.StreamSynchronize(s2))
	got := unsafe.Slice((*float32)(host), 3000)
	for i := 0; i < 1000; i++ {
		if got[i] != src[i] || got[2000+i] != src[i] {
			t.Fatalf("element %d: %v and %v, want %v", i, got[i], got[2000+i], src[i])
		}
	}
	if b := unsafe.Slice((*byte)(host), 12000)[4000:8000]; b[0] != 0xff || b[3999] != 0xff {
		t.Errorf("memset bytes %x %x", b[0], b[3999])
	}

	// Copies that leave an allocation, and double frees, are errors.
	if err := c.MemcpyDtoDAsync(q, p, 1<<20, s1); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("overlong copy: %v", err)
	}
	if err := c.MemsetAsync(cbits.DevPtr(0x1000), 0, 4, s1); err == nil || !strings.Contains(err.Error(), "cudaErrorInvalidValue (1)") {
		t.Errorf("memset of a non-device address: %v", err)
	}
	must(t, c.FreeHost(host))
	must(t, c.Free(p))
	if err := c.Free(p); err == nil || !strings.Contains(err.Error(), "cudaFree") {
		t.Errorf("double free: %v", err)
	}
	must(t, c.EventDestroy(e))
	if _, err := c.EventQuery(e); err == nil || !strings.Contains(err.Error(), "cudaErrorInvalidResourceHandle (400)") {
		t.Errorf("query of a destroyed event: %v", err)
	}
	must(t, c.StreamDestroy(s1))
	must(t, c.StreamDestroy(s2))
	if err := c.StreamSynchronize(s1); err == nil {
		t.Error("sync of a destroyed stream succeeded")
	}
	if _, err := c.Malloc(1 << 62); err == nil || !strings.Contains(err.Error(), "cudaErrorMemoryAllocation (2): out of memory") {
		t.Errorf("huge malloc: %v", err)
	}
}

// TestCompile: the emulated NVRTC's log is the compiler's output, compile
// errors name the file and line, and what NVRTC refuses is refused.
func TestCompile(t *testing.T) {
	c := load(t)
	bin, _, err := c.Compile(axpySrc, "axpy.cu", "sm_90", "-DUNUSED=1", "--ptxas-options=-v", "--std=c++17")
	must(t, err)
	if string(bin[:4]) != "\x7fELF" {
		t.Errorf("image starts %q", bin[:4])
	}
	_, log, err := c.Compile("extern \"C\" __global__ void k(float *p) {\n\tp[0] = undefined_thing;\n}\n", "bad.cu", "sm_90")
	if err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION (6)") || !strings.Contains(log, "bad.cu:2:") ||
		!strings.Contains(log, "undefined_thing") {
		t.Errorf("compile error: %v\nlog: %s", err, log)
	}
	if _, _, err := c.Compile("#include <stdio.h>\n"+axpySrc, "inc.cu", "sm_90"); err == nil || !strings.Contains(err.Error(), "#include is not supported") {
		t.Errorf("#include: %v", err)
	}
	if _, _, err := c.Compile(axpySrc, "opt.cu", "sm_90", "--no-such-option"); err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_INVALID_OPTION (5)") {
		t.Errorf("unknown option: %v", err)
	}
	if _, _, err := c.Compile(axpySrc, "arch.cu", "compute_90"); err == nil || !strings.Contains(err.Error(), "not a real GPU architecture") {
		t.Errorf("virtual arch: %v", err)
	}
	lib, err := c.LibraryLoadData(bin)
	must(t, err)
	if _, err := c.LibraryGetKernel(lib, "nope"); err == nil || !strings.Contains(err.Error(), "the library has: axpy") {
		t.Errorf("missing kernel: %v", err)
	}
	must(t, c.LibraryUnload(lib))
	if _, err := c.LibraryLoadData([]byte("not an image")); err == nil || !strings.Contains(err.Error(), "cudaErrorInvalidKernelImage (200)") {
		t.Errorf("bad image: %v", err)
	}
}

// TestNoDriverNoDevice: the emulator can stand in for a machine without a
// driver or without a GPU, giving the errors DeviceCount promises. The
// environment is read per call, but runs in a child to keep this process's
// environment as it is.
func TestNoDriverNoDevice(t *testing.T) {
	if mode := os.Getenv("CUDAEMU_TEST_CHILD"); mode == "nodriver" || mode == "nodevice" {
		c := load(t)
		_, err := c.DeviceCount()
		want := "no NVIDIA driver (cudaErrorInsufficientDriver 35"
		if mode == "nodevice" {
			want = "no CUDA device (cudaErrorNoDevice 100"
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("%s: %v, want prefix %q", mode, err, want)
		}
		if _, err := c.BlasCreate(); err == nil || !strings.Contains(err.Error(), "CUBLAS_STATUS_NOT_INITIALIZED") {
			t.Fatalf("cublasCreate without a device: %v", err)
		}
		return
	}
	load(t) // skips where the emulator cannot load
	for _, mode := range []string{"nodriver", "nodevice"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoDriverNoDevice$", "-test.v")
		cmd.Env = append(os.Environ(), "CUDAEMU_TEST_CHILD="+mode, "CUDAEMU_NO_DRIVER="+map[string]string{"nodriver": "1", "nodevice": ""}[mode])
		if mode == "nodevice" {
			cmd.Env = append(cmd.Env, "CUDAEMU_DEVICE_COUNT=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Errorf("%s child: %v\n%s", mode, err, out)
		}
	}
}

// TestStreamOrder: work runs in order per stream and across streams only
// through events, so a missing StreamWaitEvent shows as stale data, as it
// can on a GPU; with the wait the data is right. Copies into pinned memory
// land when the stream gets there, not when queued.
func TestStreamOrder(t *testing.T) {
	if os.Getenv("CUDAEMU_SYNC") != "" {
		t.Skip("CUDAEMU_SYNC runs work as it is queued")
	}
	c := load(t)
	k := kernel(t, c, axpySrc, "axpy")
	s1, err := c.StreamCreate()
	must(t, err)
	s2, err := c.StreamCreate()
	must(t, err)
	defer c.StreamDestroy(s1)
	defer c.StreamDestroy(s2)
	e, err := c.EventCreate()
	must(t, err)
	defer c.EventDestroy(e)
	const n = 256
	x, y := upload(t, c, seq(n, 1)), upload(t, c, make([]float32, n))
	out, err := c.Malloc(4 * n)
	must(t, err)
	defer c.Free(out)
	host, err := c.MallocHost(4 * n)
	must(t, err)
	defer c.FreeHost(host)
	hv := unsafe.Slice((*float32)(host), n)
	run := func(wait bool) []float32 {
		must(t, c.MemsetAsync(y, 0, 4*n, s1))
		must(t, c.MemsetAsync(out, 0, 4*n, s2))
		must(t, c.StreamSynchronize(s1))
		must(t, c.StreamSynchronize(s2))
		for i := range hv {
			hv[i] = -7
		}
		must(t, c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{n, 1, 1}, 0, s1, y, x, float32(3), int32(n))) // y = 3x
		must(t, c.EventRecord(e, s1))
		if wait {
			must(t, c.StreamWaitEvent(s2, e))
		}
		must(t, c.MemcpyDtoDAsync(out, y, 4*n, s2))
		must(t, c.MemcpyDtoHAsync(host, out, 4*n, s2))
		if hv[0] != -7 {
			t.Errorf("a copy into pinned memory landed before its stream ran (wait=%v)", wait)
		}
		must(t, c.StreamSynchronize(s2))
		got := append([]float32(nil), hv...)
		must(t, c.DeviceSynchronize())
		return got
	}
	xs := seq(n, 1)
	if got := run(true); got[5] != 3*xs[5] {
		t.Errorf("with the wait: %v, want %v", got[5], 3*xs[5])
	}
	if got := run(false); got[5] != 0 {
		t.Errorf("without the wait s2 saw s1's kernel (%v): the emulator ran s1 early", got[5])
	}
}
