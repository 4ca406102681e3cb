package bench

import (
	"cmp"
	"fmt"
	"slices"
)

// ScalingMode says how the global batch follows the world size.
type ScalingMode string

const (
	// Weak scaling: the global batch grows with the world, so every rank
	// keeps the work of the smallest size.
	Weak ScalingMode = "weak"
	// Strong scaling: the global batch stays that of the smallest size.
	Strong ScalingMode = "strong"
)

// ScalingSize is one size of a scaling run, as planned: where its ranks run
// and the layout and batch that train gets.
type ScalingSize struct {
	Nodes int `json:"nodes"`
	NProc int `json:"nproc"` // ranks per node
	World int `json:"world"`
	PP    int `json:"pp"`
	DP    int `json:"dp"`
	// Micro is micro-batches per step per replica, MicroSize sequences per
	// micro-batch; the global batch is DP·Micro·MicroSize sequences.
	Micro       int `json:"microbatches"`
	MicroSize   int `json:"microbatch_size"`
	GlobalBatch int `json:"global_batch"`
}

// Where is the size's nodes and ranks in words: "2 nodes × 1 rank".
func (s ScalingSize) Where() string {
	plural := func(n int, w string) string {
		if n == 1 {
			return "1 " + w
		}
		return fmt.Sprintf("%d %ss", n, w)
	}
	return plural(s.Nodes, "node") + " × " + plural(s.NProc, "rank")
}

// ScalingRow is one size's result: the plan and what its steady steps
// measured (means per step over the measured steps, warm-up left out).
type ScalingRow struct {
	ScalingSize
	Schedule string `json:"schedule"`
	Steps    int    `json:"steps"` // steps measured

	TokensPerS float64 `json:"tokens_per_s"`
	StepS      float64 `json:"step_s"` // mean measured step time
	// PredictedStepS is the simulator's step for the run's own measured
	// costs: every block's passes (train --profile) and the measured
	// latency of one message, plus the reductions and the optimizer update
	// after the pipeline as measured. 0 for a schedule given as a file.
	PredictedStepS float64 `json:"predicted_step_s"`
	// Efficiency is tokens/s per rank against the smallest size's.
	Efficiency      float64 `json:"efficiency"`
	BubbleMeasured  float64 `json:"bubble_measured"`
	BubblePredicted float64 `json:"bubble_predicted"`

	// ComputeS, TransferS and IdleS split StepS, as means over the ranks:
	// compute is the forward, backward and optimizer passes; transfer is
	// the time computes waited for messages already sent, and the
	// reductions after the pipeline; idle is the rest (the bubble: waiting
	// for a peer's compute, or the slowest replica).
	ComputeS  float64 `json:"compute_s"`
	TransferS float64 `json:"transfer_s"`
	IdleS     float64 `json:"idle_s"`
	// TransferShare is TransferS / StepS.
	TransferShare float64 `json:"transfer_share"`

	// PeakBytes is the most memory one rank held: the device allocator's
	// peak on a GPU, else the resident set size. PeakKind says which
	// ("device" or "rss").
	PeakBytes int64  `json:"peak_bytes"`
	PeakKind  string `json:"peak_kind"`
}

// ScalingPlan is what the sizes of a scaling run are made of.
type ScalingPlan struct {
	Nodes []int // node counts
	NProc []int // ranks per node
	Mode  ScalingMode
	// Grow is the parallel dimension that takes the world's growth: "pp"
	// (the pipeline deepens; dp stays Fixed) or "dp" (replicas are added;
	// pp stays Fixed).
	Grow string
	// Fixed is the other dimension's size; 0: 1 for dp, the smallest
	// world for pp.
	Fixed int
	// Micro and MicroSize are the smallest size's micro-batches per
	// replica and sequences per micro-batch.
	Micro, MicroSize int
}

// Sizes lays out every node count × ranks per node, smallest world first
// (fewer nodes first among equal worlds), with the batch the mode asks for:
// weak scaling keeps the smallest size's sequences per rank, strong scaling
// its global batch. A size whose world or batch does not split into the
// layout is an error naming it and what to change.
func (p ScalingPlan) Sizes() ([]ScalingSize, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	var out []ScalingSize
	for _, n := range p.Nodes {
		for _, k := range p.NProc {
			out = append(out, ScalingSize{Nodes: n, NProc: k, World: n * k, MicroSize: p.MicroSize})
		}
	}
	slices.SortStableFunc(out, func(a, b ScalingSize) int {
		return cmp.Or(cmp.Compare(a.World, b.World), cmp.Compare(a.Nodes, b.Nodes))
	})
	out = slices.CompactFunc(out, func(a, b ScalingSize) bool { return a.Nodes == b.Nodes && a.NProc == b.NProc })
	for i := range out {
		if err := p.layout(&out[i], out[0].World); err != nil {
			return nil, err
		}
	}
	base := out[0].DP * p.Micro * p.MicroSize // the smallest size sets the batch
	for i := range out {
		s := &out[i]
		s.GlobalBatch = base
		if p.Mode == Weak {
			if s.World*base%out[0].World != 0 {
				return nil, fmt.Errorf("weak scaling at world %d: the smallest world's global batch of %d sequences × %d/%d is not whole; choose sizes that are multiples of the smallest, or a larger --microbatches", s.World, base, s.World, out[0].World)
			}
			s.GlobalBatch = base * s.World / out[0].World
		}
		per := s.DP * p.MicroSize
		if s.GlobalBatch%per != 0 {
			return nil, fmt.Errorf("%s scaling at world %d (pp %d × dp %d): a global batch of %d sequences does not split into %d replicas × micro-batches of %d sequences; give --microbatches a multiple of %d",
				p.Mode, s.World, s.PP, s.DP, s.GlobalBatch, s.DP, p.MicroSize, s.DP/gcd(s.DP, out[0].DP))
		}
		s.Micro = s.GlobalBatch / per
	}
	return out, nil
}

func (p ScalingPlan) check() error {
	if len(p.Nodes) == 0 || len(p.NProc) == 0 {
		return fmt.Errorf("scaling: no sizes: give --nodes and/or --nproc")
	}
	for _, l := range []struct {
		flag string
		v    []int
	}{{"--nodes", p.Nodes}, {"--nproc", p.NProc}} {
		for _, x := range l.v {
			if x < 1 {
				return fmt.Errorf("scaling: %s %d: want counts of at least 1", l.flag, x)
			}
		}
	}
	if p.Mode != Weak && p.Mode != Strong {
		return fmt.Errorf("scaling: mode %q: want weak or strong", p.Mode)
	}
	if p.Grow != "pp" && p.Grow != "dp" {
		return fmt.Errorf("scaling: --grow %q: want pp (deeper pipeline) or dp (more replicas)", p.Grow)
	}
	if p.Micro < 1 || p.MicroSize < 1 || p.Fixed < 0 {
		return fmt.Errorf("scaling: %d micro-batches of %d sequences, fixed dimension %d: want positive sizes", p.Micro, p.MicroSize, p.Fixed)
	}
	return nil
}

// layout sets s's pp and dp: the growing dimension is the world over the
// fixed one, which must divide it.
func (p ScalingPlan) layout(s *ScalingSize, smallest int) error {
	fixed := p.Fixed
	if fixed == 0 {
		fixed = 1
		if p.Grow == "dp" {
			fixed = smallest
		}
	}
	if s.World%fixed != 0 {
		other := map[string]string{"pp": "dp", "dp": "pp"}[p.Grow]
		return fmt.Errorf("scaling: world %d (%s) does not split into %s %d × a %s that grows; choose sizes that are multiples of %d, or another --%s",
			s.World, s.Where(), other, fixed, p.Grow, fixed, other)
	}
	if p.Grow == "pp" {
		s.DP, s.PP = fixed, s.World/fixed
	} else {
		s.PP, s.DP = fixed, s.World/fixed
	}
	return nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
