package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

// reduceScalars all-reduces, over the world, every parameter's Σgrad² (given
// by one replica only: normOwner), every global micro-batch's loss (given by the last
// stage of its replica) and how many ranks were asked to stop. Each gradient
// and loss entry has exactly one non-zero contributor, so the sum is exact
// whatever order the all-reduce adds in.
func (t *trainer) reduceScalars(ctx context.Context, step int, losses map[int]float64, stop bool) (norm, loss float64, stopAll bool, err error) {
	n, nl := len(t.names), t.cfg.DP*t.cfg.Micro
	buf := make([]float64, n+nl+1)
	if stop {
		buf[n+nl] = 1
	}
	mine := t.gradSumSquares()
	for i, name := range t.names {
		buf[i] = mine[name]
	}
	for g, l := range losses {
		buf[n+g] = l
	}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if err := t.job.Comm.AllReduce(wctx, collective.F64(buf), collective.Sum); err != nil {
		return 0, 0, false, fmt.Errorf("step %d: all-reduce of gradient norm and losses: %w", step, err)
	}
	sums := make(map[string]float64, n)
	for i, name := range t.names {
		sums[name] = buf[i]
	}
	var total float64
	for _, l := range buf[n : n+nl] {
		total += l
	}
	return models.GlobalNorm(sums), total / float64(nl), buf[n+nl] > 0, nil
}

// gradSumSquares is Σgrad² of each parameter whose share of the global norm
// this replica gives (normOwner), by name: the parameters of all this rank's
// stages together, so a backend sums them in one pass and one download.
func (t *trainer) gradSumSquares() map[string]float64 {
	var mine []*models.Param
	for _, s := range t.order {
		for _, p := range t.stages[s].Params() {
			if t.normOwner(t.stages[s], p) == t.dRank {
				mine = append(mine, p)
			}
		}
	}
	return models.GradSumSquares(mine)
}
