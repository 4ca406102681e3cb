package ranks

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpenSampleSourceRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct{ from, want string }{
		{missing, "--from " + missing + " does not exist: give a checkpoint directory, or a train --checkpoint-dir"},
		{dir, "--from: "},
	} {
		if _, err := OpenSampleSource(c.from); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("OpenSampleSource(%s) = %v, want %q", c.from, err, c.want)
		}
	}
}

func TestStageSampler(t *testing.T) {
	for _, c := range []struct {
		rank, size int
		want       []int
	}{{0, 1, []int{0}}, {2, 3, []int{0, 1, 2}}} {
		sm := StageSampler(c.rank, c.size, nil, 0)
		if _, ok := sm.Stages[c.rank]; !ok || sm.Rank != c.rank || !slices.Equal(sm.Placement, c.want) {
			t.Errorf("StageSampler(%d, %d): rank %d placement %v stages %v", c.rank, c.size, sm.Rank, sm.Placement, sm.Stages)
		}
	}
}
