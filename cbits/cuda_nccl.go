//go:build cgo

package cbits

/*
static int pp_nc_ver(void *f, int *v) { return ((int (*)(int *))f)(v); }
static const char *pp_nc_s(void *f, int r) { return ((const char *(*)(int))f)(r); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// NCCLLib is a loaded libnccl.so.2 with every symbol the communicator binding
// uses resolved.
type NCCLLib struct {
	sym     [ncCount]unsafe.Pointer
	version int
	dir     string
}

var (
	ncclOnce sync.Once
	ncclLib  *NCCLLib
	ncclErr  error
)

// LoadNCCL finds and opens libnccl.so.2 once per process, in the order of
// LoadCUDA with nvidia/nccl/lib as the wheel's folder.
func LoadNCCL() (*NCCLLib, error) {
	ncclOnce.Do(func() {
		in := hostSearchInputs()
		ncclLib, ncclErr = loadNCCL(searchPlan(sonameNCCL, wheelDirNCCL, in))
	})
	return ncclLib, ncclErr
}

// LoadNCCLFrom loads libnccl.so.2 only from the given directories, not cached.
func LoadNCCLFrom(dirs ...string) (*NCCLLib, error) {
	return loadNCCL(dirsPlan(sonameNCCL, dirs, fileExists))
}

func loadNCCL(plan []place) (*NCCLLib, error) {
	l, search := findLib(sonameNCCL, plan)
	if l == nil {
		return nil, notFoundError("NCCL", []libSearch{search}, fixNCCL)
	}
	n := &NCCLLib{dir: l.dir()}
	if err := resolveAll(l, ncclSymbols[:], n.sym[:], "an NCCL 2.18 or newer is needed"); err != nil {
		return nil, fmt.Errorf("load NCCL: %w", err)
	}
	var v C.int
	if r := C.pp_nc_ver(n.sym[ncGetVersion], &v); r != 0 {
		return nil, n.err(r, "ncclGetVersion")
	}
	n.version = int(v)
	return n, nil
}

// ncclNames are ncclResult_t's names.
var ncclNames = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

// err is the error for an ncclResult_t, with NCCL's own text.
func (n *NCCLLib) err(r C.int, call string) error {
	if r == 0 {
		return nil
	}
	name := fmt.Sprintf("ncclResult%d", int(r))
	if int(r) < len(ncclNames) {
		name = ncclNames[r]
	}
	return &CUDAError{Lib: "NCCL", Call: call, Code: int(r), Name: name,
		Message: C.GoString(C.pp_nc_s(n.sym[ncGetErrorString], r))}
}

// Version is ncclGetVersion's code, e.g. 23203 for 2.32.3.
func (n *NCCLLib) Version() int { return n.version }

// VersionString writes the version as major.minor.patch.
func (n *NCCLLib) VersionString() string {
	v := n.version
	if v >= 10000 { // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
}

// Dir is the directory the library was loaded from.
func (n *NCCLLib) Dir() string { return n.dir }
