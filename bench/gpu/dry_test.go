package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// Set by `make gpu-dry`: where the dry run's summary.md and logs.tgz go, and
// the folder of the binaries it checks (bin/ after make gpu-bin).
const (
	dryOutEnv = "PPLAUNCH_GPU_DRY_OUT"
	dryBinEnv = "PPLAUNCH_BIN"
)

// TestGPUDry is `make gpu-dry`: bench/gpu/check.sh end to end over the CPU
// emulator (QUICK=1, a small model, every step's limit four times its GPU
// one, since the emulator runs each GPU thread as a fiber): it exits 0 and leaves summary.md with
// PASS and SKIP lines and no FAIL, and logs.tgz of logs only under 5 MiB.
// It takes minutes, so it runs only when make gpu-dry asks for it.
func TestGPUDry(t *testing.T) {
	out := os.Getenv(dryOutEnv)
	if out == "" {
		t.Skipf("the dry run takes minutes: make gpu-dry (or make gpu-dry OUT=DIR) runs it with %s set", dryOutEnv)
	}
	bin := os.Getenv(dryBinEnv)
	if bin == "" {
		t.Fatalf("%s is not set: run make gpu-dry, which builds bin/ first", dryBinEnv)
	}
	emu := cudaemu.Dir(t)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(out, "summary.md"))
	_ = os.Remove(filepath.Join(out, "logs.tgz"))
	cmd := exec.Command("bash", "check.sh", out)
	cmd.Env = append(os.Environ(), "DRY=1", "QUICK=1", "PPLAUNCH_CUDA_LIBS="+emu, dryBinEnv+"="+bin,
		"TRAIN_ARGS=--layers 4 --width 32 --heads 2 --seq 16 --microbatches 4 --microbatch-size 1",
		"TRAIN_STEPS=3", "SCALE_STEPS=1", "BUDGET=1500", "SLOW=4", "NCCL_MULTI_RANK_GPU_ENABLE=")
	// The script's output goes to the terminal as it runs (make gpu-dry
	// takes minutes); the test reads the files it leaves.
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("check.sh over the emulator: %v", err)
	}
	md := read(t, filepath.Join(out, "summary.md"))
	if !strings.HasPrefix(md, "# pplaunch GPU check: dry run over the CPU emulator\n") {
		t.Errorf("summary.md starts %q", md[:min(len(md), 80)])
	}
	for _, want := range []string{"\nPASS ops-tensor: ", "\nPASS train-cuda: ", "\nPASS losses-cuda-vs-cpu: ", "\nPASS same-bits-cuda-1f1b: ", "\nPASS same-bits-cuda-bf16-1f1b: ",
		"\nSKIP nccl-shared: NCCL 2.28.9 is below 2.30", "\nSKIP speed: ", "\nSKIP sanitizer-racecheck: "} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md has no %q", strings.TrimSpace(want))
		}
	}
	if m := regexp.MustCompile(`(?m)^FAIL .*$`).FindAllString(md, -1); len(m) > 0 {
		t.Errorf("failed checks:\n%s", strings.Join(m, "\n"))
	}
	var names []string
	entries, err := os.ReadDir(filepath.Join(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "logs.tgz summary.md" {
		t.Errorf("%s holds %v, want only logs.tgz and summary.md", out, names)
	}
	logs := archived(t, filepath.Join(out, "logs.tgz"))
	for _, n := range logs {
		if !strings.HasPrefix(n, "logs/") || !strings.HasSuffix(n, ".log") {
			t.Errorf("logs.tgz holds %s, want logs/*.log only", n)
		}
	}
	if !slices.Contains(logs, "logs/train-cuda.log") {
		t.Errorf("logs.tgz has no logs/train-cuda.log: %v", logs)
	}
}
