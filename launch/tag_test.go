package launch

import "testing"

func TestOutputPrefixes(t *testing.T) {
	for _, tc := range []struct {
		tag, raw       bool
		global         int
		stdout, stderr string
	}{
		{true, false, 0, "[rank 0] ", "[rank 0] "},
		{true, false, 3, "[rank 3] ", "[rank 3] "},
		{true, true, 0, "", "[rank 0] "},
		{true, true, 1, "[rank 1] ", "[rank 1] "},
		{false, true, 0, "", ""},
		{false, false, 2, "", ""},
	} {
		out, err := outputPrefixes(Config{Tag: tc.tag, Rank0Raw: tc.raw}, tc.global)
		if out != tc.stdout || err != tc.stderr {
			t.Errorf("tag %v raw %v rank %d: %q %q, want %q %q", tc.tag, tc.raw, tc.global, out, err, tc.stdout, tc.stderr)
		}
	}
}
