package cbits

import (
	"reflect"
	"strings"
	"testing"
)

func TestSearchPlan(t *testing.T) {
	exists := func(p string) bool {
		return p == "/env2/libcudart.so.13" || p == "/site/b/nvidia/cu13/lib/libcudart.so.13"
	}
	step := func(k placeKind, where, path string) place {
		return place{Kind: k, Where: where, Path: path, Exists: exists(path)}
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		sites []string
		want  []place
	}{
		{"nothing set", nil, nil, []place{
			step(placeLoaded, "already loaded in this process", "libcudart.so.13"),
			step(placeUnset, "$PPLAUNCH_CUDA_LIBS", "PPLAUNCH_CUDA_LIBS"),
			step(placeUnset, "Python site-packages", "none found"),
			step(placeSoname, "loader path (LD_LIBRARY_PATH, ld.so cache)", "libcudart.so.13"),
			step(placeUnset, "$CUDA_PATH", "CUDA_PATH"),
			step(placeUnset, "$CUDA_HOME", "CUDA_HOME"),
			step(placeFile, "CUDA toolkit", "/usr/local/cuda/lib64/libcudart.so.13"),
		}},
		{"everything, in order, duplicates once", map[string]string{
			"PPLAUNCH_CUDA_LIBS": "/env1::/env2", "CUDA_PATH": "/usr/local/cuda", "CUDA_HOME": "/opt/cuda",
		}, []string{"/site/a", "/site/b"}, []place{
			step(placeLoaded, "already loaded in this process", "libcudart.so.13"),
			step(placeFile, "$PPLAUNCH_CUDA_LIBS", "/env1/libcudart.so.13"),
			step(placeFile, "$PPLAUNCH_CUDA_LIBS", "/env2/libcudart.so.13"),
			step(placeFile, "site-packages /site/a", "/site/a/nvidia/cu13/lib/libcudart.so.13"),
			step(placeFile, "site-packages /site/b", "/site/b/nvidia/cu13/lib/libcudart.so.13"),
			step(placeSoname, "loader path (LD_LIBRARY_PATH, ld.so cache)", "libcudart.so.13"),
			step(placeFile, "$CUDA_PATH", "/usr/local/cuda/lib64/libcudart.so.13"),
			step(placeFile, "$CUDA_HOME", "/opt/cuda/lib64/libcudart.so.13"),
		}},
	} {
		got := searchPlan("libcudart.so.13", wheelDirCUDA, searchInputs{
			Getenv: func(k string) string { return tc.env[k] }, Sites: tc.sites, Exists: exists})
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
	got := dirsPlan("libnccl.so.2", []string{"/a", "/b"}, func(string) bool { return true })
	if len(got) != 2 || got[1].Path != "/b/libnccl.so.2" || got[0].Kind != placeFile || !got[0].Exists {
		t.Errorf("dirsPlan: %+v", got)
	}
}

func TestSitePackagesOrder(t *testing.T) {
	env := map[string]string{"VIRTUAL_ENV": "/venv", "HOME": "/home/u"}
	globs := map[string][]string{
		"/venv/lib/python3*/site-packages":          {"/venv/lib/python3.12/site-packages"},
		"/usr/local/lib/python3*/dist-packages":     {"/usr/local/lib/python3.11/dist-packages"},
		"/home/u/.local/lib/python3*/site-packages": {"/home/u/.local/lib/python3.12/site-packages"},
		"/opt/*/lib/python3*/site-packages":         {"/opt/conda/lib/python3.12/site-packages"},
		"/home/u/*/lib/python3*/site-packages":      {"/home/u/venv/lib/python3.12/site-packages/"},
		"/usr/lib/python3/dist-packages":            {"/usr/lib/python3/dist-packages"},
	}
	python := func() []string {
		return []string{"/venv/lib/python3.12/site-packages", "/home/u/.local/lib/python3.12/site-packages"}
	}
	got := sitePackages(func(k string) string { return env[k] }, python, func(p string) []string { return globs[p] })
	want := []string{
		"/venv/lib/python3.12/site-packages",
		"/home/u/.local/lib/python3.12/site-packages",
		"/usr/local/lib/python3.11/dist-packages",
		"/usr/lib/python3/dist-packages",
		"/opt/conda/lib/python3.12/site-packages",
		"/home/u/venv/lib/python3.12/site-packages",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestNotFoundError(t *testing.T) {
	plan := searchPlan("libnvrtc.so.13", wheelDirCUDA, searchInputs{
		Getenv: func(k string) string { return map[string]string{"CUDA_HOME": "/ch"}[k] },
		Sites:  []string{"/s"}, Exists: func(string) bool { return false }})
	var att []attempt
	for _, p := range plan {
		r := map[placeKind]string{placeFile: "no such file", placeSoname: "libnvrtc.so.13: cannot open shared object file"}[p.Kind]
		att = append(att, attempt{Place: p, Result: r})
	}
	// libcudart and libcublas were looked for in the same places (the
	// first), libnvrtc everywhere: two lists.
	err := notFoundError("CUDA", []libSearch{{"libcudart.so.13", att[:1]}, {"libnvrtc.so.13", att}, {"libcublas.so.13", att[:1]}}, fixCUDA)
	want := `load CUDA: libcudart.so.13, libnvrtc.so.13, libcublas.so.13 not found
libcudart.so.13, libcublas.so.13: each <lib> looked in:
  already loaded in this process: no
libnvrtc.so.13, looked in:
  already loaded in this process: no
  $PPLAUNCH_CUDA_LIBS: not set
  site-packages /s: /s/nvidia/cu13/lib/libnvrtc.so.13: no such file
  loader path (LD_LIBRARY_PATH, ld.so cache): libnvrtc.so.13: cannot open shared object file
  $CUDA_PATH: not set
  $CUDA_HOME: /ch/lib64/libnvrtc.so.13: no such file
  CUDA toolkit: /usr/local/cuda/lib64/libnvrtc.so.13: no such file
fix: pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got\n%s\nwant prefix\n%s", err, want)
	}
}
