package plan

import (
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/models"
)

// WriteProfile answers q --profile with p, the profile read from q.Profile:
// the cut comparison, or with --world or --memory-budget the layout search.
// A search that nothing fits prints its rows and then fails, saying what
// to change.
func (q *Query) WriteProfile(w io.Writer, p *Profile) error {
	if q.Precision != "" {
		prec, err := models.ParsePrecision(q.Precision)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if p, err = p.AtPrecision(prec); err != nil {
			return fmt.Errorf("plan: --profile %s: %w", q.Profile, err)
		}
	}
	if q.World == 0 && q.MemoryBudget == "" {
		return q.writeCuts(w, p)
	}
	head, err := q.searchHead(p)
	if err != nil {
		return err
	}
	rows, err := Search(p, head.World, head.Global, head.Budget, head.Zero)
	if err != nil {
		return fmt.Errorf("plan: search: %w", err)
	}
	if q.JSON {
		return writeJSON(w, struct {
			World       int   `json:"world"`
			GlobalBatch int   `json:"global_batch"`
			Budget      int64 `json:"memory_budget_bytes,omitempty"`
			Layouts     []Row `json:"layouts"`
		}{head.World, head.Global, head.Budget, rows})
	}
	fits, err := WriteSearch(w, q.Profile, p, rows, head)
	if err != nil {
		return err
	}
	if fits == 0 {
		more := ""
		if q.Zero == 0 {
			more = ", shard the optimizer state (--zero 1)"
		}
		return fmt.Errorf("plan: no layout fits the memory budget: raise --memory-budget, add ranks (--world)%s or lower --global-batch", more)
	}
	return nil
}

// searchHead is the search q asks of p: the world and global batch default
// to the profiled run's.
func (q *Query) searchHead(p *Profile) (SearchHead, error) {
	h := SearchHead{World: q.World, Global: q.GlobalBatch, Zero: q.Zero, Top: q.Top}
	if h.World == 0 {
		h.World = p.World()
	}
	if h.Global == 0 {
		h.Global = p.GlobalBatch()
	}
	if q.MemoryBudget != "" {
		var err error
		if h.Budget, err = ParseBytes(q.MemoryBudget); err != nil {
			return h, fmt.Errorf("plan: --memory-budget %w", err)
		}
	}
	if h.World < 1 || h.Global < 1 || h.Top < 1 {
		return h, fmt.Errorf("plan: --world %d, --global-batch %d and --top %d must be at least 1", h.World, h.Global, h.Top)
	}
	if err := CheckZero(h.Zero); err != nil {
		return h, fmt.Errorf("plan: %w", err)
	}
	return h, nil
}

// writeCuts predicts the profiled layout with its measured cut and with the
// profile-balanced one.
func (q *Query) writeCuts(w io.Writer, p *Profile) error {
	rows, err := CompareCuts(p)
	if err != nil {
		return fmt.Errorf("plan: --profile %s: %w", q.Profile, err)
	}
	if q.JSON {
		return writeJSON(w, struct {
			Cuts []CutRow `json:"cuts"`
		}{rows})
	}
	return WriteCuts(w, q.Profile, p, rows)
}
