package tensor

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

// realNVRTCEnv marks the child process that loads the real NVIDIA libraries
// (a process must not load them and the emulator both).
const realNVRTCEnv = "PPLAUNCH_TEST_REAL_NVRTC"

// TestKernelsCompileWithRealNVRTC compiles every kernel with NVIDIA's NVRTC to
// CUBIN for sm_80 and sm_90, in a child process, logs registers and spills as
// ptxas reports them, and fails on a spill. It skips, naming the pip packages, where the
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
	registers := map[string]string{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		cubin, log, err := libs.Compile(src, "pplaunch_kernels.cu", arch, append(kernelOptions, "--ptxas-options=-v")...)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(cubin) < 4 || string(cubin[1:4]) != "ELF" {
			t.Fatalf("%s: %d bytes that are not an ELF CUBIN", arch, len(cubin))
		}
		entries := regexp.MustCompile(`Compiling entry function '(\w+)'`).FindAllStringSubmatch(log, -1)
		for _, k := range KernelNames() {
			if !strings.Contains(log, "'"+k+"'") {
				t.Errorf("%s: ptxas reports no entry %s (%d entries)", arch, k, len(entries))
			}
		}
		// ptxas reports each entry's registers (the fused attention's are
		// the most: its accumulators live there).
		for _, chunk := range strings.Split(log, "Compiling entry function '")[1:] {
			name, rest, _ := strings.Cut(chunk, "'")
			if m := regexp.MustCompile(`Used (\d+) registers`).FindStringSubmatch(rest); m != nil {
				registers[arch+" "+name] = m[1]
			}
		}
		for _, k := range KernelNames() {
			if registers[arch+" "+k] == "" {
				t.Errorf("%s: ptxas reports no register count for %s", arch, k)
			}
		}
		// Every kernel is small enough to live in registers: a spill is a
		// regression (ptxas: "N bytes spill stores, M bytes spill loads").
		for _, m := range regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`).FindAllStringSubmatch(log, -1) {
			if m[1] != "0" || m[2] != "0" {
				t.Errorf("%s: a kernel spills registers: %s", arch, m[0])
			}
		}
		var report []string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "Compiling entry") || strings.Contains(l, "registers") || strings.Contains(l, "spill") {
				report = append(report, strings.TrimSpace(l))
			}
		}
		t.Logf("%s: %d bytes of CUBIN\n%s", arch, len(cubin), strings.Join(report, "\n"))
	}
}
