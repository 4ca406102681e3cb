package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// evaluate runs the held-out batches forward through replica 0's pipeline,
// stage after stage, and returns the mean loss on rank 0 (nil elsewhere).
// Each forward is discarded at once (Stage.Discard): between steps no
// micro-batch is in flight, so the training stages' saved activations and
// gradients are untouched, and a device backend reuses the step's memory.
func (t *trainer) evaluate(ctx context.Context, step int) (*float64, error) {
	c := t.cfg
	if t.dRank != 0 || c.EvalBatches < 1 {
		return nil, nil
	}
	S := t.sched.Stages()
	be := t.job.Compute
	var total float64
	for b := range c.EvalBatches {
		tok, tgt, err := t.corpus.ValBatch(b, c.MicroSize, c.Model.Seq)
		if err != nil {
			return nil, fmt.Errorf("step %d: validation batch %d: %w", step, b, err)
		}
		var act *tensor.Tensor // the input of stage s, this rank's to free
		for _, s := range t.order {
			st := t.stages[s]
			in := models.Input{}
			if s == 0 {
				in.Tokens = tok
			} else if prev := t.sched.Placement[s-1]; prev != t.pRank {
				act = be.AllocAs(st.ActDType(), st.ActShape(c.MicroSize)...)
				if err := t.evalXfer(ctx, step, false, prev, s, b, act); err != nil {
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
			if next := t.sched.Placement[s+1]; next != t.pRank {
				err := t.evalXfer(ctx, step, true, next, s+1, b, act)
				be.Free(act)
				act = nil
				if err != nil {
					return nil, err
				}
			}
		}
	}
	last := t.sched.Placement[S-1]
	loss := []float64{total / float64(c.EvalBatches)}
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkEval, Step: uint32(step), MicroBatch: 1 << 31}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	switch {
	case last == 0 && t.pRank == 0:
		return &loss[0], nil
	case t.pRank == last:
		if err := t.job.Comm.Send(wctx, 0, tag, collective.F64(loss)); err != nil {
			return nil, fmt.Errorf("step %d: validation loss to rank 0: %w", step, err)
		}
	case t.job.Rank == 0:
		if err := t.job.Comm.Recv(wctx, t.world(last, 0), tag, collective.F64(loss)); err != nil {
			return nil, fmt.Errorf("step %d: validation loss from rank %d: %w", step, last, err)
		}
		return &loss[0], nil
	}
	return nil, nil
}

// evalXfer sends or receives a validation activation for stage s.
func (t *trainer) evalXfer(ctx context.Context, step int, send bool, peerP, s, b int, act *tensor.Tensor) error {
	peer := t.world(peerP, 0)
	tag := collective.Tag{Kind: collective.Control, Chunk: uint16(s), Step: uint32(step), MicroBatch: uint32(b)}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	r := recvReq(peer, tag, act)
	if send {
		r = sendReq(peer, tag, act)
	}
	if err := t.exec.xf.start(wctx, r).wait(wctx); err != nil {
		return fmt.Errorf("step %d: validation batch %d of stage %d with rank %d: %w", step, b, s, peer, err)
	}
	return nil
}
