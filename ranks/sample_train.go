package ranks

import (
	"context"

	"github.com/pplaunch/pplaunch/models/data"
)

// sampleDue says whether a sample follows step (from 0): every Every steps
// and after the last.
func sampleDue(o *SampleOptions, step, steps int) bool {
	if o == nil || o.Tokens < 1 {
		return false
	}
	return step == steps-1 || (o.Every > 0 && (step+1)%o.Every == 0)
}

// sample generates through replica 0's pipeline with the trained stages
// (Infer keeps nothing, so the training state is untouched) and hands the
// text to Job.OnSample on rank 0.
func (rs *rankStages) sample(ctx context.Context, step int) error {
	o := rs.job.Sample
	if rs.dRank != 0 {
		return nil
	}
	prompt := o.Prompt
	if prompt == nil {
		prompt = DefaultPrompt(rs.corpus, rs.cfg.Model.Seq)
	}
	placement := make([]int, rs.sched.Stages())
	for s, p := range rs.sched.Placement {
		placement[s] = rs.world(p, 0)
	}
	sm := &Sampler{Comm: rs.job.Comm, Rank: rs.job.Rank, Placement: placement, Stages: rs.stages, Timeout: rs.cfg.Timeout}
	toks, err := sm.Generate(ctx, uint32(step), prompt, *o)
	if err != nil {
		return err
	}
	if rs.job.Rank == 0 && rs.job.OnSample != nil {
		rs.job.OnSample(Sample{Step: step + 1, Prompt: prompt, Tokens: toks})
	}
	return nil
}

// DefaultPrompt is the start of the validation split: its first
// samplePromptLen tokens (fewer when the sequence is shorter), or a newline
// when the split is too short to hold a sequence.
func DefaultPrompt(c *data.Corpus, seq int) []int32 {
	tok, _, err := c.ValBatch(0, 1, seq)
	if err != nil || len(tok) == 0 {
		return []int32{'\n'}
	}
	return tok[:min(samplePromptLen, max(seq-1, 1), len(tok))]
}
