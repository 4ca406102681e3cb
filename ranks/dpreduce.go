package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

type dpReduce struct {
	bufs [][]float32 // per replica; own is the stage's GradBuffer
	h    []*collective.Handle
}

// startReduce sends stage s's summed gradient to the other replicas and posts
// the receives of theirs, as soon as the stage's last backward is done.
func (t *trainer) startReduce(s int) error {
	st := t.stages[s]
	if t.dp == nil {
		t.dp = map[int]*dpReduce{}
	}
	r := t.dp[s]
	if r == nil {
		r = &dpReduce{bufs: make([][]float32, t.cfg.DP)}
		for d := range r.bufs {
			if d != t.dRank {
				r.bufs[d] = make([]float32, len(st.GradBuffer()))
			}
		}
		t.dp[s] = r
	}
	r.bufs[t.dRank] = st.GradBuffer()
	r.h = r.h[:0]
	tag := collective.Tag{Kind: collective.Data, Chunk: uint16(s), Step: uint32(t.curStep)}
	var ops []collective.Op
	for d := range t.cfg.DP {
		if d == t.dRank {
			continue
		}
		peer := t.world(t.pRank, d)
		ops = append(ops, collective.SendOp(peer, tag, collective.F32(r.bufs[t.dRank])), collective.RecvOp(peer, tag, collective.F32(r.bufs[d])))
	}
	r.h = append(r.h, t.job.Comm.Batch(ops...))
	return nil
}

// finishReduce waits for every stage's exchange and sums the replicas in
// replica order with the accumulator's tree (models.TreeSum), so dp replicas
// give the bits of one process accumulating all their micro-batches.
func (t *trainer) finishReduce(ctx context.Context, step int) error {
	for _, s := range t.order {
		r := t.dp[s]
		if r == nil {
			return fmt.Errorf("step %d: stage %d never finished its backward", step, s)
		}
		for _, h := range r.h {
			wctx, cancel := t.waitCtx(ctx)
			err := h.Wait(wctx)
			cancel()
			if err != nil {
				return fmt.Errorf("step %d: data-parallel gradient exchange of stage %d: %w", step, s, err)
			}
		}
		// TreeSum adds in place into parts[0], which is our own gradient on
		// replica 0 and replica 0's received one elsewhere (copied back).
		own := t.stages[s].GradBuffer()
		parts := make([][]float32, len(r.bufs))
		copy(parts, r.bufs)
		sum, err := models.TreeSum(t.job.Backend, parts)
		if err != nil {
			return fmt.Errorf("step %d: stage %d: %w", step, s, err)
		}
		if &sum[0] != &own[0] {
			copy(own, sum)
		}
	}
	return nil
}
