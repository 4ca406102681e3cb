package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// geluChildEnv, when set, makes TestGeluFallbackWithoutAVX2 the child process:
// it writes its GELU results to the file the variable names.
const geluChildEnv = "PPLAUNCH_TEST_GELU_OUT"

// geluOutputs runs the backend's Gelu and GeluBackward on a fixed input long
// enough to be cut into several parallel blocks with a ragged tail.
func geluOutputs() []float32 {
	r := rand.New(rand.NewPCG(31, 32))
	n := 3*rowGrain*256 + 13
	x, dy := New(n), New(n)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64() * 4)
		dy.Data[i] = float32(r.NormFloat64())
	}
	x.Data[0], x.Data[1], x.Data[2] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())
	y, th, dx := New(n), New(n), New(n)
	be := gonumCPU()
	be.Gelu(y, th, x)
	be.GeluBackward(dx, dy, x, th)
	return slices.Concat(y.Data, th.Data, dx.Data)
}

// firstDiff is the first index where a and b differ in bits (or in length), or -1.
func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestGeluFallbackWithoutAVX2 runs this test binary again with AVX2 masked off
// (GODEBUG=cpu.avx2=off, which golang.org/x/sys/cpu honours, as a CPU without
// AVX2 would report): the kernel is chosen at run time, so the child must take
// the scalar path, and its results must be this process's bits.
func TestGeluFallbackWithoutAVX2(t *testing.T) {
	if out := os.Getenv(geluChildEnv); out != "" {
		if hasAVX2 {
			t.Fatal("GODEBUG=cpu.avx2=off, but the AVX2 kernel is still chosen")
		}
		v := geluOutputs()
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !hasAVX2 {
		t.Log("this CPU has no AVX2: both processes take the scalar path")
	}
	path := filepath.Join(t.TempDir(), "gelu.bin")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGeluFallbackWithoutAVX2$", "-test.count=1")
	cmd.Env = append(os.Environ(), geluChildEnv+"="+path, "GODEBUG=cpu.avx2=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child without AVX2: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "PASS") {
		t.Fatalf("child without AVX2 did not run the test:\n%s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	child := make([]float32, len(b)/4)
	for i := range child {
		child[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if i := firstDiff(child, geluOutputs()); i >= 0 {
		t.Fatalf("value %d differs between the AVX2 process and the one without (%d values)", i, len(child))
	}
}

// TestGeluScalarPathThroughBackend turns the vector kernel off in this process
// and checks the backend's results keep their bits.
func TestGeluScalarPathThroughBackend(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU: the backend already runs the scalar path (TestGeluFallbackWithoutAVX2 covers it)")
	}
	vec := geluOutputs()
	hasAVX2 = false
	defer func() { hasAVX2 = true }()
	if n := geluVector(make([]float32, 64), make([]float32, 64), make([]float32, 64)); n != 0 {
		t.Fatalf("vector kernel ran on %d elements with AVX2 off", n)
	}
	if i := firstDiff(geluOutputs(), vec); i >= 0 {
		t.Fatalf("value %d differs between the AVX2 and scalar paths", i)
	}
}
