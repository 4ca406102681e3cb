//go:build cgo

package cbits

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The loader tests build fake NVIDIA libraries with cc: each exports exactly
// the symbols the binding resolves (every one returning success) except a few
// with behaviour: cudaRuntimeGetVersion reports a mark saying which tree a
// library came from, cudaGetDeviceCount returns $STUB_DEVCOUNT_RC. Loading
// is process-wide and sticky, so each scenario runs in a child process with
// an environment of its own (no python3 on PATH, HOME and the prefixes
// pointing into the temporary tree).

const stubChildEnv = "CBITS_LOADER_CHILD"

var stubBodies = map[string]string{
	"cudaGetDeviceCount":   `int cudaGetDeviceCount(int *n) { const char *e = getenv("STUB_DEVCOUNT_RC"); *n = e ? 0 : 2; return e ? atoi(e) : 0; }`,
	"cudaGetErrorName":     `const char *cudaGetErrorName(int e) { return e == 35 ? "cudaErrorInsufficientDriver" : e == 100 ? "cudaErrorNoDevice" : "cudaErrorStub"; }`,
	"cudaGetErrorString":   `const char *cudaGetErrorString(int e) { return "stub error"; }`,
	"cudaDriverGetVersion": `int cudaDriverGetVersion(int *v) { *v = 0; return 0; }`,
	"nvrtcVersion":         `int nvrtcVersion(int *a, int *b) { *a = 13; *b = 0; return 0; }`,
	"ncclGetVersion":       `int ncclGetVersion(int *v) { *v = 23203; return 0; }`,
	"cublasGetProperty":    `int cublasGetProperty(int t, int *v) { *v = t == 0 ? 13 : 1; return 0; }`,
}

// stubSource exports names, leaving out drop, with cudaRuntimeGetVersion
// reporting mark.
func stubSource(names []string, drop string, mark int) string {
	var b strings.Builder
	b.WriteString("#include <stdlib.h>\n")
	for _, n := range names {
		switch {
		case n == drop:
		case n == "cudaRuntimeGetVersion":
			fmt.Fprintf(&b, "int cudaRuntimeGetVersion(int *v) { *v = %d; return 0; }\n", mark)
		case stubBodies[n] != "":
			b.WriteString(stubBodies[n] + "\n")
		default:
			fmt.Fprintf(&b, "int %s(void) { return 0; }\n", n)
		}
	}
	return b.String()
}

type stubTrees struct {
	root, env, site, venv, broken, empty, emptyVenv string
}

// buildStubs compiles the stub libraries once and lays out the trees:
// env/ (mark 13001), a virtual environment whose site-packages holds the
// wheels' layout (mark 13002), broken/ (cudart without cudaLibraryGetKernel),
// and empty places.
func buildStubs(t *testing.T) stubTrees {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skipf("no C compiler (cc) to build stub libraries: %v", err)
	}
	s, err := makeStubTrees(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func makeStubTrees(root string) (stubTrees, error) {
	s := stubTrees{root: root, env: filepath.Join(root, "env"), venv: filepath.Join(root, "venv"),
		broken: filepath.Join(root, "broken"), empty: filepath.Join(root, "empty"), emptyVenv: filepath.Join(root, "emptyvenv")}
	sp := filepath.Join(s.venv, "lib/python3.99/site-packages")
	s.site = filepath.Join(sp, wheelDirCUDA)
	ncclSite := filepath.Join(sp, wheelDirNCCL)
	for _, d := range []string{s.env, s.site, ncclSite, s.broken, s.empty, filepath.Join(s.emptyVenv, "lib/python3.99/site-packages")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return s, err
		}
	}
	type lib struct {
		dirs   []string
		soname string
		src    string
	}
	all := []string{s.env, s.site, s.broken}
	libs := []lib{
		{[]string{s.env}, sonameCudart, stubSource(cudartSymbols[:], "", 13001)},
		{[]string{s.site}, sonameCudart, stubSource(cudartSymbols[:], "", 13002)},
		{[]string{s.broken}, sonameCudart, stubSource(cudartSymbols[:], "cudaLibraryGetKernel", 13003)},
		{all, sonameCublasLt, stubSource(cublasLtSymbols[:], "", 0)},
		{all, sonameCublas, stubSource(cublasSymbols[:], "", 0)},
		{all, sonameNVRTC, stubSource(nvrtcSymbols[:], "", 0)},
		{all, "libnvrtc-builtins.so.13.0", "int stub_builtins(void) { return 0; }\n"},
		{[]string{s.env, ncclSite}, sonameNCCL, stubSource(ncclSymbols[:], "", 0)},
	}
	errs := make([]error, len(libs))
	var wg sync.WaitGroup
	for i, l := range libs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = buildStub(root, fmt.Sprintf("stub%d", i), l.soname, l.src, l.dirs)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return s, e
		}
	}
	return s, nil
}

// buildStub compiles src as soname and copies it into every dir.
func buildStub(root, base, soname, src string, dirs []string) error {
	c, so := filepath.Join(root, base+".c"), filepath.Join(root, base+".so")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-w", "-Wl,-soname,"+soname, "-o", so, c).CombinedOutput(); err != nil {
		return fmt.Errorf("cc %s: %v\n%s", soname, err, out)
	}
	b, err := os.ReadFile(so)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, soname), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// runStubChild runs scenario in a child with only the given environment
// (plus what the race detector and Go need).
func runStubChild(t *testing.T, scenario string, s stubTrees, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoaderScenario$", "-test.v")
	cmd.Env = append([]string{stubChildEnv + "=" + scenario, "STUB_ROOT=" + s.root, "PATH=", "HOME=" + filepath.Join(s.root, "home"),
		"TMPDIR=" + os.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLoaderScenario") {
		t.Fatalf("scenario %s: %v\n%s", scenario, err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Logf("scenario %s skipped:\n%s", scenario, out)
	}
}

func TestLoaderStubs(t *testing.T) {
	s := buildStubs(t)
	t.Run("env-wins", func(t *testing.T) {
		runStubChild(t, "env-wins", s, EnvCUDALibs+"="+s.empty+":"+s.env, "VIRTUAL_ENV="+s.venv)
	})
	t.Run("site-packages", func(t *testing.T) { runStubChild(t, "site", s, "VIRTUAL_ENV="+s.venv) })
	t.Run("already-loaded", func(t *testing.T) {
		runStubChild(t, "already-loaded", s, EnvCUDALibs+"="+s.env, "VIRTUAL_ENV="+s.venv)
	})
	t.Run("missing", func(t *testing.T) {
		runStubChild(t, "missing", s, EnvCUDALibs+"="+s.empty, "VIRTUAL_ENV="+s.emptyVenv, "CUDA_PATH="+filepath.Join(s.root, "cudapath"))
	})
	t.Run("missing-symbol", func(t *testing.T) { runStubChild(t, "missing-symbol", s, EnvCUDALibs+"="+s.broken) })
	t.Run("no-driver", func(t *testing.T) { runStubChild(t, "no-driver", s, EnvCUDALibs+"="+s.env, "STUB_DEVCOUNT_RC=35") })
	t.Run("no-device", func(t *testing.T) {
		runStubChild(t, "no-device", s, EnvCUDALibs+"="+s.env, "STUB_DEVCOUNT_RC=100", "CUDA_VISIBLE_DEVICES=")
	})
}

// TestLoaderScenario is the child side of TestLoaderStubs.
func TestLoaderScenario(t *testing.T) {
	sc := os.Getenv(stubChildEnv)
	if sc == "" {
		t.Skip("runs only as a child of TestLoaderStubs")
	}
	f := loaderScenarios[sc]
	if f == nil {
		t.Fatalf("unknown scenario %q", sc)
	}
	root := os.Getenv("STUB_ROOT")
	f(t, root, filepath.Join(root, "env"), filepath.Join(root, "venv/lib/python3.99/site-packages", wheelDirCUDA))
}

// wantFrom checks that the stub with mark was loaded from dir, NVRTC's
// builtins with it.
func wantFrom(t *testing.T, c *CUDALibs, mark int, dir string) {
	t.Helper()
	v := c.Versions()
	if v.Runtime != mark || v.Dirs[sonameCudart] != dir || v.Dirs[sonameNVRTC] != dir || v.Dirs["libnvrtc-builtins.so.13.0"] != dir {
		t.Fatalf("loaded %+v, want runtime %d from %s", v, mark, dir)
	}
	if !isLoaded("libnvrtc-builtins.so.13.0") {
		t.Fatal("NVRTC's builtins were not preloaded")
	}
}

var loaderScenarios = map[string]func(t *testing.T, root, env, site string){
	"env-wins": func(t *testing.T, root, env, site string) {
		c, err := LoadCUDA()
		must(t, err)
		wantFrom(t, c, 13001, env)
		n, err := LoadNCCL()
		must(t, err)
		if n.Dir() != env || n.VersionString() != "2.32.3" {
			t.Fatalf("NCCL %s from %s", n.VersionString(), n.Dir())
		}
		if k, err := c.DeviceCount(); k != 2 || err != nil {
			t.Fatalf("DeviceCount %d, %v", k, err)
		}
	},
	"site": func(t *testing.T, root, env, site string) {
		c, err := LoadCUDA()
		must(t, err)
		wantFrom(t, c, 13002, site)
		n, err := LoadNCCL()
		must(t, err)
		if want := filepath.Join(filepath.Dir(filepath.Dir(site)), "nccl/lib"); n.Dir() != want {
			t.Fatalf("NCCL from %s, want %s", n.Dir(), want)
		}
	},
	"already-loaded": func(t *testing.T, root, env, site string) {
		if _, err := LoadCUDAFrom(site); err != nil {
			t.Fatal(err)
		}
		c, err := LoadCUDA() // $PPLAUNCH_CUDA_LIBS names env, but site's are loaded
		must(t, err)
		wantFrom(t, c, 13002, site)
	},
	"missing": scenarioMissing,
	"missing-symbol": func(t *testing.T, root, env, site string) {
		_, err := LoadCUDA()
		want := "load CUDA: " + filepath.Join(root, "broken", sonameCudart) + ": symbol cudaLibraryGetKernel not found (a CUDA 13 runtime is needed)"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	},
	"no-driver": func(t *testing.T, root, env, site string) {
		wantDeviceError(t, "no NVIDIA driver (cudaErrorInsufficientDriver 35")
	},
	"no-device": func(t *testing.T, root, env, site string) {
		wantDeviceError(t, `no CUDA device (cudaErrorNoDevice 100: the driver sees no GPU; CUDA_VISIBLE_DEVICES="")`)
	},
}

func wantDeviceError(t *testing.T, prefix string) {
	c, err := LoadCUDA()
	must(t, err)
	if _, err = c.DeviceCount(); err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("got %v, want prefix %s", err, prefix)
	}
}

// scenarioMissing: nothing anywhere; the error names every library and place.
// The system prefixes the search scans (/usr, /opt) are looked for under
// root, which holds none: the test machine's own wheels stay out of it.
func scenarioMissing(t *testing.T, root, env, site string) {
	hostGlob = func(pat string) []string {
		if strings.HasPrefix(pat, "/usr/") || strings.HasPrefix(pat, "/opt/") {
			return globDirs(filepath.Join(root, "sys", pat))
		}
		return globDirs(pat)
	}
	_, err := LoadCUDA()
	if err == nil {
		t.Skip("CUDA libraries found on this machine's loader path")
	}
	msg := err.Error()
	t.Log(msg)
	emptySite := filepath.Join(root, "emptyvenv/lib/python3.99/site-packages")
	for _, w := range []string{
		"load CUDA: libcudart.so.13, libcublasLt.so.13, libcublas.so.13, libnvrtc.so.13 not found",
		"\nlibcudart.so.13, libcublasLt.so.13, libcublas.so.13, libnvrtc.so.13: each <lib> looked in:",
		"already loaded in this process: no",
		"$PPLAUNCH_CUDA_LIBS: " + filepath.Join(root, "empty/<lib>") + ": no such file",
		"site-packages " + emptySite + ": " + filepath.Join(emptySite, wheelDirCUDA, "<lib>") + ": no such file",
		"loader path (LD_LIBRARY_PATH, ld.so cache): <lib>: cannot open shared object file",
		"$CUDA_PATH: " + filepath.Join(root, "cudapath/lib64/<lib>") + ": no such file",
		"$CUDA_HOME: not set",
		"CUDA toolkit: /usr/local/cuda/lib64/<lib>: no such file",
		"fix: pip install nvidia-cuda-runtime",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if _, err := LoadNCCL(); err == nil || !strings.Contains(err.Error(), "load NCCL: libnccl.so.2 not found") ||
		!strings.Contains(err.Error(), filepath.Join(emptySite, wheelDirNCCL, "libnccl.so.2")) {
		t.Errorf("NCCL: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
