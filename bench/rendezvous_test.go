package bench

import (
	"strings"
	"testing"
)

func TestCheckNumbering(t *testing.T) {
	for _, tc := range []struct {
		name          string
		firsts, sizes []int
		want          string
	}{
		{"ok", []int{0, 2, 4}, []int{6, 6, 6}, ""},
		{"ok out of order", []int{4, 0, 2}, []int{6, 6, 6}, ""},
		{"twice", []int{0, 0, 4}, []int{6, 6, 6}, "rank 0 was given twice"},
		{"outside", []int{0, 2, 5}, []int{6, 6, 6}, "outside 0..5"},
		{"size", []int{0, 2, 4}, []int{6, 4, 6}, "agent 1 saw a world of 4"},
	} {
		err := CheckNumbering(tc.firsts, tc.sizes, 2)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
