package report

import "testing"

func TestZeroNote(t *testing.T) {
	for _, tc := range []struct {
		zero, dp int
		want     string
	}{{0, 4, ""}, {1, 1, " (ZeRO stage 1 shards nothing on one replica)"}, {1, 4, " (ZeRO stage 1: each replica keeps 1/4 of the optimizer state)"}} {
		if got := zeroNote(tc.zero, tc.dp); got != tc.want {
			t.Errorf("zeroNote(%d, %d) = %q, want %q", tc.zero, tc.dp, got, tc.want)
		}
	}
}
