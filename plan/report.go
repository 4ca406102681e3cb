package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pplaunch/pplaunch/schedules"
)

// The text forms of the planner's answers, as pplaunch plan prints them.

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// FormatCut is a cut as --layers-per-stage takes it: "3,2,3".
func FormatCut(cut []int) string {
	s := make([]string, len(cut))
	for i, x := range cut {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// String is the costs' line: "costs per micro-batch per rank: tF=… ms".
func (c RankCosts) String() string {
	return fmt.Sprintf("costs per micro-batch per rank: tF=%g tB=%g (I=%g W=%g) tcomm=%g ms", c.F, c.B, c.B-c.W, c.W, c.Comm)
}

// WriteResult prints one schedule's simulation with costs c: its makespan,
// bubble and closed form, each rank's busy and idle time and peak, and its
// Gantt chart in ms.
func WriteResult(w io.Writer, res *Result, c RankCosts) error {
	fmt.Fprintf(w, "%s: P=%d ranks, v=%d, M=%d micro-batches\n", res.Schedule, res.P, res.V, res.M)
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, c)
	fmt.Fprintf(w, "makespan  %.4g ms\nideal     %.4g ms (busiest rank's compute)\nbubble    %s\n", res.Makespan, res.Ideal, pct(res.Bubble))
	if res.BubbleFormula != nil {
		fmt.Fprintf(w, "formula   %s %s\n", pct(*res.BubbleFormula), res.Formula)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "rank\tbusy ms\tidle ms\tpeak act (micro-batches)\t"
	if res.PeakBytes != nil {
		hdr += "peak act bytes\t"
	}
	fmt.Fprintln(tw, hdr)
	for r := range res.P {
		line := fmt.Sprintf("%d\t%.4g\t%.4g\t%.4g\t", r, res.Busy[r], res.Idle[r], res.PeakActivations[r])
		if res.PeakBytes != nil {
			line += fmt.Sprintf("%d\t", res.PeakBytes[r])
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nGantt:")
	var g strings.Builder
	if err := schedules.WriteGantt(&g, res.Timeline, res.V, 0); err != nil {
		return err
	}
	// The simulator's time unit is the costs', which plan gives in ms.
	_, err := io.WriteString(w, strings.Replace(g.String(), " time units;", " ms;", 1))
	return err
}

// WriteComparison prints Compare's results for p ranks and m micro-batches
// with costs c, one schedule a row.
func WriteComparison(w io.Writer, p, m int, c RankCosts, all []*Result) error {
	fmt.Fprintf(w, "P=%d ranks, M=%d micro-batches\n", p, m)
	fmt.Fprintln(w, c)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "schedule\tv\tmakespan ms\tideal ms\tbubble\tclosed form\tpeak closed form\tpeak act per rank (micro-batches)")
	for _, r := range all {
		form, pform := "-", "-"
		if r.BubbleFormula != nil {
			form = pct(*r.BubbleFormula) + " " + r.Formula
		}
		if r.PeakFormulaVal != nil {
			pform = fmt.Sprintf("%.4g %s", *r.PeakFormulaVal, r.PeakFormula)
		}
		peaks := make([]string, len(r.PeakActivations))
		for i, p := range r.PeakActivations {
			peaks[i] = fmt.Sprintf("%.4g", p)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4g\t%s\t%s\t%s\t%s\n", r.Schedule, r.V, r.Makespan, r.Ideal, pct(r.Bubble), form, pform, strings.Join(peaks, " "))
	}
	return tw.Flush()
}

// writeProfileHead prints what profile p (read from file name) measured.
func writeProfileHead(w io.Writer, name string, p *Profile) {
	m, l := p.Model, p.Layout
	fmt.Fprintf(w, "profile %s: %s, %d layers, width %d, seq %d, %d parameters; %s; %d sequences per micro-batch\n",
		name, m.Kind, m.Layers, m.Width, m.Seq, m.Params, p.Backend, p.MicroBatchSize)
	fmt.Fprintf(w, "measured: %s on pp %d × dp %d, %d micro-batches, cut %s: step %.4g ms (median of %d steps)\n",
		l.Schedule, l.PP, l.DP, l.Microbatches, FormatCut(l.Cut), 1e3*p.StepS, p.Steps)
}

// WriteCuts prints CompareCuts' rows for profile p (read from file name):
// the measured cut beside the profile-balanced one, and how to train with
// the balanced one.
func WriteCuts(w io.Writer, name string, p *Profile, rows []CutRow) error {
	writeProfileHead(w, name, p)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cut\tblocks per stage\tslowest stage ms\tpipeline ms (predicted)\tbubble")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%.4g\t%s\n", r.Name, FormatCut(r.Cut), 1e3*r.SlowestStageS, 1e3*r.StepS, pct(r.Bubble))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "train with the balanced cut: --layers-per-stage %s (or --balance profile:%s)\n", FormatCut(rows[1].Cut), name)
	return nil
}

// SearchHead is what a search was asked: the ranks, sequences per step,
// memory budget per rank (0: none) and ZeRO stage, and how many layouts
// that fit (and that do not) to show.
type SearchHead struct {
	World, Global int
	Budget        int64
	Zero, Top     int
}

// WriteSearch prints Search's rows for profile p (read from file name): the
// first q.Top that fit, then the first q.Top that do not. fits is how many fit.
func WriteSearch(w io.Writer, name string, p *Profile, rows []Row, q SearchHead) (fits int, err error) {
	writeProfileHead(w, name, p)
	for _, r := range rows {
		if r.Fits {
			fits++
		}
	}
	limit := "no memory budget"
	if q.Budget > 0 {
		limit = "budget " + FormatBytes(q.Budget) + " per rank"
	}
	if q.Zero > 0 {
		limit += fmt.Sprintf(", ZeRO stage %d", q.Zero)
	}
	fmt.Fprintf(w, "search: %d ranks, %d sequences per step, %s: %d layouts, %d fit\n", q.World, q.Global, limit, len(rows), fits)
	fmt.Fprintln(w, "predicted step: the simulated pipeline from the profile's block times (scaled by micro-batch size) and transfer times, plus a ring all-reduce of the gradients at the measured transfer bandwidth; the optimizer step is not in it")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pp×dp\tschedule\tv\tM\tb\trecompute\tcut\tstep ms\tbubble\tmemory\tverdict")
	for _, fit := range []bool{true, false} {
		n := 0
		for _, r := range rows {
			if r.Fits == fit && n < q.Top {
				writeRow(tw, r)
				n++
			}
		}
	}
	return fits, tw.Flush()
}

func writeRow(w io.Writer, r Row) {
	rc := "no"
	if r.Recompute {
		rc = "yes"
	}
	fmt.Fprintf(w, "%d×%d\t%s\t%d\t%d\t%d\t%s\t%s\t%.4g\t%s\t%s\t%s\n", r.PP, r.DP, r.Schedule, r.V, r.Micro, r.MicroSize, rc,
		FormatCut(r.Cut), 1e3*r.StepS, pct(r.Bubble), FormatBytes(r.MemoryBytes), r.Why)
}
