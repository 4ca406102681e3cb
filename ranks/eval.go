package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// evaluator measures the validation loss between steps: replica 0's
// pipeline runs the held-out batches forward through the stages it is
// given, and rank 0 gets the mean.
type evaluator struct {
	*rankJob
}

// evaluate runs the held-out batches forward through replica 0's pipeline,
// stage after stage, and returns the mean loss on rank 0 (nil elsewhere).
// Each forward is discarded at once (Stage.Discard): between steps no
// micro-batch is in flight, so the training stages' saved activations and
// gradients are untouched, and a device backend reuses the step's memory.
func (ev *evaluator) evaluate(ctx context.Context, step int, rs *rankStages) (*float64, error) {
	c := ev.cfg
	if ev.dRank != 0 || c.EvalBatches < 1 {
		return nil, nil
	}
	S := ev.sched.Stages()
	be := ev.job.Compute
	var total float64
	for b := range c.EvalBatches {
		tok, tgt, err := ev.corpus.ValBatch(b, c.MicroSize, c.Model.Seq)
		if err != nil {
			return nil, fmt.Errorf("step %d: validation batch %d: %w", step, b, err)
		}
		var act *tensor.Tensor // the input of stage s, this rank's to free
		for _, s := range ev.order {
			st := rs.stages[s]
			in := models.Input{}
			if s == 0 {
				in.Tokens = tok
			} else if prev := ev.sched.Placement[s-1]; prev != ev.pRank {
				act = be.AllocAs(st.ActDType(), st.ActShape(c.MicroSize)...)
				if err := ev.move(ctx, rs.exec.Mover(), step, false, prev, s, b, act); err != nil {
					return nil, err
				}
			}
			if s != 0 {
				in.Act = act
			}
			if s == S-1 {
				in.Targets = tgt
			}
			out, err := st.Forward(b, in)
			st.Discard(b)
			if act != nil {
				be.Free(act)
				act = nil
			}
			if err != nil {
				return nil, fmt.Errorf("step %d: validation: %w", step, err)
			}
			if s == S-1 {
				total += out.Loss
				continue
			}
			act = out.Act
			if next := ev.sched.Placement[s+1]; next != ev.pRank {
				err := ev.move(ctx, rs.exec.Mover(), step, true, next, s+1, b, act)
				be.Free(act)
				act = nil
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return ev.toRank0(ctx, step, total/float64(c.EvalBatches))
}

// toRank0 moves the mean validation loss from the last stage's rank of
// replica 0, which holds it, to rank 0, and returns it there (nil
// elsewhere).
func (ev *evaluator) toRank0(ctx context.Context, step int, mean float64) (*float64, error) {
	last := ev.sched.Placement[ev.sched.Stages()-1]
	loss := []float64{mean}
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkEval, Step: uint32(step), MicroBatch: 1 << 31}
	wctx, cancel := ev.waitCtx(ctx)
	defer cancel()
	switch {
	case last == 0 && ev.pRank == 0:
		return &loss[0], nil
	case ev.pRank == last:
		if err := ev.job.Comm.Send(wctx, 0, tag, collective.F64(loss)); err != nil {
			return nil, fmt.Errorf("step %d: validation loss to rank 0: %w", step, err)
		}
	case ev.job.Rank == 0:
		if err := ev.job.Comm.Recv(wctx, ev.world(last, 0), tag, collective.F64(loss)); err != nil {
			return nil, fmt.Errorf("step %d: validation loss from rank %d: %w", step, last, err)
		}
		return &loss[0], nil
	}
	return nil, nil
}

// move sends or receives, through xf, a validation activation for stage s.
func (ev *evaluator) move(ctx context.Context, xf stageloop.Mover, step int, send bool, peerP, s, b int, act *tensor.Tensor) error {
	peer := ev.world(peerP, 0)
	tag := collective.Tag{Kind: collective.Control, Chunk: uint16(s), Step: uint32(step), MicroBatch: uint32(b)}
	wctx, cancel := ev.waitCtx(ctx)
	defer cancel()
	r := stageloop.RecvReq(peer, tag, act)
	if send {
		r = stageloop.SendReq(peer, tag, act)
	}
	if err := xf.Start(wctx, r).Wait(wctx); err != nil {
		return fmt.Errorf("step %d: validation batch %d of stage %d with rank %d: %w", step, b, s, peer, err)
	}
	return nil
}
