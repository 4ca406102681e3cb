package ranks

import (
	"fmt"
	"strings"
)

// An elastic job's world (pplaunch --nnodes MIN:MAX) changes size between
// attempts. The run's flags were given for its first world; in a world of
// another size the ranks keep the global batch (micro-batches per replica ×
// replicas), so the loss curve stays that of a fixed-size run, and resume
// from the newest checkpoint, which any layout reads.

// RecordRelayout is the kind of --metrics' record of a re-layout.
const RecordRelayout = "relayout"

// Shape is a layout's widths and micro-batches per replica.
type Shape struct {
	PP    int `json:"pp"`
	DP    int `json:"dp"`
	Micro int `json:"micro"`
}

func (s Shape) String() string { return fmt.Sprintf("pp %d dp %d", s.PP, s.DP) }

// RelayoutRecord is one re-layout of an elastic job: the world before and
// after, their layouts, why, and the checkpoint step it went on from.
type RelayoutRecord struct {
	Record    string `json:"record"` // RecordRelayout
	Step      int    `json:"step"`   // the checkpoint step training goes on from (0: none, from the start)
	FromNodes int    `json:"from_nodes"`
	ToNodes   int    `json:"to_nodes"`
	FromRanks int    `json:"from_ranks"`
	ToRanks   int    `json:"to_ranks"`
	From      Shape  `json:"from"`
	To        Shape  `json:"to"`
	Reason    string `json:"reason"`
}

// Line is the re-layout's line in the log.
func (r RelayoutRecord) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "re-layout: %d → %d nodes", r.FromNodes, r.ToNodes)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	fmt.Fprintf(&b, ", %s → %s", r.From, r.To)
	if r.From.Micro != r.To.Micro {
		fmt.Fprintf(&b, ", %d → %d micro-batches per replica", r.From.Micro, r.To.Micro)
	}
	fmt.Fprintf(&b, " (global batch %d micro-batches)", r.To.DP*r.To.Micro)
	if r.Step > 0 {
		fmt.Fprintf(&b, ", from checkpoint step %d", r.Step)
	} else {
		b.WriteString(", from step 0 (no checkpoint yet)")
	}
	return b.String()
}

// ElasticLayout is the configuration for a world of size ranks of a run
// whose flags were given for a world of base ranks, keeping the global
// batch: first the same pp with dp = size/pp (the micro-batches per replica
// change), else the same dp with pp = size/dp (the stages change). Where
// neither gives a valid layout, the error names why each does not.
func (c TrainConfig) ElasticLayout(base, size int) (TrainConfig, Shape, error) {
	l0, err := c.Plan(base)
	if err != nil {
		return c, Shape{}, fmt.Errorf("the run's first world of %d ranks: %w", base, err)
	}
	global := l0.DP * c.Micro
	if base == size {
		return c, Shape{PP: l0.PP, DP: l0.DP, Micro: c.Micro}, nil
	}
	try := func(pp, dp int) (TrainConfig, Shape, string) {
		if global%dp != 0 {
			return c, Shape{}, fmt.Sprintf("pp %d dp %d: the global batch of %d micro-batches does not split over %d replicas", pp, dp, global, dp)
		}
		n := c
		n.PP, n.DP, n.Micro = pp, dp, global/dp
		if _, err := n.Plan(size); err != nil {
			return c, Shape{}, fmt.Sprintf("pp %d dp %d with %d micro-batches per replica: %v", pp, dp, n.Micro, err)
		}
		return n, Shape{PP: pp, DP: dp, Micro: n.Micro}, ""
	}
	var whys []string
	for _, keep := range []struct {
		name  string
		width int
		pp    func(w int) int
	}{
		{"pp", l0.PP, func(w int) int { return w }},
		{"dp", l0.DP, func(w int) int { return size / w }},
	} {
		if size%keep.width != 0 {
			whys = append(whys, fmt.Sprintf("keeping %s %d: %d ranks are not a multiple of it", keep.name, keep.width, size))
			continue
		}
		pp := keep.pp(keep.width)
		n, sh, why := try(pp, size/pp)
		if why == "" {
			return n, sh, nil
		}
		whys = append(whys, why)
	}
	return c, Shape{}, fmt.Errorf("no layout of %d ranks keeps the global batch of %d micro-batches of pp %d dp %d: %s",
		size, global, l0.PP, l0.DP, strings.Join(whys, "; "))
}
