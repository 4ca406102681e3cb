package tensor

import (
	"embed"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// kernelFiles are the CUDA C sources of the CUDA backend's kernels:
// header-free, compiled by NVRTC at run time (and by the emulator's host
// compiler in tests).
//
//go:embed kernels/*.cu
var kernelFiles embed.FS

// KernelSource is every kernel file joined in name order (00_common.cu, the
// shared helpers, first) as the one translation unit the backend compiles.
func KernelSource() string {
	names, _ := fs.Glob(kernelFiles, "kernels/*.cu") // the pattern is valid
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		src, _ := kernelFiles.ReadFile(n) // listed just above
		b.WriteString("// ---- " + n + "\n")
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}

var kernelDecl = regexp.MustCompile(`extern "C" __global__ void (\w+)\(`)

// KernelNames lists the kernels KernelSource defines, in source order.
func KernelNames() []string {
	var names []string
	for _, m := range kernelDecl.FindAllStringSubmatch(KernelSource(), -1) {
		names = append(names, m[1])
	}
	return names
}
