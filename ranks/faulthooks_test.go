package ranks

import (
	"strings"
	"testing"
)

// TestFaultHooks: each hook parses or is refused naming the variable, and
// applies only to its rank.
func TestFaultHooks(t *testing.T) {
	for _, tc := range []struct {
		stall, kill, hold string
		rank              int
		hook              bool
		err               string
	}{
		{"", "", "", 0, false, ""},
		{"1:2:1F3", "", "", 1, true, ""},
		{"1:2:1F3", "", "", 0, false, ""},
		{"", "2:3", "", 2, true, ""},
		{"", "", "0:3", 0, true, ""},
		{"", "", "0:3", 1, false, ""},
		{"1:2", "", "", 1, false, "want RANK:STEP:ACTION"},
		{"1:x:1F3", "", "", 1, false, "invalid syntax"},
		{"1:2:1F3,1B3", "", "", 1, false, "not one action"},
		{"1:2:bogus", "", "", 1, false, "not one action"},
		{"", "2", "", 2, false, "want RANK:STEP"},
		{"", "", "x:1", 0, false, HoldEnv},
		{"", "", "0:3:1", 0, false, ""},        // another attempt's hold
		{"", "", "1:2,0:3:0", 0, true, ""},     // one of several
		{"", "", "0:3:x", 0, false, "restart"}, // a restart that is no number
	} {
		h, err := FaultHooks(tc.stall, tc.kill, tc.hold, tc.rank, 0, nil)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("FaultHooks(%q, %q, %q): %v, want an error with %q", tc.stall, tc.kill, tc.hold, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("FaultHooks(%q, %q, %q): %v", tc.stall, tc.kill, tc.hold, err)
		case tc.err == "" && (h != nil) != tc.hook:
			t.Errorf("FaultHooks(%q, %q, %q) for rank %d: hook %v, want %v", tc.stall, tc.kill, tc.hold, tc.rank, h != nil, tc.hook)
		}
	}
}

// FuzzParseFault: any spec parses or is refused, never panics.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"1:2:1F3", "0:0:0SEND_F0", "2:3", "", ":", "1:2:", "-1:-2:3W4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		FaultHooks(spec, spec, spec, 0, 0, nil)
	})
}
