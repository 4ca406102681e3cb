package cbits

import (
	"os"
	"reflect"
	"testing"
)

// TestParsePtxasInfo reads a report NVRTC 13.5 wrote for three kernels
// (testdata/ptxas_sm90.log, from Compile with --ptxas-options=-v).
func TestParsePtxasInfo(t *testing.T) {
	log, err := os.ReadFile("testdata/ptxas_sm90.log")
	if err != nil {
		t.Fatal(err)
	}
	want := []KernelResources{
		{Kernel: "spill", Arch: "sm_90", Registers: 40, StackFrame: 800},
		{Kernel: "scale_sum", Arch: "sm_90", Registers: 12, Barriers: 1, SharedBytes: 1024},
		{Kernel: "row_stats", Arch: "sm_90", Registers: 18, Barriers: 1, SharedBytes: 128},
	}
	if got := ParsePtxasInfo(string(log)); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	spill := "ptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas         .     96 bytes stack frame, 88 bytes spill stores, 84 bytes spill loads\nptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem\n"
	if got := ParsePtxasInfo(spill); len(got) != 1 || got[0] != (KernelResources{"k", "sm_80", 255, 1, 4096, 96, 88, 84}) {
		t.Errorf("spills: %+v", got)
	}
	if got := ParsePtxasInfo(""); len(got) != 0 {
		t.Errorf("empty log: %+v", got)
	}
}
