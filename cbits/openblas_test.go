package cbits

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

func TestOpenBLASSgemm(t *testing.T) {
	o, err := LoadOpenBLAS()
	if err != nil {
		t.Skipf("OpenBLAS not loadable (install libopenblas0-pthread): %v", err)
	}
	if !strings.Contains(strings.ToLower(o.Config()), "openblas") {
		t.Fatalf("config %q does not name OpenBLAS", o.Config())
	}
	// A is 2×3, B is 3×2 stored transposed (2×3), C = A·Bᵀ plus beta·C.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 1, 0, 1, 0}
	c := []float32{1, 1, 1, 1}
	o.Sgemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 2, c, 2)
	want := []float32{1 + 3 + 2, 2 + 2, 4 + 6 + 2, 5 + 2}
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("c = %v, want %v", c, want)
		}
	}
}

// configChildEnv makes TestOpenBLASCoreType the child process that loads
// OpenBLAS and prints its configuration.
const configChildEnv = "PPLAUNCH_TEST_OPENBLAS_CONFIG"

// loadedConfig loads OpenBLAS in a fresh process (it picks its kernels once,
// when it loads) with OPENBLAS_CORETYPE set to coretype, or unset if empty, and
// returns OpenBLAS's own description of itself.
func loadedConfig(t *testing.T, coretype string) string {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") })
	env = append(env, configChildEnv+"=1")
	if coretype != "" {
		env = append(env, "OPENBLAS_CORETYPE="+coretype)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenBLASCoreType$", "-test.count=1")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child with OPENBLAS_CORETYPE=%q: %v\n%s", coretype, err, out)
	}
	_, cfg, ok := strings.Cut(string(out), "config: ")
	if !ok {
		t.Fatalf("child with OPENBLAS_CORETYPE=%q printed no config:\n%s", coretype, out)
	}
	cfg, _, _ = strings.Cut(cfg, "\n")
	return cfg
}

// TestOpenBLASCoreType: a core the user names in OPENBLAS_CORETYPE is kept;
// without one, OpenBLAS runs the best kernels the CPU's features allow.
func TestOpenBLASCoreType(t *testing.T) {
	if os.Getenv(configChildEnv) != "" {
		o, err := LoadOpenBLAS()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("config: %s\n", o.Config())
		return
	}
	if _, err := LoadOpenBLAS(); err != nil {
		t.Skipf("OpenBLAS not loadable (install libopenblas0-pthread): %v", err)
	}
	if cfg := loadedConfig(t, "Prescott"); !strings.Contains(cfg, "Prescott") {
		t.Errorf("OPENBLAS_CORETYPE=Prescott not honoured: %s", cfg)
	}
	want := ""
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ:
		want = "SkylakeX"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		want = "Haswell"
	default:
		t.Skip("no AVX2 and FMA: pplaunch leaves the choice of kernels to OpenBLAS")
	}
	cfg := loadedConfig(t, "")
	if !strings.Contains(cfg, "DYNAMIC_ARCH") {
		t.Skipf("this OpenBLAS is built for one core only, OPENBLAS_CORETYPE does not apply: %s", cfg)
	}
	if !strings.Contains(cfg, want) {
		t.Errorf("without OPENBLAS_CORETYPE, OpenBLAS runs %q, want the %s kernels", cfg, want)
	}
}
