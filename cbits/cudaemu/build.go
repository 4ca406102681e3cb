package cudaemu

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed src
var sources embed.FS

// cxx is the host C++ compiler: $CUDAEMU_CXX, else g++.
func cxx() string {
	if c := os.Getenv("CUDAEMU_CXX"); c != "" {
		return c
	}
	return "g++"
}

// targets are the libraries Build makes: output, sources, extra arguments.
var targets = []struct {
	out  string
	srcs []string
	args []string
}{
	{"libcudart.so.13", []string{"cudart.cc", "launch.cc", "blocks.cc", "check.cc", "order.cc", "elfsyms.cc"}, []string{"-ldl", "-lpthread"}},
	{"libcublasLt.so.13", []string{"stubs.c"}, []string{"-DCUBLASLT"}},
	{"libcublas.so.13", []string{"cublas.cc"}, []string{"-L.", "-l:libcudart.so.13", "-l:libcublasLt.so.13"}},
	{"libnvrtc.so.13", []string{"nvrtc.cc"}, []string{"-ldl"}},
	{"libnvrtc-builtins.so.13.0", []string{"stubs.c"}, nil},
}

// Build compiles the emulator's libraries into dir (which must exist), with
// the kernel header beside them where the emulated NVRTC looks for it.
func Build(dir string) error {
	c := cxx()
	if _, err := exec.LookPath(c); err != nil {
		return fmt.Errorf("cudaemu: no C++ compiler %q (install g++ or set CUDAEMU_CXX): %w", c, err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	srcDir := filepath.Join(dir, "src")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return err
	}
	err = fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("cudaemu: write sources: %w", err)
	}
	for _, h := range []string{"cudaemu_kernel.h", "emu_abi.h"} {
		b, _ := sources.ReadFile("src/" + h)
		if err := os.WriteFile(filepath.Join(dir, h), b, 0o644); err != nil {
			return err
		}
	}
	// cuBLAS links against the runtime and cuBLASLt: build it after the rest,
	// which build in parallel.
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for i := range targets {
		if targets[i].out == "libcublas.so.13" {
			continue
		}
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = compile(c, dir, i) }(i)
	}
	wg.Wait()
	for i := range targets {
		if targets[i].out == "libcublas.so.13" && errs[0] == nil && errs[1] == nil {
			errs[i] = compile(c, dir, i)
		}
	}
	return errors.Join(errs...)
}

// compile builds targets[i] in dir.
func compile(c, dir string, i int) error {
	t := targets[i]
	args := []string{"-O2", "-fPIC", "-shared", "-Wall", "-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=0",
		"-Wl,-soname," + t.out, "-Wl,-rpath,$ORIGIN", "-o", t.out}
	for _, s := range t.srcs {
		if strings.HasSuffix(s, ".cc") {
			args = append(args, "-std=c++17")
			break
		}
	}
	for _, s := range t.srcs {
		args = append(args, filepath.Join("src", s))
	}
	args = append(args, t.args...)
	cmd := exec.Command(c, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cudaemu: build %s: %s %s: %w\n%s", t.out, c, strings.Join(args, " "), err, out)
	}
	return nil
}

var (
	dirOnce sync.Once
	dirPath string
	dirErr  error
)

// Dir builds the emulator once per test binary and returns its directory, or
// skips the test, saying why, when there is no C++ compiler. The directory is
// kept under the user's cache directory, keyed by the sources and the
// compiler's version, so that test binaries share one build.
func Dir(t testing.TB) string {
	t.Helper()
	dirOnce.Do(func() { dirPath, dirErr = cachedBuild() })
	if errors.Is(dirErr, errNoCompiler) {
		t.Skipf("cudaemu: %v", dirErr)
	}
	if dirErr != nil {
		t.Fatalf("cudaemu: %v", dirErr)
	}
	return dirPath
}

var errNoCompiler = errors.New("no C++ compiler")

func cachedBuild() (string, error) {
	c := cxx()
	if _, err := exec.LookPath(c); err != nil {
		return "", fmt.Errorf("%w: %q not found (install g++ or set CUDAEMU_CXX)", errNoCompiler, c)
	}
	ver, err := exec.Command(c, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s --version: %v", errNoCompiler, c, err)
	}
	h := sha256.New()
	h.Write(ver)
	fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := sources.ReadFile(p)
			fmt.Fprintf(h, "%s %d\n", p, len(b))
			h.Write(b)
		}
		return nil
	})
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	final := filepath.Join(base, "pplaunch-cudaemu", hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(final, targets[len(targets)-1].out)); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), "build-")
	if err != nil {
		return "", err
	}
	if err := Build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	// Another test binary may have finished the same build first: either copy is good.
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(final, targets[len(targets)-1].out)); serr != nil {
			return "", err
		}
	}
	return final, nil
}
