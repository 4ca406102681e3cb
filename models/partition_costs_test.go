package models

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// stageMax is the largest stage cost of cut under cost (embedding with the
// first stage, head with the last).
func stageMax(cut []int, cost []float64) float64 {
	worst, u := 0.0, 0
	for s, n := range cut {
		c := 0.0
		for range n {
			c += cost[u+1]
			u++
		}
		if s == 0 {
			c += cost[0]
		}
		if s == len(cut)-1 {
			c += cost[len(cost)-1]
		}
		worst = max(worst, c)
	}
	return worst
}

// compositions calls f with every way to cut L blocks into S non-empty groups.
func compositions(L, S int, f func([]int)) {
	cut := make([]int, S)
	var rec func(s, left int)
	rec = func(s, left int) {
		if s == S-1 {
			cut[s] = left
			f(cut)
			return
		}
		for n := 1; n <= left-(S-1-s); n++ {
			cut[s] = n
			rec(s+1, left-n)
		}
	}
	rec(0, L)
}

func TestPartitionCosts(t *testing.T) {
	for _, c := range []struct {
		name   string
		stages int
		cost   []float64 // embedding, blocks..., head
		want   []int
	}{
		{"uniform blocks, free ends", 4, []float64{0, 1, 1, 1, 1, 1, 1, 1, 1, 0}, []int{2, 2, 2, 2}},
		{"a heavy head takes blocks off the last stage", 4, []float64{0, 1, 1, 1, 1, 1, 1, 1, 1, 2}, []int{2, 2, 3, 1}},
		{"heavy embedding and head", 3, []float64{3, 1, 1, 1, 1, 1, 1, 3}, []int{1, 4, 1}},
		{"one stage", 1, []float64{5, 1, 2, 3}, []int{2}},
		{"one block per stage", 3, []float64{9, 1, 1, 1, 9}, []int{1, 1, 1}},
		{"ties go to the earliest cut", 2, []float64{0, 1, 1, 1, 0}, []int{1, 2}},
	} {
		got, err := PartitionCosts(len(c.cost)-2, c.stages, c.cost)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	// Against every cut: the answer's slowest stage is the least possible.
	r := rand.New(rand.NewPCG(4, 5))
	for range 200 {
		L := 1 + r.IntN(8)
		S := 1 + r.IntN(L)
		cost := make([]float64, L+2)
		for i := range cost {
			cost[i] = float64(r.IntN(20))
		}
		got, err := PartitionCosts(L, S, cost)
		if err != nil {
			t.Fatal(err)
		}
		best := -1.0
		compositions(L, S, func(cut []int) {
			if m := stageMax(cut, cost); best < 0 || m < best {
				best = m
			}
		})
		if m := stageMax(got, cost); m != best || len(got) != S {
			t.Fatalf("L=%d S=%d costs %v: cut %v has slowest stage %v, the best is %v", L, S, cost, got, m, best)
		}
	}
	for _, c := range []struct {
		layers, stages int
		cost           []float64
		want           string
	}{
		{2, 3, []float64{0, 1, 1, 0}, "more stages than layers"},
		{2, 0, []float64{0, 1, 1, 0}, "want at least 1"},
		{2, 1, []float64{0, 1, 1}, "3 unit costs for 2 layers: want 4"},
		{1, 1, []float64{0, -1, 0}, "unit 0 cost -1"},
	} {
		if _, err := PartitionCosts(c.layers, c.stages, c.cost); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PartitionCosts(%d, %d, %v) = %v, want %q", c.layers, c.stages, c.cost, err, c.want)
		}
	}
}
