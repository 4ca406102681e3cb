package ranks

import (
	"fmt"
	"io"
	"time"
)

// WriteSummary prints res's end-of-run summary as pplaunch train does: the
// steps run in elapsed, the first and last loss, the steady steps' rate and
// bubble, every rank's peaks, the final checkpoint and, where the run
// stopped early, after which of the steps asked and on what (stoppedBy).
// It is false where no step ran (the line then says why), and nothing
// should follow.
func (res *Result) WriteSummary(w io.Writer, elapsed time.Duration, steps int, stoppedBy string) bool {
	sum := &res.Summary
	fmt.Fprintf(w, "\nsummary: steps %d..%d in %.1fs", res.FirstStep+1, res.Steps, elapsed.Seconds())
	if sum.Steps == 0 {
		if res.FirstStep > 0 && res.FirstStep >= res.Steps {
			fmt.Fprintf(w, " (nothing to do: the run resumed at step %d, already at --steps %d or past it; give a larger --steps to train on)\n", res.FirstStep, res.Steps)
			return false
		}
		fmt.Fprintln(w, " (nothing to do)")
		return false
	}
	fmt.Fprintf(w, "\n  loss %.4f -> %.4f", sum.FirstLoss, sum.Last.Loss)
	if sum.ValLoss != nil {
		fmt.Fprintf(w, ", validation loss %.4f", *sum.ValLoss)
	}
	tps, st, bm, bp := sum.Steady()
	fmt.Fprintf(w, "\n  %.0f tokens/s, %.3fs per step, bubble %.1f%% measured, %.1f%% predicted from measured action times\n", tps, st, 100*bm, 100*bp)
	last := sum.Last
	for r, p := range last.PeakActivation {
		dev := ""
		if r < len(sum.PeakDevice) {
			dev = fmt.Sprintf(", peak device memory %s MiB", mib(sum.PeakDevice[r]))
		}
		if r < len(last.OptimizerBytes) {
			dev += fmt.Sprintf(", optimizer state %s MiB", mib(last.OptimizerBytes[r]))
		}
		fmt.Fprintf(w, "  rank %d: peak activations %s MiB (%.2f micro-batches)%s\n", r, mib(p), last.PeakMicroBatches[r], dev)
	}
	if res.Checkpoint != "" {
		fmt.Fprintf(w, "  checkpoint: %s\n", res.Checkpoint)
	}
	if res.Stopped {
		fmt.Fprintf(w, "  stopped after step %d of %d on %s: continue with --resume\n", res.Steps, steps, stoppedBy)
	}
	return true
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
