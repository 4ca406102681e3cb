package main

import (
	"strings"
	"testing"
)

func TestFaultHooks(t *testing.T) {
	for _, tc := range []struct {
		stall, kill string
		rank        int
		hook        bool
		err         string
	}{
		{"", "", 0, false, ""},
		{"1:2:1F3", "", 1, true, ""},
		{"1:2:1F3", "", 0, false, ""},
		{"", "2:3", 2, true, ""},
		{"1:2", "", 1, false, "want RANK:STEP:ACTION"},
		{"1:x:1F3", "", 1, false, "invalid syntax"},
		{"1:2:1F3,1B3", "", 1, false, "not one action"},
		{"1:2:bogus", "", 1, false, "not one action"},
		{"", "2", 2, false, "want RANK:STEP"},
	} {
		h, err := faultHooks(tc.stall, tc.kill, tc.rank, 0)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("faultHooks(%q, %q): %v, want an error with %q", tc.stall, tc.kill, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("faultHooks(%q, %q): %v", tc.stall, tc.kill, err)
		case tc.err == "" && (h != nil) != tc.hook:
			t.Errorf("faultHooks(%q, %q) for rank %d: hook %v, want %v", tc.stall, tc.kill, tc.rank, h != nil, tc.hook)
		}
	}
}

// FuzzParseFault: any spec parses or is refused, never panics.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"1:2:1F3", "0:0:0SEND_F0", "2:3", "", ":", "1:2:", "-1:-2:3W4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		faultHooks(spec, spec, 0, 0)
	})
}
