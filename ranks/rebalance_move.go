package ranks

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// chunkRebalance tags the blocks a recut moves between ranks.
const chunkRebalance = 0xFFF4

// paramMove is one parameter that changes pipeline rank in a recut.
type paramMove struct {
	Name     string
	Numel    int
	From, To int // pipeline ranks
}

// stageOf is the stage holding unit (-1 the embedding, layers the head)
// under cut.
func stageOf(cut []int, unit, layers int) int {
	switch {
	case unit < 0:
		return 0
	case unit >= layers:
		return len(cut) - 1
	}
	for s, n := range cut {
		if unit < n {
			return s
		}
		unit -= n
	}
	return len(cut) - 1
}

// recutMoves lists, in model order, the parameters of m whose pipeline rank
// changes when the cut goes from from to to, placement giving each stage's
// pipeline rank. The embedding and the head (with the tied one) stay with
// the first and last stage, whatever the cut.
func recutMoves(m models.Config, placement []int, from, to []int) []paramMove {
	var out []paramMove
	for _, p := range m.Params() {
		a, b := placement[stageOf(from, p.Unit, m.Layers)], placement[stageOf(to, p.Unit, m.Layers)]
		if a != b {
			out = append(out, paramMove{Name: p.Name, Numel: p.Numel(), From: a, To: b})
		}
	}
	return out
}

// hostState is a rank's stages on the host, by parameter name: the values,
// then the optimizer's slots in slot order.
type hostState struct {
	kind  string   // the optimizer's
	slots []string // sorted
	vals  map[string][][]float32
}

// downloadStages copies this rank's parameters and optimizer state to the
// host, as a checkpoint's save does.
func (rs *rankStages) downloadStages() hostState {
	h := hostState{vals: map[string][][]float32{}}
	for _, s := range rs.order {
		st := rs.opts[s].State()
		sh := rs.stages[s].ShardState(st)
		h.kind, h.slots = st.Kind, slices.Sorted(maps.Keys(sh.State))
		for i, p := range sh.Params {
			v := [][]float32{p.Data}
			for _, slot := range h.slots {
				v = append(v, sh.State[slot][i].Data)
			}
			h.vals[p.Name] = v
		}
	}
	return h
}

// exchangeMoves sends the parameters moving off this rank to their new
// ranks, in one buffer per peer, and receives those moving here into h. A
// data-parallel replica exchanges with its own pipeline's ranks: every
// replica moves the same blocks at once.
func (rb *rebalancer) exchangeMoves(ctx context.Context, done int, moves []paramMove, h hostState) error {
	per := 1 + len(h.slots)
	out, in := map[int][]float32{}, map[int][]paramMove{}
	for _, m := range moves {
		switch rb.pRank {
		case m.From:
			for _, v := range h.vals[m.Name] {
				out[m.To] = append(out[m.To], v...)
			}
		case m.To:
			in[m.From] = append(in[m.From], m)
		}
	}
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkRebalance, Step: uint32(done)}
	var ops []collective.Op
	for _, q := range slices.Sorted(maps.Keys(out)) {
		ops = append(ops, collective.SendOp(rb.world(q, rb.dRank), tag, collective.F32(out[q])))
	}
	bufs := map[int][]float32{}
	for _, q := range slices.Sorted(maps.Keys(in)) {
		n := 0
		for _, m := range in[q] {
			n += m.Numel * per
		}
		bufs[q] = make([]float32, n)
		ops = append(ops, collective.RecvOp(rb.world(q, rb.dRank), tag, collective.F32(bufs[q])))
	}
	if len(ops) == 0 {
		return nil
	}
	wctx, cancel := rb.waitCtx(ctx)
	defer cancel()
	if err := rb.job.Comm.Batch(ops...).Wait(wctx); err != nil {
		return fmt.Errorf("rebalance after step %d: moving blocks between pipeline ranks %v: %w", done, slices.Sorted(maps.Keys(bufs)), err)
	}
	for q, ms := range in {
		buf := bufs[q]
		for _, m := range ms {
			v := make([][]float32, per)
			for k := range v {
				v[k], buf = buf[:m.Numel:m.Numel], buf[m.Numel:]
			}
			h.vals[m.Name] = v
		}
	}
	return nil
}

// shardFor is the checkpoint shard of stage st put together from h, as a
// resume reads one from disk.
func (h hostState) shardFor(st *models.Stage) (checkpoint.Shard, error) {
	sh := checkpoint.Shard{State: map[string][]checkpoint.Tensor{}}
	for _, p := range st.Params() {
		v, ok := h.vals[p.Name]
		if !ok {
			return sh, fmt.Errorf("stage %d: no rank sent %s", st.Index(), p.Name)
		}
		sh.Params = append(sh.Params, checkpoint.Tensor{Name: p.Name, Shape: p.Shape, Data: v[0]})
		for k, slot := range h.slots {
			sh.State[slot] = append(sh.State[slot], checkpoint.Tensor{Name: p.Name, Shape: p.Shape, Data: v[1+k]})
		}
	}
	return sh, nil
}

// recut moves the job to cut to at the boundary after done steps: every
// rank copies its stages to the host, the blocks that change rank go over
// the communicator (parameters and optimizer state, no disk), and every
// rank builds its stages for the new cut and loads them as a resume from a
// checkpoint of step done would, so the run goes on with the bits of that
// resume. The old stages' memory is freed after the new ones are loaded,
// and with them sl's data-parallel exchanges (built for the old stages).
func (rb *rebalancer) recut(ctx context.Context, done int, to []int, rs *rankStages, sl *stepLoop) error {
	h := rs.downloadStages()
	if err := rb.exchangeMoves(ctx, done, recutMoves(rb.cfg.Model, rb.sched.Placement, rb.cut, to), h); err != nil {
		return err
	}
	stages, opts := map[int]*models.Stage{}, map[int]models.Optimizer{}
	for _, s := range rb.order {
		st, opt, err := rs.newStage(to, s)
		if err == nil {
			var sh checkpoint.Shard
			if sh, err = h.shardFor(st); err == nil {
				err = st.LoadShard(sh, opt, done)
			}
		}
		if err != nil {
			return fmt.Errorf("rebalance after step %d: stage %d: %w", done, s, err)
		}
		stages[s], opts[s] = st, opt
	}
	for _, s := range rb.order {
		rs.stages[s].Release()
		// Restoring an empty state frees the device buffers of the moments.
		if err := rs.opts[s].SetState(models.OptimizerState{Kind: h.kind}); err != nil {
			return fmt.Errorf("rebalance after step %d: stage %d: %w", done, s, err)
		}
		rs.stages[s], rs.opts[s], rs.execSt[s] = stages[s], opts[s], stages[s]
	}
	sl.freeExchanges()
	rb.cut = slices.Clone(to)
	return nil
}
