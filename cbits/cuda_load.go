//go:build cgo

package cbits

/*
typedef int (*pp_ver_fn)(int *);
typedef int (*pp_prop_fn)(int, int *);
typedef int (*pp_nvver_fn)(int *, int *);
static int pp_ver(void *f, int *v) { return ((pp_ver_fn)f)(v); }
static int pp_prop(void *f, int t, int *v) { return ((pp_prop_fn)f)(t, v); }
static int pp_nvver(void *f, int *a, int *b) { return ((pp_nvver_fn)f)(a, b); }
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"
)

// CUDALibs are the loaded NVIDIA libraries (cudart, cuBLAS with cuBLASLt,
// NVRTC). Every symbol the binding calls is resolved when they load.
type CUDALibs struct {
	rt       [rtCount]unsafe.Pointer
	bl       [blCount]unsafe.Pointer
	nv       [nvCount]unsafe.Pointer
	versions CUDAVersions
}

var (
	cudaOnce sync.Once
	cudaLibs *CUDALibs
	cudaErr  error
)

// LoadCUDA finds and opens libcudart.so.13, libcublasLt.so.13, libcublas.so.13
// and libnvrtc.so.13 (and NVRTC's builtins beside it) once per process,
// looking in order: already loaded; each directory of $PPLAUNCH_CUDA_LIBS;
// nvidia/cu13/lib under every Python site-packages found; the loader path;
// $CUDA_PATH/lib64, $CUDA_HOME/lib64, /usr/local/cuda/lib64. When something
// is missing, the error names every library missing and every place looked at.
func LoadCUDA() (*CUDALibs, error) {
	cudaOnce.Do(func() {
		in := hostSearchInputs()
		cudaLibs, cudaErr = loadCUDA(func(soname string) []place { return searchPlan(soname, wheelDirCUDA, in) })
	})
	return cudaLibs, cudaErr
}

// LoadCUDAFrom loads only from the given directories, and is not cached (tests,
// the emulator). The emulator and the real libraries share sonames: loading
// both in one process is not supported; use a child process.
func LoadCUDAFrom(dirs ...string) (*CUDALibs, error) {
	return loadCUDA(func(soname string) []place { return dirsPlan(soname, dirs, fileExists) })
}

// loadCUDA opens the four libraries by plan (cuBLASLt before cuBLAS, which
// needs it), resolves their symbols, preloads NVRTC's builtins and reads the
// versions.
func loadCUDA(plan func(soname string) []place) (*CUDALibs, error) {
	c := &CUDALibs{}
	var lt [len(cublasLtSymbols)]unsafe.Pointer
	specs := []struct {
		soname string
		names  []string
		dst    []unsafe.Pointer
		need   string
	}{
		{sonameCudart, cudartSymbols[:], c.rt[:], "a CUDA 13 runtime is needed"},
		{sonameCublasLt, cublasLtSymbols[:], lt[:], "not cuBLASLt"},
		{sonameCublas, cublasSymbols[:], c.bl[:], "a cuBLAS 13 is needed"},
		{sonameNVRTC, nvrtcSymbols[:], c.nv[:], "an NVRTC 13 is needed"},
	}
	libs := make([]*library, len(specs))
	var missing []libSearch
	for i, s := range specs {
		l, search := findLib(s.soname, plan(s.soname))
		if l == nil {
			missing = append(missing, search)
		}
		libs[i] = l
	}
	if len(missing) > 0 {
		return nil, notFoundError("CUDA", missing, fixCUDA)
	}
	c.versions.Dirs = map[string]string{}
	for i, s := range specs {
		if err := resolveAll(libs[i], s.names, s.dst, s.need); err != nil {
			return nil, fmt.Errorf("load CUDA: %w", err)
		}
		c.versions.Dirs[s.soname] = libs[i].dir()
	}
	if err := c.readVersions(); err != nil {
		return nil, err
	}
	b, err := preloadBuiltins(libs[3].dir(), c.versions.NVRTCMajor, c.versions.NVRTCMinor)
	if err != nil {
		return nil, err
	}
	c.versions.Dirs[filepath.Base(b)] = filepath.Dir(b)
	return c, nil
}

// readVersions asks each library for its version; none of these needs a GPU.
func (c *CUDALibs) readVersions() error {
	v := &c.versions
	var d, r, maj, mnr, pat C.int
	if rc := C.pp_ver(c.rt[rtDriverGetVersion], &d); rc != 0 {
		return c.rtErr(rc, "cudaDriverGetVersion")
	}
	if rc := C.pp_ver(c.rt[rtRuntimeGetVersion], &r); rc != 0 {
		return c.rtErr(rc, "cudaRuntimeGetVersion")
	}
	v.Driver, v.Runtime = int(d), int(r)
	for i, p := range []*C.int{&maj, &mnr, &pat} { // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
		if rc := C.pp_prop(c.bl[blGetProperty], C.int(i), p); rc != 0 {
			return c.blasErr(rc, fmt.Sprintf("cublasGetProperty(%d)", i))
		}
	}
	v.CUBLAS = int(maj)*10000 + int(mnr)*100 + int(pat)
	if rc := C.pp_nvver(c.nv[nvVersion], &maj, &mnr); rc != 0 {
		return c.nvrtcErr(rc, "nvrtcVersion", "")
	}
	v.NVRTCMajor, v.NVRTCMinor = int(maj), int(mnr)
	return nil
}

// Versions are the loaded libraries' versions and directories.
func (c *CUDALibs) Versions() CUDAVersions {
	v := c.versions
	v.Dirs = make(map[string]string, len(c.versions.Dirs))
	for k, d := range c.versions.Dirs {
		v.Dirs[k] = d
	}
	return v
}
