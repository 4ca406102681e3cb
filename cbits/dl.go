//go:build cgo

package cbits

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void *pp_dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static const char *pp_dlerror(void) { return dlerror(); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// library is a shared object opened with dlopen. The NVIDIA bindings will use
// the same loader: open the library, resolve every symbol up front, and report
// the first one missing by name.
type library struct {
	name   string
	handle unsafe.Pointer
}

// open dlopens name (a soname such as "libopenblas.so.0").
func open(name string) (*library, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := C.pp_dlopen(cname)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s", name, C.GoString(C.pp_dlerror()))
	}
	return &library{name: name, handle: h}, nil
}

// sym resolves one symbol; a missing symbol is an error naming library and symbol.
func (l *library) sym(name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	C.pp_dlerror() // clear any stale error
	p := C.dlsym(l.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("%s: symbol %s not found", l.name, name)
	}
	return p, nil
}
