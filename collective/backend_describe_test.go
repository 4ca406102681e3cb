package collective

import (
	"errors"
	"strings"
	"testing"
)

// TestDescribeNCCL: `pplaunch devices` names the NCCL found and what
// --backend auto makes of it for one and two ranks per GPU; below NCCL 2.30
// two ranks on one GPU are tcp, naming the version.
func TestDescribeNCCL(t *testing.T) {
	gpu := BackendFacts{Device: "cuda", Stage: true, GPUs: 1}
	with := func(f func(*BackendFacts)) BackendFacts { b := gpu; f(&b); return b }
	for _, c := range []struct {
		name     string
		f        BackendFacts
		one, two string // substrings of each Auto line
		head     string // substring of the first printed line
	}{
		{"2.28.9", with(func(b *BackendFacts) { b.NCCL = 22809 }), "nccl (NCCL 2.28.9, 1 GPU(s))",
			"tcp, because 2 ranks on 1 GPU(s), and NCCL 2.28.9 refuses two ranks on one GPU (NCCL 2.30 or newer", "NCCL 2.28.9 from /nccl"},
		{"2.30 not enabled", with(func(b *BackendFacts) { b.NCCL = 23001 }), "nccl (", "tcp, because 2 ranks on 1 GPU(s): set NCCL_MULTI_RANK_GPU_ENABLE=1", "NCCL 2.30.1"},
		{"2.30 enabled", with(func(b *BackendFacts) { b.NCCL, b.MultiRank = 23001, true }), "nccl (", "nccl (NCCL 2.30.1", "NCCL 2.30.1"},
		{"no NCCL", with(func(b *BackendFacts) { b.NCCLErr = errors.New("libnccl.so.2 not found\nlooked in ...") }),
			"tcp, because NCCL did not load: libnccl.so.2 not found", "tcp, because NCCL did not load", "NCCL not loaded: libnccl.so.2 not found\n"},
	} {
		nc := describeNCCL(c.f, "/nccl")
		s := nc.String()
		if !strings.Contains(nc.Auto[AutoOnePerGPU], c.one) || !strings.Contains(nc.Auto[AutoTwoPerGPU], c.two) || !strings.Contains(s, c.head) {
			t.Errorf("%s:\n%s\nwant %q, %q and %q", c.name, s, c.one, c.two, c.head)
		}
	}
}
