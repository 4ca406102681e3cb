package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/plan"
)

// readProfile reads a file that train --profile wrote.
func readProfile(path string) (*plan.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := plan.ReadProfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// profilePlan is plan --profile: the cut comparison, or with --world or
// --memory-budget the layout search.
func (c *planCmd) profilePlan(w io.Writer) error {
	p, err := readProfile(c.Profile)
	if err != nil {
		return fmt.Errorf("plan: --profile %w", err)
	}
	if c.Precision != "" {
		q, err := models.ParsePrecision(c.Precision)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if p, err = p.AtPrecision(q); err != nil {
			return fmt.Errorf("plan: --profile %s: %w", c.Profile, err)
		}
	}
	if c.World == 0 && c.MemoryBudget == "" {
		return c.cutComparison(w, p)
	}
	world, global := c.World, c.GlobalBatch
	if world == 0 {
		world = p.World()
	}
	if global == 0 {
		global = p.GlobalBatch()
	}
	var budget int64
	if c.MemoryBudget != "" {
		if budget, err = plan.ParseBytes(c.MemoryBudget); err != nil {
			return fmt.Errorf("plan: --memory-budget %w", err)
		}
	}
	if world < 1 || global < 1 || c.Top < 1 {
		return fmt.Errorf("plan: --world %d, --global-batch %d and --top %d must be at least 1", world, global, c.Top)
	}
	if err := plan.CheckZero(c.Zero); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	rows, err := plan.Search(p, world, global, budget, c.Zero)
	if err != nil {
		return fmt.Errorf("plan: search: %w", err)
	}
	if c.JSON {
		return writeJSON(w, struct {
			World       int        `json:"world"`
			GlobalBatch int        `json:"global_batch"`
			Budget      int64      `json:"memory_budget_bytes,omitempty"`
			Layouts     []plan.Row `json:"layouts"`
		}{world, global, budget, rows})
	}
	return c.printSearch(w, p, rows, world, global, budget)
}

func (c *planCmd) profileLine(w io.Writer, p *plan.Profile) {
	m, l := p.Model, p.Layout
	fmt.Fprintf(w, "profile %s: %s, %d layers, width %d, seq %d, %d parameters; %s; %d sequences per micro-batch\n",
		c.Profile, m.Kind, m.Layers, m.Width, m.Seq, m.Params, p.Backend, p.MicroBatchSize)
	fmt.Fprintf(w, "measured: %s on pp %d × dp %d, %d micro-batches, cut %s: step %.4g ms (median of %d steps)\n",
		l.Schedule, l.PP, l.DP, l.Microbatches, joinInts(l.Cut), 1e3*p.StepS, p.Steps)
}

// cutComparison predicts the profiled layout with its measured cut and
// with the profile-balanced one.
func (c *planCmd) cutComparison(w io.Writer, p *plan.Profile) error {
	rows, err := plan.CompareCuts(p)
	if err != nil {
		return fmt.Errorf("plan: --profile %s: %w", c.Profile, err)
	}
	if c.JSON {
		return writeJSON(w, struct {
			Cuts []plan.CutRow `json:"cuts"`
		}{rows})
	}
	c.profileLine(w, p)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cut\tblocks per stage\tslowest stage ms\tpipeline ms (predicted)\tbubble")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%.4g\t%s\n", r.Name, joinInts(r.Cut), 1e3*r.SlowestStageS, 1e3*r.StepS, pct(r.Bubble))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "train with the balanced cut: --layers-per-stage %s (or --balance profile:%s)\n", joinInts(rows[1].Cut), c.Profile)
	return nil
}

func (c *planCmd) printSearch(w io.Writer, p *plan.Profile, rows []plan.Row, world, global int, budget int64) error {
	c.profileLine(w, p)
	fits := 0
	for _, r := range rows {
		if r.Fits {
			fits++
		}
	}
	limit := "no memory budget"
	if budget > 0 {
		limit = "budget " + plan.FormatBytes(budget) + " per rank"
	}
	if c.Zero > 0 {
		limit += fmt.Sprintf(", ZeRO stage %d", c.Zero)
	}
	fmt.Fprintf(w, "search: %d ranks, %d sequences per step, %s: %d layouts, %d fit\n", world, global, limit, len(rows), fits)
	fmt.Fprintln(w, "predicted step: the simulated pipeline from the profile's block times (scaled by micro-batch size) and transfer times, plus a ring all-reduce of the gradients at the measured transfer bandwidth; the optimizer step is not in it")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pp×dp\tschedule\tv\tM\tb\trecompute\tcut\tstep ms\tbubble\tmemory\tverdict")
	show := func(r plan.Row) {
		rc := "no"
		if r.Recompute {
			rc = "yes"
		}
		fmt.Fprintf(tw, "%d×%d\t%s\t%d\t%d\t%d\t%s\t%s\t%.4g\t%s\t%s\t%s\n", r.PP, r.DP, r.Schedule, r.V, r.Micro, r.MicroSize, rc,
			joinInts(r.Cut), 1e3*r.StepS, pct(r.Bubble), plan.FormatBytes(r.MemoryBytes), r.Why)
	}
	n := 0
	for _, r := range rows {
		if r.Fits && n < c.Top {
			show(r)
			n++
		}
	}
	n = 0
	for _, r := range rows {
		if !r.Fits && n < c.Top {
			show(r)
			n++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fits == 0 {
		more := ""
		if c.Zero == 0 {
			more = ", shard the optimizer state (--zero 1)"
		}
		return fmt.Errorf("plan: no layout fits the memory budget: raise --memory-budget, add ranks (--world)%s or lower --global-batch", more)
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
