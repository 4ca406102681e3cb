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
func (rs *rankStages) reduceScalars(ctx context.Context, step int, losses map[int]float64, stop bool) (norm, loss float64, stopAll bool, err error) {
	n, nl := len(rs.names), rs.cfg.DP*rs.cfg.Micro
	buf := make([]float64, n+nl+1)
	if stop {
		buf[n+nl] = 1
	}
	mine := rs.gradSumSquares()
	for i, name := range rs.names {
		buf[i] = mine[name]
	}
	for g, l := range losses {
		buf[n+g] = l
	}
	wctx, cancel := rs.waitCtx(ctx)
	defer cancel()
	if err := rs.job.Comm.AllReduce(wctx, collective.F64(buf), collective.Sum); err != nil {
		return 0, 0, false, fmt.Errorf("step %d: all-reduce of gradient norm and losses: %w", step, err)
	}
	sums := make(map[string]float64, n)
	for i, name := range rs.names {
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
func (rs *rankStages) gradSumSquares() map[string]float64 {
	var mine []*models.Param
	for _, s := range rs.order {
		for _, p := range rs.stages[s].Params() {
			if rs.normOwner(rs.stages[s], p) == rs.dRank {
				mine = append(mine, p)
			}
		}
	}
	return models.GradSumSquares(mine)
}
