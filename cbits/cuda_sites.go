package cbits

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// sitePackages lists the Python site-packages folders that may hold NVIDIA's
// wheels, most specific first: an active virtual or conda environment, what
// python3 itself reports, then the usual prefixes. Duplicates are dropped.
// python and glob are the effects, passed in so the order is tested alone.
func sitePackages(getenv func(string) string, python func() []string, glob func(string) []string) []string {
	var pats []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := getenv(v); p != "" {
			pats = append(pats, filepath.Join(p, "lib/python3*/site-packages"))
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		d = filepath.Clean(d)
		if d != "." && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, p := range pats {
		for _, d := range glob(p) {
			add(d)
		}
	}
	for _, d := range python() {
		add(d)
	}
	scans := []string{
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
		"/usr/lib/python3*/site-packages",
		"/opt/*/lib/python3*/site-packages",
	}
	if h := getenv("HOME"); h != "" {
		scans = append(scans, filepath.Join(h, ".local/lib/python3*/site-packages"),
			filepath.Join(h, "*/lib/python3*/site-packages"))
	}
	for _, p := range scans {
		for _, d := range glob(p) {
			add(d)
		}
	}
	return out
}

// pythonSitePackages asks python3 for its site-packages folders; nothing when
// there is no python3 or it fails (the scans still run).
func pythonSitePackages() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c",
		"import site\nfor d in site.getsitepackages() + [site.getusersitepackages()]: print(d)")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append(dirs, l)
		}
	}
	return dirs
}

// hostGlob is the glob the search of this process uses; the loader tests
// point the system prefixes (/usr, /opt) of a child process into a tree of
// their own, so that wheels installed on the test machine (as CI installs them
// under /opt) do not hide the scenario of a machine without them.
var hostGlob = globDirs

func globDirs(pat string) []string {
	m, _ := filepath.Glob(pat)
	return m
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hostSearchInputs are the search inputs of this process.
func hostSearchInputs() searchInputs {
	return searchInputs{
		Getenv: os.Getenv,
		Sites:  sitePackages(os.Getenv, pythonSitePackages, hostGlob),
		Exists: fileExists,
	}
}
