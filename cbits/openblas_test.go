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
// when it loads) with OPENBLAS_CORETYPE set to coretype, or unset if empty,
// picks them again for reselect where set, and returns OpenBLAS's own
// description of itself and pplaunch's note about the core.
func loadedConfig(t *testing.T, coretype, reselect string) loaded {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") })
	env = append(env, configChildEnv+"=1", reselectEnv+"="+reselect)
	if coretype != "" {
		env = append(env, "OPENBLAS_CORETYPE="+coretype)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenBLASCoreType$", "-test.count=1")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child with OPENBLAS_CORETYPE=%q: %v\n%s", coretype, err, out)
	}
	line := func(key string) string {
		_, v, ok := strings.Cut(string(out), key+": ")
		if !ok {
			t.Fatalf("child with OPENBLAS_CORETYPE=%q printed no %s:\n%s", coretype, key, out)
		}
		v, _, _ = strings.Cut(v, "\n")
		return v
	}
	return loaded{config: line("config"), core: line("core"), note: line("note")}
}

// loaded is what a child process printed about the OpenBLAS it loaded.
type loaded struct{ config, core, note string }

// reselectEnv makes the child pick OpenBLAS's kernels again for the core it
// names, as pplaunch does where OpenBLAS's detection falls short.
const reselectEnv = "PPLAUNCH_TEST_OPENBLAS_RESELECT"

// TestOpenBLASCoreType: a core the user names in OPENBLAS_CORETYPE is kept;
// without one, OpenBLAS runs kernels as wide as the CPU's features allow,
// detected by itself (and then pplaunch leaves it alone) or chosen by
// pplaunch, which says so; picking again after loading takes effect.
func TestOpenBLASCoreType(t *testing.T) {
	if os.Getenv(configChildEnv) != "" {
		o, err := LoadOpenBLAS()
		if err != nil {
			t.Fatal(err)
		}
		if core := os.Getenv(reselectEnv); core != "" {
			if err := o.reselect(core); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("config: %s\n", o.Config())
		fmt.Printf("note: %s\n", o.Note())
		fmt.Printf("core: %s\n", o.coreName())
		return
	}
	if _, err := LoadOpenBLAS(); err != nil {
		t.Skipf("OpenBLAS not loadable (install libopenblas0-pthread): %v", err)
	}
	if l := loadedConfig(t, "Prescott", ""); l.core != "Prescott" || l.note != "" {
		t.Errorf("OPENBLAS_CORETYPE=Prescott not honoured: %+v", l)
	}
	level := CPULevel(cpu.X86.HasAVX, cpu.X86.HasAVX2 && cpu.X86.HasFMA,
		cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ)
	if level < 2 {
		t.Skip("no AVX2 and FMA: pplaunch leaves the choice of kernels to OpenBLAS")
	}
	l := loadedConfig(t, "", "")
	if !strings.Contains(l.config, "DYNAMIC_ARCH") {
		t.Skipf("this OpenBLAS is built for one core only, OPENBLAS_CORETYPE does not apply: %s", l.config)
	}
	if openBLASCoreLevel[strings.ToLower(l.core)] < level {
		t.Errorf("without OPENBLAS_CORETYPE, OpenBLAS runs %q (%s), narrower than the CPU's level %d", l.core, l.config, level)
	}
	t.Logf("OpenBLAS runs %s; pplaunch's note: %q", l.core, l.note)
	// Picking again after loading takes effect (the path pplaunch takes when
	// OpenBLAS falls back to narrow kernels).
	if l := loadedConfig(t, "", "Prescott"); l.core != "Prescott" {
		t.Errorf("reselecting Prescott after loading left %+v", l)
	}
}
