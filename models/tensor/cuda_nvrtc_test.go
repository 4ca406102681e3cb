package tensor

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

// realNVRTCEnv marks the child process that loads the real NVIDIA libraries
// (a process must not load them and the emulator both).
const realNVRTCEnv = "PPLAUNCH_TEST_REAL_NVRTC"

// TestKernelsCompileWithRealNVRTC compiles every kernel with NVIDIA's NVRTC to
// CUBIN for sm_80 and sm_90, in a child process, logs each kernel's registers
// as ptxas reports them, and fails on a kernel with no report, a stack frame
// or a spill. It skips, naming the pip packages, where the
// libraries are not installed.
func TestKernelsCompileWithRealNVRTC(t *testing.T) {
	if os.Getenv(realNVRTCEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKernelsCompileWithRealNVRTC$", "-test.v")
		cmd.Env = append(os.Environ(), realNVRTCEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child process:\n%s", out)
		if err != nil {
			t.Fatalf("child process: %v", err)
		}
		if m := regexp.MustCompile(`(?m)^\s*cuda_nvrtc_test.go:\d+: (no NVIDIA libraries.*)$`).FindSubmatch(out); m != nil {
			t.Skip(string(m[1]))
		}
		return
	}
	libs, err := cbits.LoadCUDA()
	if err != nil {
		t.Skipf("no NVIDIA libraries (pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc): %v", err)
	}
	v := libs.Versions()
	t.Logf("NVRTC %d.%d from %v", v.NVRTCMajor, v.NVRTCMinor, v.Dirs)
	src := KernelSource()
	for _, arch := range []string{"sm_80", "sm_90"} {
		cubin, log, err := libs.Compile(src, "pplaunch_kernels.cu", arch, append(kernelOptions, "--ptxas-options=-v")...)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(cubin) < 4 || string(cubin[1:4]) != "ELF" {
			t.Fatalf("%s: %d bytes that are not an ELF CUBIN", arch, len(cubin))
		}
		usage := ptxasUsage(log)
		for _, k := range KernelNames() {
			u, ok := usage[k]
			switch {
			case !ok || u.registers == 0:
				t.Errorf("%s: ptxas reports no registers for %s (%d entries)", arch, k, len(usage))
			case u.stack != 0 || u.spillStores != 0 || u.spillLoads != 0:
				// Every kernel lives in registers: a stack frame (a local
				// array indexed at run time) or a spill is a regression.
				t.Errorf("%s: %s uses %d bytes of stack, spills %d bytes and reloads %d", arch, k, u.stack, u.spillStores, u.spillLoads)
			}
		}
		var report []string
		for _, k := range KernelNames() {
			report = append(report, fmt.Sprintf("%s: %d registers", k, usage[k].registers))
		}
		t.Logf("%s: %d bytes of CUBIN\n%s", arch, len(cubin), strings.Join(report, "\n"))
	}
}

// kernelUsage is what ptxas -v says of one entry function.
type kernelUsage struct{ registers, stack, spillStores, spillLoads int }

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '(\w+)'`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasRegs  = regexp.MustCompile(`Used (\d+) registers`)
)

// ptxasUsage reads ptxas's -v log: each "Compiling entry function" line
// starts an entry, whose stack frame, spill and register lines follow it.
func ptxasUsage(log string) map[string]kernelUsage {
	out := map[string]kernelUsage{}
	entry := ""
	for _, l := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(l); m != nil {
			entry = m[1]
			continue
		}
		if entry == "" {
			continue
		}
		u := out[entry]
		if m := ptxasFrame.FindStringSubmatch(l); m != nil {
			u.stack, u.spillStores, u.spillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := ptxasRegs.FindStringSubmatch(l); m != nil {
			u.registers = atoi(m[1])
		}
		out[entry] = u
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the patterns match digits only
	return n
}
