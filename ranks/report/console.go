package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
)

// Step reports one step's record: to --metrics, the trace, the endpoint and
// the console.
func (r *Run) Step(rec ranks.StepRecord) {
	r.lines.write(rec)
	if r.trace != nil && rec.Timeline != nil {
		r.trace.add(rec.Timeline)
	}
	if r.prom != nil {
		r.prom.observe(rec)
	}
	line := stepLine(rec, r.cfg.Train.Steps)
	if !r.cfg.TTY {
		fmt.Fprintln(r.cfg.Out, line)
		return
	}
	if bar, ok := progressBar(rec, r.cfg.Train.Steps, time.Since(r.start)); ok {
		fmt.Fprintf(r.cfg.Out, "%s %s\n", bar, line)
	}
}

// Event writes an evaluation's or a checkpoint's record to --metrics, as
// its own line after its step's.
func (r *Run) Event(e ranks.EventRecord) { r.lines.write(e) }

// Relayout prints the line of the re-layout that made this world and writes
// its record to --metrics, once training resumes from step.
func (r *Run) Relayout(rec *ranks.RelayoutRecord, step int) {
	rec.Step = step
	fmt.Fprintln(r.cfg.Out, rec.Line())
	r.lines.write(rec)
}

// Sample prints a sample on one line.
func (r *Run) Sample(s ranks.Sample) {
	fmt.Fprintf(r.cfg.Out, "sample after step %d: %s\n", s.Step, ranks.FormatSample(r.cfg.Train.Model.Vocab, s.Prompt, s.Tokens))
}

// stepLine is a step's line on the console, of a run of steps steps.
func stepLine(r ranks.StepRecord, steps int) string {
	val := ""
	if r.ValLoss != nil {
		val = fmt.Sprintf("  val %.4f", *r.ValLoss)
	}
	line := fmt.Sprintf("step %d/%d  loss %.4f%s  %.0f tok/s  %.3fs  bubble %.1f%% (sim %.1f%%)  peak act MiB [%s]",
		r.Step, steps, r.Loss, val, r.TokensPerS, r.StepS, 100*r.BubbleMeasured, 100*r.BubblePredicted, mibs(r.PeakActivation))
	if r.PeakDevice != nil {
		line += fmt.Sprintf("  device MiB [%s]", mibs(r.PeakDevice))
	}
	return line
}

// mibs spells byte counts in MiB, one decimal, space-separated.
func mibs(bytes []int64) string {
	s := make([]string, len(bytes))
	for i, b := range bytes {
		s[i] = fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
	return strings.Join(s, " ")
}

// progressBar is the bar before a step's line on a terminal, elapsed into
// the run. The agent relays whole lines, so the bar is redrawn as a line
// every twentieth of the run, at evaluations and at the ends; ok is false
// for the steps between.
func progressBar(r ranks.StepRecord, steps int, elapsed time.Duration) (bar string, ok bool) {
	const width = 20
	n := max(steps, 1)
	done := width * r.Step / n
	if r.Step > 1 && r.Step < n && r.ValLoss == nil && done == width*(r.Step-1)/n {
		return "", false
	}
	eta := time.Duration(float64(elapsed) / float64(r.Step) * float64(n-r.Step)).Round(time.Second)
	return fmt.Sprintf("[%s%s] %3d%%  ETA %-6v", strings.Repeat("#", done), strings.Repeat(".", width-done), 100*r.Step/n, eta), true
}
