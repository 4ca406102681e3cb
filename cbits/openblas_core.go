package cbits

import (
	"fmt"
	"strings"
)

// openBLASCoreLevel ranks the x86 cores OpenBLAS names (openblas_get_corename,
// lower case) by the widest kernels it runs on them: 3 AVX-512, 2 AVX2 with
// FMA, 1 AVX; a core not listed (Prescott, Core2, Nehalem, Atom, Barcelona...)
// runs SSE kernels, 0.
var openBLASCoreLevel = map[string]int{
	"skylakex": 3, "cooperlake": 3, "sapphirerapids": 3,
	"haswell": 2, "zen": 2, "excavator": 2,
	"sandybridge": 1, "bulldozer": 1, "piledriver": 1, "steamroller": 1,
}

// openBLASForce is the core to name in OPENBLAS_CORETYPE for each level.
var openBLASForce = [...]string{1: "SANDYBRIDGE", 2: "HASWELL", 3: "SKYLAKEX"}

// levelNames say what a level's CPU has, for the message.
var levelNames = [...]string{0: "SSE", 1: "AVX", 2: "AVX2 and FMA", 3: "AVX-512"}

// CPULevel is the widest kernels a CPU with these features runs (the levels
// of openBLASCoreLevel).
func CPULevel(avx, avx2fma, avx512 bool) int {
	switch {
	case avx512:
		return 3
	case avx2fma:
		return 2
	case avx:
		return 1
	}
	return 0
}

// CoreFix decides, from the core OpenBLAS detected by itself and the CPU's
// level, which core to name in OPENBLAS_CORETYPE: "" where the detected core
// already runs kernels as wide as the CPU allows (OpenBLAS knows the CPU),
// else the family of the CPU's level (under some hypervisors OpenBLAS does
// not recognise the CPU and falls back to Prescott, ten times slower). It
// also returns the line that says so.
func CoreFix(detected string, level int) (force, note string) {
	if level <= 0 || level >= len(openBLASForce) {
		return "", ""
	}
	if openBLASCoreLevel[strings.ToLower(detected)] >= level {
		return "", ""
	}
	return openBLASForce[level], fmt.Sprintf("OpenBLAS took its %s kernels on a CPU with %s; pplaunch set OPENBLAS_CORETYPE=%s",
		detected, levelNames[level], openBLASForce[level])
}
