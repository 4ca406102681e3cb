package cbits

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The search order for one NVIDIA library is a pure decision over the
// environment, the site-packages folders found and a file-existence test, so
// that it is table-tested without loading anything; the loader walks the plan.

// placeKind says how the loader tries a place.
type placeKind int

const (
	placeLoaded placeKind = iota // dlopen(soname, RTLD_NOLOAD): already in the process
	placeFile                    // dlopen(absolute path), when the file exists
	placeSoname                  // dlopen(soname): LD_LIBRARY_PATH, the ld.so cache
	placeUnset                   // an environment variable that is not set
)

// place is one step of a search.
type place struct {
	Kind   placeKind
	Where  string // what the step is, for the error message
	Path   string // the file, the soname, or the unset variable
	Exists bool   // placeFile: the file exists
}

// searchInputs are what a search plan depends on.
type searchInputs struct {
	Getenv func(string) string
	Sites  []string // site-packages folders, in order
	Exists func(path string) bool
}

// EnvCUDALibs names the directories (colon-separated) searched first for the
// NVIDIA libraries, after those already loaded.
const EnvCUDALibs = "PPLAUNCH_CUDA_LIBS"

// searchPlan lists where to look for soname, in order: already loaded;
// each directory of $PPLAUNCH_CUDA_LIBS; wheelDir under every site-packages;
// the loader's own path; $CUDA_PATH/lib64, $CUDA_HOME/lib64, /usr/local/cuda/lib64.
// A file named twice is tried once.
func searchPlan(soname, wheelDir string, in searchInputs) []place {
	plan := []place{{Kind: placeLoaded, Where: "already loaded in this process", Path: soname}}
	seen := map[string]bool{}
	file := func(where, dir string) {
		p := filepath.Join(dir, soname)
		if seen[p] {
			return
		}
		seen[p] = true
		plan = append(plan, place{Kind: placeFile, Where: where, Path: p, Exists: in.Exists(p)})
	}
	if v := in.Getenv(EnvCUDALibs); v != "" {
		for _, d := range strings.Split(v, ":") {
			if d != "" {
				file("$"+EnvCUDALibs, d)
			}
		}
	} else {
		plan = append(plan, place{Kind: placeUnset, Where: "$" + EnvCUDALibs, Path: EnvCUDALibs})
	}
	if len(in.Sites) == 0 {
		plan = append(plan, place{Kind: placeUnset, Where: "Python site-packages", Path: "none found"})
	}
	for _, s := range in.Sites {
		file("site-packages "+s, filepath.Join(s, wheelDir))
	}
	plan = append(plan, place{Kind: placeSoname, Where: "loader path (LD_LIBRARY_PATH, ld.so cache)", Path: soname})
	for _, v := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if d := in.Getenv(v); d != "" {
			file("$"+v, filepath.Join(d, "lib64"))
		} else {
			plan = append(plan, place{Kind: placeUnset, Where: "$" + v, Path: v})
		}
	}
	file("CUDA toolkit", "/usr/local/cuda/lib64")
	return plan
}

// dirsPlan lists only the given directories (LoadCUDAFrom).
func dirsPlan(soname string, dirs []string, exists func(string) bool) []place {
	var plan []place
	for _, d := range dirs {
		p := filepath.Join(d, soname)
		plan = append(plan, place{Kind: placeFile, Where: "directory given", Path: p, Exists: exists(p)})
	}
	return plan
}

// attempt is one place tried and what happened ("" when it loaded).
type attempt struct {
	Place  place
	Result string
}

// libSearch is the search for one library.
type libSearch struct {
	Soname   string
	Attempts []attempt
}

// notFoundError names every library missing and every place looked at for
// each, then says how to fix it. Libraries whose searches went the same way
// (the usual case: none of them is anywhere) share one list, with <lib>
// standing for each of them.
func notFoundError(what string, missing []libSearch, fix string) error {
	var b strings.Builder
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = m.Soname
	}
	fmt.Fprintf(&b, "load %s: %s not found", what, strings.Join(names, ", "))
	type group struct {
		sonames []string
		lines   []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, m := range missing {
		lines := searchLines(m.Attempts)
		generic := make([]string, len(lines))
		for i, l := range lines {
			generic[i] = strings.ReplaceAll(l, m.Soname, "<lib>")
		}
		key := strings.Join(generic, "\n")
		g := byKey[key]
		if g == nil {
			g = &group{lines: generic}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.sonames = append(g.sonames, m.Soname)
	}
	for _, g := range groups {
		if len(g.sonames) == 1 {
			fmt.Fprintf(&b, "\n%s, looked in:", g.sonames[0])
		} else {
			fmt.Fprintf(&b, "\n%s: each <lib> looked in:", strings.Join(g.sonames, ", "))
		}
		for _, l := range g.lines {
			if len(g.sonames) == 1 {
				l = strings.ReplaceAll(l, "<lib>", g.sonames[0])
			}
			b.WriteString("\n  " + l)
		}
	}
	if fix != "" {
		b.WriteString("\n" + fix)
	}
	return fmt.Errorf("%s", b.String())
}

// searchLines writes one line per place tried.
func searchLines(atts []attempt) []string {
	var out []string
	for _, a := range atts {
		switch a.Place.Kind {
		case placeUnset:
			if a.Place.Path == "none found" {
				out = append(out, a.Place.Where+": none found")
			} else {
				out = append(out, a.Place.Where+": not set")
			}
		case placeLoaded:
			out = append(out, a.Place.Where+": no")
		case placeSoname: // dlerror names the soname itself
			out = append(out, a.Place.Where+": "+a.Result)
		default:
			out = append(out, a.Place.Where+": "+a.Place.Path+": "+a.Result)
		}
	}
	return out
}

// Advice printed under a missing-library error.
const (
	fixCUDA = "fix: pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc (the CUDA 13 wheels), " +
		"or set " + EnvCUDALibs + " to the directory holding libcudart.so.13, libcublas.so.13, libcublasLt.so.13 and libnvrtc.so.13"
	fixNCCL = "fix: pip install nvidia-nccl-cu13, or set " + EnvCUDALibs + " to the directory holding libnccl.so.2"
)
