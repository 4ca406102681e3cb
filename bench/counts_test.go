package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCounts(t *testing.T) {
	if got, err := ParseCounts("--nproc", "1, 2,4"); err != nil || !slices.Equal(got, []int{1, 2, 4}) {
		t.Errorf("ParseCounts(1, 2,4) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "x"} {
		if _, err := ParseCounts("--nproc", bad); err == nil || !strings.Contains(err.Error(), `--nproc "`+bad+`": want positive integers`) {
			t.Errorf("ParseCounts(%q) err = %v, want one naming --nproc", bad, err)
		}
	}
}
