package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Balance methods for Partition.
const (
	BalanceUniform = "uniform" // equal numbers of layers; the last stages take any extra
	BalanceParams  = "params"  // minimise the largest stage's parameter count
	BalanceFLOPs   = "flops"   // minimise the largest stage's forward FLOPs
)

// Partition cuts cfg.Layers blocks into stages contiguous groups and returns the
// number of blocks per stage. The embedding goes with the first stage and the
// final LayerNorm, head and loss with the last, and they count toward those
// stages' costs when balancing. Every stage gets at least one block.
func Partition(cfg Config, stages int, method string) ([]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	L := cfg.Layers
	if stages < 1 {
		return nil, fmt.Errorf("cut into %d stages: want at least 1", stages)
	}
	if stages > L {
		return nil, fmt.Errorf("cut %d layers into %d stages: more stages than layers: use --layers %d or more, or at most %d stages (--pp × virtual stages per rank)", L, stages, stages, L)
	}
	var cost func(unit int) float64
	switch method {
	case BalanceUniform, "":
		cut := make([]int, stages)
		for i := range cut {
			cut[i] = L / stages
			if i >= stages-L%stages {
				cut[i]++
			}
		}
		return cut, nil
	case BalanceParams:
		cost = func(u int) float64 { return float64(cfg.UnitParams(u)) }
	case BalanceFLOPs:
		cost = cfg.UnitFLOPs
	default:
		return nil, fmt.Errorf("balance %q: want uniform, params or flops", method)
	}
	return balance(L, stages, cost), nil
}

// PartitionCosts cuts layers blocks into stages contiguous groups that
// minimise the largest stage cost (a dynamic programme: the optimal
// contiguous partition), where cost[u+1] is the cost of unit u: u = -1 the
// embedding, which goes with the first stage, 0..layers-1 the blocks,
// layers the final LayerNorm and head, which go with the last. Measured
// costs (a profile's per-block times) make it a profile-guided cut. Ties go
// to the earliest cut, so the answer is a pure function of the inputs.
func PartitionCosts(layers, stages int, cost []float64) ([]int, error) {
	switch {
	case stages < 1:
		return nil, fmt.Errorf("cut into %d stages: want at least 1", stages)
	case stages > layers:
		return nil, fmt.Errorf("cut %d layers into %d stages: more stages than layers", layers, stages)
	case len(cost) != layers+2:
		return nil, fmt.Errorf("%d unit costs for %d layers: want %d (the embedding, every block, the head)", len(cost), layers, layers+2)
	}
	for i, c := range cost {
		if !(c >= 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("unit %d cost %v: want a finite cost >= 0", i-1, c)
		}
	}
	return balance(layers, stages, func(u int) float64 { return cost[u+1] }), nil
}

// balance is the contiguous partition minimising the largest stage cost (a
// dynamic programme over prefixes); ties go to the earliest cut found, so the
// answer is a pure function of the inputs.
func balance(L, S int, cost func(unit int) float64) []int {
	prefix := make([]float64, L+1)
	for i := range L {
		prefix[i+1] = prefix[i] + cost(i)
	}
	stageCost := func(s, lo, hi int) float64 {
		c := prefix[hi] - prefix[lo]
		if s == 0 {
			c += cost(embedUnit)
		}
		if s == S-1 {
			c += cost(L)
		}
		return c
	}
	// best[s][i]: minimal largest cost putting blocks 0..i-1 into stages 0..s.
	best := make([][]float64, S)
	from := make([][]int, S)
	for s := range S {
		best[s] = make([]float64, L+1)
		from[s] = make([]int, L+1)
		for i := range best[s] {
			best[s][i] = math.Inf(1)
		}
	}
	for i := 1; i <= L; i++ {
		best[0][i] = stageCost(0, 0, i)
	}
	for s := 1; s < S; s++ {
		for i := s + 1; i <= L; i++ {
			for j := s; j < i; j++ {
				c := math.Max(best[s-1][j], stageCost(s, j, i))
				if c < best[s][i] {
					best[s][i], from[s][i] = c, j
				}
			}
		}
	}
	cut := make([]int, S)
	i := L
	for s := S - 1; s > 0; s-- {
		j := from[s][i]
		cut[s] = i - j
		i = j
	}
	cut[0] = i
	return cut
}

// ParseLayersPerStage reads an explicit cut such as "3,3,2,2" and checks it
// against the model: every stage at least one layer, the total equal to layers.
func ParseLayersPerStage(s string, layers int) ([]int, error) {
	fields := strings.Split(s, ",")
	cut := make([]int, 0, len(fields))
	total := 0
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("layers per stage %q: entry %d %q is not a number", s, i, f)
		}
		if n < 1 {
			return nil, fmt.Errorf("layers per stage %q: stage %d has %d layers, want at least 1", s, i, n)
		}
		if n > layers {
			return nil, fmt.Errorf("layers per stage %q: stage %d has %d layers, but the model has only %d", s, i, n, layers)
		}
		cut = append(cut, n)
		total += n
	}
	if total != layers {
		return nil, fmt.Errorf("layers per stage %q adds up to %d, but the model has %d layers", s, total, layers)
	}
	return cut, nil
}

// CheckCut checks a cut (layers per stage) against the model.
func CheckCut(cfg Config, cut []int) error {
	total := 0
	for i, n := range cut {
		if n < 1 {
			return fmt.Errorf("cut %v: stage %d has %d layers, want at least 1", cut, i, n)
		}
		total += n
	}
	if len(cut) == 0 || total != cfg.Layers {
		return fmt.Errorf("cut %v adds up to %d layers, but the model has %d", cut, total, cfg.Layers)
	}
	return nil
}
