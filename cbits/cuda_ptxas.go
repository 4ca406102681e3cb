package cbits

import (
	"regexp"
	"strconv"
)

// KernelResources is what ptxas reports for one kernel when Compile is given
// "--ptxas-options=-v" (NVRTC 13 accepts it and puts the report in the log).
type KernelResources struct {
	Kernel, Arch string
	Registers    int
	Barriers     int
	SharedBytes  int // static shared memory
	StackFrame   int // bytes of local memory per thread
	SpillStores  int // bytes
	SpillLoads   int // bytes
}

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([^']+)' for '([^']+)'`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers`)
	ptxasBar   = regexp.MustCompile(`used (\d+) barriers`)
	ptxasSmem  = regexp.MustCompile(`(\d+) bytes smem`)
	lineRE     = regexp.MustCompile(`[^\n]+`)
)

// ParsePtxasInfo reads ptxas's verbose report from an NVRTC log: one entry
// per kernel, in the order compiled. A log without a report gives none.
func ParsePtxasInfo(log string) []KernelResources {
	var out []KernelResources
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	for _, l := range lineRE.FindAllString(log, -1) {
		if m := ptxasEntry.FindStringSubmatch(l); m != nil {
			out = append(out, KernelResources{Kernel: m[1], Arch: m[2]})
			continue
		}
		if len(out) == 0 {
			continue
		}
		k := &out[len(out)-1]
		if m := ptxasFrame.FindStringSubmatch(l); m != nil {
			k.StackFrame, k.SpillStores, k.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := ptxasUsed.FindStringSubmatch(l); m != nil {
			k.Registers = atoi(m[1])
			if b := ptxasBar.FindStringSubmatch(l); b != nil {
				k.Barriers = atoi(b[1])
			}
			if s := ptxasSmem.FindStringSubmatch(l); s != nil {
				k.SharedBytes = atoi(s[1])
			}
		}
	}
	return out
}
