package tensor

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseBLAS(t *testing.T) {
	missing := errors.New("libopenblas.so.0: cannot open shared object file")
	cases := []struct {
		requested string
		loadErr   error
		gain      float64
		lib       string
		hint      bool
		err       string
	}{
		{"auto", nil, 1.2, blasOpenBLAS, false, ""},
		{"", nil, 1.2, blasOpenBLAS, false, ""},
		{"auto", nil, 0.9, blasGo, false, ""},
		{"auto", missing, 1.2, blasGo, true, ""},
		{"auto", missing, 1.05, blasGo, false, ""},
		{"go", nil, 1.2, blasGo, false, ""},
		{"go", missing, 1.2, blasGo, false, ""},
		{"gonum", missing, 1.2, blasGonum, false, ""},
		{"openblas", nil, 0.5, blasOpenBLAS, false, ""},
		{"openblas", missing, 1.2, "", false, "BLAS openblas chosen, but libopenblas.so.0: cannot open"},
		{"mkl", nil, 1.2, "", false, `unknown BLAS "mkl" (want auto, openblas, go or gonum)`},
	}
	for _, tc := range cases {
		lib, hint, err := chooseBLAS(tc.requested, tc.loadErr, tc.gain)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("chooseBLAS(%q, %v): err %v, want %q", tc.requested, tc.loadErr, err, tc.err)
			}
			continue
		}
		if err != nil || lib != tc.lib || hint != tc.hint {
			t.Errorf("chooseBLAS(%q, %v) = %s, %v, %v; want %s, %v", tc.requested, tc.loadErr, lib, hint, err, tc.lib, tc.hint)
		}
	}
}

// go and gonum need nothing loaded and never hint.
func TestNewCPUNames(t *testing.T) {
	for req, want := range map[string]string{"go": "cpu/go", "gonum": "cpu/gonum"} {
		c, err := NewCPU(req)
		if err != nil || c.Name() != want || c.OpenBLASHint() != "" {
			t.Fatalf("NewCPU(%q) = %v, %v", req, c, err)
		}
	}
}

// The hint says what OpenBLAS would gain, measured, and both ways out.
func TestOpenBLASHintText(t *testing.T) {
	h := openBLASHint(errors.New("libopenblas.so.0: cannot open shared object file"))
	for _, want := range []string{"pplaunch's own SIMD kernels", "1.2x as fast", "cannot open shared object file",
		"apt-get install libopenblas0-pthread", "PPLAUNCH_BLAS=go"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q does not say %q", h, want)
		}
	}
}

func TestNewCPUChoice(t *testing.T) {
	if _, err := NewCPU("mkl"); err == nil {
		t.Fatal("NewCPU(mkl) accepted an unknown BLAS")
	}
	g, err := NewCPU("gonum")
	if err != nil || g.Name() != "cpu/gonum" {
		t.Fatalf("NewCPU(gonum) = %v, %v", g, err)
	}
}
