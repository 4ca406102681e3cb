package cbits

import (
	"strings"
	"testing"
)

func TestCoreFix(t *testing.T) {
	cases := []struct {
		detected string
		level    int
		force    string
	}{
		{"Cooperlake", 3, ""},
		{"SkylakeX", 3, ""},
		{"Prescott", 3, "SKYLAKEX"},
		{"Haswell", 3, "SKYLAKEX"},
		{"Nehalem", 2, "HASWELL"},
		{"Zen", 2, ""},
		{"Sandybridge", 2, "HASWELL"},
		{"Haswell", 2, ""},
		{"Prescott", 1, "SANDYBRIDGE"},
		{"Prescott", 0, ""},
		{"", 3, "SKYLAKEX"},
	}
	for _, tc := range cases {
		force, note := CoreFix(tc.detected, tc.level)
		if force != tc.force || (force == "") != (note == "") {
			t.Errorf("CoreFix(%q, %d) = %q, %q; want %q", tc.detected, tc.level, force, note, tc.force)
		}
		if force != "" && (!strings.Contains(note, tc.detected+" kernels") || !strings.Contains(note, "OPENBLAS_CORETYPE="+force)) {
			t.Errorf("CoreFix(%q, %d) says %q", tc.detected, tc.level, note)
		}
	}
}

func TestCPULevel(t *testing.T) {
	for _, tc := range []struct {
		avx, avx2, avx512 bool
		want              int
	}{{true, true, true, 3}, {true, true, false, 2}, {true, false, false, 1}, {false, false, false, 0}} {
		if got := CPULevel(tc.avx, tc.avx2, tc.avx512); got != tc.want {
			t.Errorf("CPULevel(%v, %v, %v) = %d, want %d", tc.avx, tc.avx2, tc.avx512, got, tc.want)
		}
	}
}
