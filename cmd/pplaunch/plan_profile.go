package main

import (
	"fmt"
	"io"
	"os"

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
	return plan.WriteCuts(w, c.Profile, p, rows)
}

func (c *planCmd) printSearch(w io.Writer, p *plan.Profile, rows []plan.Row, world, global int, budget int64) error {
	fits, err := plan.WriteSearch(w, c.Profile, p, rows, plan.SearchHead{World: world, Global: global, Budget: budget, Zero: c.Zero, Top: c.Top})
	if err != nil {
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
