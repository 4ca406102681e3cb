package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

// syncTied makes the tied embedding and LM head gradients embedding + head on
// both the first and the last stage (models.AddTiedGrads's order), with the
// backend's elementwise Add, whose float32 sums are the same bits on every
// backend.
func (rs *rankStages) syncTied(ctx context.Context, step int) error {
	if !rs.cfg.Model.Tied {
		return nil
	}
	first, last, emb, head := rs.tiedParams()
	be := rs.job.Compute
	switch {
	case first != nil && last != nil && first == last:
		first.SumLocalTiedGrads()
		return nil
	case emb != nil && head != nil:
		be.Add(emb.Grad, emb.Grad, head.Grad) // models.AddTiedGrads's order
		be.Copy(head.Grad, emb.Grad)
		return nil
	case emb == nil && head == nil:
		return nil
	}
	peer, mine := rs.tiedPeer(emb, head)
	recv := be.Alloc(mine.Grad.Shape...)
	defer be.Free(recv)
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkTied, Step: uint32(step)}
	wctx, cancel := rs.waitCtx(ctx)
	defer cancel()
	tr := rs.exec.Mover().Start(wctx, stageloop.SendReq(peer, tag, mine.Grad), stageloop.RecvReq(peer, tag, recv))
	if err := tr.Wait(wctx); err != nil {
		return fmt.Errorf("step %d: tied embedding exchange with rank %d: %w", step, peer, err)
	}
	if head != nil {
		be.Add(head.Grad, recv, head.Grad)
	} else {
		be.Add(emb.Grad, emb.Grad, recv)
	}
	return nil
}

// tiedParams are the first and last stages (nil where not on this rank)
// and the tied embedding and head this rank holds (nil where it does not).
func (rs *rankStages) tiedParams() (first, last *models.Stage, emb, head *models.Param) {
	first, last = rs.stages[0], rs.stages[rs.sched.Stages()-1]
	for _, p := range rs.cfg.Model.Params() {
		if p.TiedTo != "" {
			if last != nil {
				head = last.Param(p.Name)
			}
			if first != nil {
				emb = first.Param(p.TiedTo)
			}
		}
	}
	return first, last, emb, head
}

// tiedPeer is, on a rank holding only one of the tied embedding (emb) and
// head, the rank holding the other, and this rank's parameter.
func (rs *rankStages) tiedPeer(emb, head *models.Param) (int, *models.Param) {
	peerStage, mine := rs.sched.Stages()-1, emb
	if head != nil {
		peerStage, mine = 0, head
	}
	return rs.world(rs.sched.Placement[peerStage], rs.dRank), mine
}
