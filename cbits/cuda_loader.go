//go:build cgo

package cbits

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

static void *pp_nv_open(const char *name, int noload) {
	return dlopen(name, RTLD_NOW | RTLD_LOCAL | (noload ? RTLD_NOLOAD : 0));
}
static const char *pp_nv_dlerror(void) { const char *e = dlerror(); return e ? e : "unknown dlopen error"; }
static const char *pp_nv_path(void *h) {
	struct link_map *lm = 0;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == 0) return 0;
	return lm->l_name;
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"sort"
	"unsafe"
)

// openPlace tries one place of a plan: the library, or what went wrong.
func openPlace(p place) (*library, string) {
	var h unsafe.Pointer
	switch p.Kind {
	case placeUnset:
		return nil, "not set"
	case placeFile:
		if !p.Exists {
			return nil, "no such file"
		}
		h = dlopenFlags(p.Path, false)
	case placeLoaded:
		if h = dlopenFlags(p.Path, true); h == nil {
			return nil, "no"
		}
	case placeSoname:
		h = dlopenFlags(p.Path, false)
	}
	if h == nil {
		return nil, C.GoString(C.pp_nv_dlerror())
	}
	l := &library{name: p.Path, handle: h}
	if path := C.pp_nv_path(h); path != nil && C.GoString(path) != "" {
		l.name = C.GoString(path)
	}
	return l, ""
}

func dlopenFlags(name string, noload bool) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	nl := C.int(0)
	if noload {
		nl = 1
	}
	return C.pp_nv_open(cname, nl)
}

// isLoaded says whether a library with this soname is in the process.
func isLoaded(soname string) bool { return dlopenFlags(soname, true) != nil }

// findLib walks plan until one place loads; the search records every step.
func findLib(soname string, plan []place) (*library, libSearch) {
	s := libSearch{Soname: soname}
	for _, p := range plan {
		l, why := openPlace(p)
		s.Attempts = append(s.Attempts, attempt{Place: p, Result: why})
		if l != nil {
			return l, s
		}
	}
	return nil, s
}

// resolveAll fills dst[i] with the address of names[i]; the first missing
// symbol is an error naming the library's file and the symbol.
func resolveAll(l *library, names []string, dst []unsafe.Pointer, need string) error {
	for i, n := range names {
		p, err := l.sym(n)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, need)
		}
		dst[i] = p
	}
	return nil
}

// dir is the directory of the library's file.
func (l *library) dir() string { return filepath.Dir(l.name) }

// preloadBuiltins opens NVRTC's builtins library by absolute path from NVRTC's
// own directory (some NVRTC 13 wheels have no RUNPATH to find it), preferring
// the one of NVRTC's minor version. It returns the file opened.
func preloadBuiltins(nvrtcDir string, major, minor int) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(nvrtcDir, builtinsPattern))
	if len(matches) == 0 {
		return "", fmt.Errorf("load CUDA: %s not found beside %s: NVRTC needs it to compile (reinstall nvidia-cuda-nvrtc)",
			builtinsPattern, filepath.Join(nvrtcDir, sonameNVRTC))
	}
	sort.Strings(matches)
	pick := matches[len(matches)-1]
	want := filepath.Join(nvrtcDir, fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor))
	for _, m := range matches {
		if m == want {
			pick = m
		}
	}
	if dlopenFlags(pick, false) == nil {
		return "", fmt.Errorf("load CUDA: dlopen %s: %s", pick, C.GoString(C.pp_nv_dlerror()))
	}
	return pick, nil
}
