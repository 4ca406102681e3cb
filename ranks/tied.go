package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

// syncTied makes the tied embedding and LM head gradients embedding + head on
// both the first and the last stage (models.AddTiedGrads's order).
func (t *trainer) syncTied(ctx context.Context, step int) error {
	if !t.cfg.Model.Tied {
		return nil
	}
	S := t.sched.Stages()
	first, last := t.stages[0], t.stages[S-1]
	var emb, head *models.Param
	for _, p := range t.cfg.Model.Params() {
		if p.TiedTo != "" {
			if last != nil {
				head = last.Param(p.Name)
			}
			if first != nil {
				emb = first.Param(p.TiedTo)
			}
		}
	}
	switch {
	case first != nil && last != nil && first == last:
		first.SumLocalTiedGrads()
		return nil
	case emb != nil && head != nil:
		models.AddTiedGrads(emb.Grad.Data, emb.Grad.Data, head.Grad.Data)
		copy(head.Grad.Data, emb.Grad.Data)
		return nil
	case emb == nil && head == nil:
		return nil
	}
	peerStage := S - 1
	mine, recv := emb, []float32(nil)
	if head != nil {
		peerStage, mine = 0, head
	}
	peer := t.world(t.sched.Placement[peerStage], t.dRank)
	recv = make([]float32, len(mine.Grad.Data))
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkTied, Step: uint32(step)}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	h := t.job.Comm.Batch(collective.SendOp(peer, tag, collective.F32(mine.Grad.Data)), collective.RecvOp(peer, tag, collective.F32(recv)))
	if err := h.Wait(wctx); err != nil {
		return fmt.Errorf("step %d: tied embedding exchange with rank %d: %w", step, peer, err)
	}
	if head != nil {
		models.AddTiedGrads(head.Grad.Data, recv, head.Grad.Data)
	} else {
		models.AddTiedGrads(emb.Grad.Data, emb.Grad.Data, recv)
	}
	return nil
}
