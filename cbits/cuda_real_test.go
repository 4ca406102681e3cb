//go:build cgo

package cbits

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"
)

// These tests use NVIDIA's real libraries from the pip wheels. Where they are
// missing the tests skip, unless PPLAUNCH_REQUIRE_CUDA_WHEELS=1 (set by CI,
// which installs them) makes that a failure. This test binary never loads the
// emulator; the stub scenarios run in child processes.

const wheelsHint = "pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc nvidia-nccl-cu13"

func realCUDA(t *testing.T) *CUDALibs {
	t.Helper()
	c, err := LoadCUDA()
	if err != nil {
		if os.Getenv("PPLAUNCH_REQUIRE_CUDA_WHEELS") == "1" {
			t.Fatalf("CUDA wheels required here: %v", err)
		}
		t.Skipf("NVIDIA CUDA 13 libraries not found (%s): %v", wheelsHint, firstLine(err))
	}
	return c
}

func firstLine(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }

// TestRealLibraries: every bound symbol resolves (LoadCUDA resolves them all
// or fails naming the first missing), versions are reported, and without a
// GPU DeviceCount says why instead of crashing.
func TestRealLibraries(t *testing.T) {
	c := realCUDA(t)
	v := c.Versions()
	t.Logf("driver %d, runtime %d, cuBLAS %d, NVRTC %d.%d, from %v", v.Driver, v.Runtime, v.CUBLAS, v.NVRTCMajor, v.NVRTCMinor, v.Dirs)
	if v.Runtime < 13000 || v.Runtime >= 14000 || v.CUBLAS < 130000 || v.NVRTCMajor != 13 {
		t.Errorf("versions %+v: want CUDA 13", v)
	}
	for _, so := range []string{sonameCudart, sonameCublasLt, sonameCublas, sonameNVRTC} {
		if v.Dirs[so] == "" {
			t.Errorf("no directory for %s", so)
		}
	}
	builtins := false
	for so := range v.Dirs {
		builtins = builtins || strings.HasPrefix(so, "libnvrtc-builtins.so.13.")
	}
	if !builtins {
		t.Errorf("NVRTC's builtins not preloaded: %v", v.Dirs)
	}
	n, err := c.DeviceCount()
	switch {
	case err == nil:
		t.Logf("%d GPUs", n)
	case strings.HasPrefix(err.Error(), "no NVIDIA driver (cudaErrorInsufficientDriver 35"),
		strings.HasPrefix(err.Error(), "no CUDA device (cudaErrorNoDevice 100"):
		t.Logf("no GPU here: %v", err)
		if v.Driver != 0 && strings.HasPrefix(err.Error(), "no NVIDIA driver") {
			t.Errorf("driver version %d but no driver", v.Driver)
		}
	default:
		t.Fatalf("DeviceCount: %v", err)
	}
}

const realKernel = `
extern "C" __global__ void scale_sum(float *out, const float *in, float a, int n) {
	__shared__ float s[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? a * in[i] : 0.0f;
	__syncthreads();
	for (unsigned h = blockDim.x / 2; h >= 32; h /= 2) {
		if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
		__syncthreads();
	}
	float v = threadIdx.x < 32 ? s[threadIdx.x] : 0.0f;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	if (threadIdx.x == 0) out[blockIdx.x] = v;
}
`

var ptxasRE = regexp.MustCompile(`Used (\d+) registers`)

// TestRealNVRTC compiles a kernel to CUBIN for sm_80 and sm_90 (an ELF for
// the CUDA machine) with ptxas's report of registers and spills in the log,
// and a compile error is an error carrying the log.
func TestRealNVRTC(t *testing.T) {
	c := realCUDA(t)
	for _, arch := range []string{"sm_80", "sm_90"} {
		bin, log, err := c.Compile(realKernel, "scale_sum.cu", arch, "--ptxas-options=-v")
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(bin) < 64 || string(bin[:4]) != "\x7fELF" || binary.LittleEndian.Uint16(bin[18:]) != 190 /* EM_CUDA */ {
			t.Fatalf("%s: %d bytes, not a CUDA ELF: % x", arch, len(bin), bin[:min(len(bin), 20)])
		}
		if !ptxasRE.MatchString(log) || !strings.Contains(log, "spill stores") || !strings.Contains(log, "for '"+arch+"'") {
			t.Errorf("%s: no register/spill report in the log:\n%s", arch, log)
		}
		res := ParsePtxasInfo(log)
		if len(res) != 1 || res[0].Kernel != "scale_sum" || res[0].Arch != arch || res[0].Registers == 0 || res[0].SharedBytes != 1024 {
			t.Errorf("%s: parsed %+v from\n%s", arch, res, log)
		}
		t.Logf("%s: %d bytes; %+v", arch, len(bin), res)
	}
	_, log, err := c.Compile("extern \"C\" __global__ void k(float *p) {\n  p[0] = undefined_thing;\n}\n", "bad.cu", "sm_90")
	if err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION (6)") || !strings.Contains(log, "bad.cu(2)") ||
		!strings.Contains(err.Error(), "undefined_thing") {
		t.Errorf("compile error: %v\nlog: %s", err, log)
	}
	builtins, err := os.ReadFile("testdata/builtins.cu")
	must(t, err)
	if _, log, err := c.Compile(string(builtins), "builtins.cu", "sm_90"); err != nil {
		t.Errorf("the emulator's builtins do not compile with NVRTC: %v\n%s", err, log)
	}
	if _, _, err := c.Compile(realKernel, "opt.cu", "sm_90", "--no-such-option"); err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_INVALID_OPTION (5)") {
		t.Errorf("unknown option: %v", err)
	}
}

// TestRealNCCL: libnccl.so.2 loads from the wheel with every symbol the
// binding needs, and reports a version of at least 2.30 (several ranks per
// GPU need it).
func TestRealNCCL(t *testing.T) {
	n, err := LoadNCCL()
	if err != nil {
		if os.Getenv("PPLAUNCH_REQUIRE_CUDA_WHEELS") == "1" {
			t.Fatalf("NCCL wheel required here: %v", err)
		}
		t.Skipf("NCCL not found (%s): %v", wheelsHint, firstLine(err))
	}
	t.Logf("NCCL %s (%d) from %s", n.VersionString(), n.Version(), n.Dir())
	if n.Version() < 23000 {
		t.Errorf("NCCL %s: want >= 2.30", n.VersionString())
	}
}

// TestRealGPU runs a kernel and an SGEMM on a GPU when there is one.
func TestRealGPU(t *testing.T) {
	c := realCUDA(t)
	if n, err := c.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no GPU: %v", err)
	}
	must(t, c.SetDevice(0))
	maj, err := c.DeviceAttribute(AttrComputeCapabilityMajor, 0)
	must(t, err)
	mnr, err := c.DeviceAttribute(AttrComputeCapabilityMinor, 0)
	must(t, err)
	bin, _, err := c.Compile(realKernel, "scale_sum.cu", fmt.Sprintf("sm_%d%d", maj, mnr))
	must(t, err)
	lib, err := c.LibraryLoadData(bin)
	must(t, err)
	defer c.LibraryUnload(lib)
	k, err := c.LibraryGetKernel(lib, "scale_sum")
	must(t, err)
	s, err := c.StreamCreate()
	must(t, err)
	defer c.StreamDestroy(s)
	const n, blocks = 1000, 4
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i%7) - 3
	}
	din, err := c.Malloc(4 * n)
	must(t, err)
	defer c.Free(din)
	dout, err := c.Malloc(4 * blocks)
	must(t, err)
	defer c.Free(dout)
	must(t, c.MemcpyHtoDAsync(din, unsafe.Pointer(&in[0]), 4*n, s))
	must(t, c.Launch(k, [3]uint32{blocks, 1, 1}, [3]uint32{256, 1, 1}, 0, s, dout, din, float32(2), int32(n)))
	out := make([]float32, blocks)
	must(t, c.MemcpyDtoHAsync(unsafe.Pointer(&out[0]), dout, 4*blocks, s))
	must(t, c.StreamSynchronize(s))
	for b := 0; b < blocks; b++ {
		var want float32
		for i := b * 256; i < (b+1)*256 && i < n; i++ {
			want += 2 * in[i]
		}
		if out[b] != want {
			t.Errorf("block %d: %v, want %v", b, out[b], want)
		}
	}
	// C (3x2) = A (3x4) * B (4x2), column-major with lda 5.
	h, err := c.BlasCreate()
	must(t, err)
	defer c.BlasDestroy(h)
	must(t, c.BlasSetStream(h, s))
	a := make([]float32, 5*4)
	bm := make([]float32, 4*2)
	for i := range a {
		a[i] = float32(i%5) - 1
	}
	for i := range bm {
		bm[i] = float32(i) / 2
	}
	da, _ := c.Malloc(4 * len(a))
	db, _ := c.Malloc(4 * len(bm))
	dc, _ := c.Malloc(4 * 6)
	defer c.Free(da)
	defer c.Free(db)
	defer c.Free(dc)
	must(t, c.MemcpyHtoDAsync(da, unsafe.Pointer(&a[0]), 4*len(a), s))
	must(t, c.MemcpyHtoDAsync(db, unsafe.Pointer(&bm[0]), 4*len(bm), s))
	must(t, c.Sgemm(h, false, false, 3, 2, 4, 1, da, 5, db, 4, 0, dc, 3))
	got := make([]float32, 6)
	must(t, c.MemcpyDtoHAsync(unsafe.Pointer(&got[0]), dc, 24, s))
	must(t, c.StreamSynchronize(s))
	for j := 0; j < 2; j++ {
		for i := 0; i < 3; i++ {
			var want float64
			for l := 0; l < 4; l++ {
				want += float64(a[i+5*l]) * float64(bm[l+4*j])
			}
			if math.Abs(float64(got[i+3*j])-want) > 1e-5 {
				t.Errorf("C[%d,%d] = %v, want %v", i, j, got[i+3*j], want)
			}
		}
	}
}
