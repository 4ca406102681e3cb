package bench

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

// ScalingRow is one size's result: the plan and what its steady steps
// measured (means per step over the measured steps, warm-up left out).
type ScalingRow struct {
	ScalingSize
	Schedule string `json:"schedule"`
	Steps    int    `json:"steps"` // steps measured

	TokensPerS float64 `json:"tokens_per_s"`
	StepS      float64 `json:"step_s"` // mean measured step time
	// PredictedStepS is the simulator's step for the run's own measured
	// per-action costs (train --profile: every block's passes and the
	// transfers at each stage boundary), the data-parallel reduction at the
	// measured transfer bandwidth, plus the measured optimizer update.
	PredictedStepS float64 `json:"predicted_step_s"`
	// Efficiency is tokens/s per rank against the smallest size's.
	Efficiency      float64 `json:"efficiency"`
	BubbleMeasured  float64 `json:"bubble_measured"`
	BubblePredicted float64 `json:"bubble_predicted"`

	// ComputeS, TransferS and IdleS split StepS, as means over the ranks:
	// compute is the forward, backward and optimizer passes; transfer is
	// the wire time of the rank's messages and of the reductions; idle is
	// the rest (waiting for other ranks: the bubble, the slowest replica).
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
