package cbits

import (
	"regexp"
	"strconv"
	"sync"
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

// ptxasPatterns are the lines of ptxas's report, compiled at the first
// report read rather than at the start of every process that links cbits.
type ptxasPatterns struct{ entry, frame, used, bar, smem, line *regexp.Regexp }

var ptxasLines = sync.OnceValue(func() ptxasPatterns {
	return ptxasPatterns{
		entry: regexp.MustCompile(`Compiling entry function '([^']+)' for '([^']+)'`),
		frame: regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`),
		used:  regexp.MustCompile(`Used (\d+) registers`),
		bar:   regexp.MustCompile(`used (\d+) barriers`),
		smem:  regexp.MustCompile(`(\d+) bytes smem`),
		line:  regexp.MustCompile(`[^\n]+`),
	}
})

// ParsePtxasInfo reads ptxas's verbose report from an NVRTC log: one entry
// per kernel, in the order compiled. A log without a report gives none.
func ParsePtxasInfo(log string) []KernelResources {
	var out []KernelResources
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	re := ptxasLines()
	for _, l := range re.line.FindAllString(log, -1) {
		if m := re.entry.FindStringSubmatch(l); m != nil {
			out = append(out, KernelResources{Kernel: m[1], Arch: m[2]})
			continue
		}
		if len(out) == 0 {
			continue
		}
		k := &out[len(out)-1]
		if m := re.frame.FindStringSubmatch(l); m != nil {
			k.StackFrame, k.SpillStores, k.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := re.used.FindStringSubmatch(l); m != nil {
			k.Registers = atoi(m[1])
			if b := re.bar.FindStringSubmatch(l); b != nil {
				k.Barriers = atoi(b[1])
			}
			if s := re.smem.FindStringSubmatch(l); s != nil {
				k.SharedBytes = atoi(s[1])
			}
		}
	}
	return out
}
