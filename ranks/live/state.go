package live

import (
	"time"
)

// State is the whole view: what the page draws and `pplaunch top` prints.
type State struct {
	Run      Run         `json:"run"`
	Series   []Point     `json:"series"`
	Ranks    []RankState `json:"ranks"`
	Timeline *Timeline   `json:"timeline,omitempty"`
	Updated  time.Time   `json:"updated"`
}

// Run describes the job: its configuration as the console's config: line
// prints it (which reads back with --config), and where it stands.
type Run struct {
	Title    string    `json:"title"` // the console's train: line
	Config   string    `json:"config,omitempty"`
	World    int       `json:"world"`
	PP       int       `json:"pp"`
	DP       int       `json:"dp"`
	Schedule string    `json:"schedule"`
	Steps    int       `json:"steps"`
	Restart  int       `json:"restart"` // 0 on the first attempt (--max-restarts)
	Started  time.Time `json:"started"`
	// Ended is set when this attempt's rank 0 has stopped, Outcome says
	// how, and Done when the run is over: it finished, was stopped, or
	// failed with no restart left (an attempt that failed with restarts
	// left is followed by another, whose rank 0 serves the view again).
	Ended   bool   `json:"ended"`
	Done    bool   `json:"done"`
	Outcome string `json:"outcome,omitempty"`
}

// Point is one step of the curves (steps count from 1, as on the console).
type Point struct {
	Step       int      `json:"step"`
	Loss       float64  `json:"loss"`
	ValLoss    *float64 `json:"val_loss,omitempty"`
	TokensPerS float64  `json:"tokens_per_s"`
	StepS      float64  `json:"step_s"`
	Bubble     float64  `json:"bubble"`
	SimBubble  float64  `json:"sim_bubble"`
}

// RankState is one rank's row.
type RankState struct {
	Rank   int     `json:"rank"`
	Stages []int   `json:"stages"`
	Step   int     `json:"step"` // from 1, as on the console; 0 before the first
	Doing  string  `json:"doing"`
	Peer   *int    `json:"peer,omitempty"`
	ForS   float64 `json:"for_s"` // how long it has been in it
	// Status is "ok", "stuck" (in one action far longer than a step
	// takes), "silent" (no report for a while: stopped, hung or gone),
	// "waiting" (no report yet) or "done".
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// Memory of the last step: resident set, device peak (0 on the CPU),
	// peak activations.
	RSS        int64 `json:"rss_bytes"`
	PeakDevice int64 `json:"peak_device_bytes,omitempty"`
	PeakAct    int64 `json:"peak_activation_bytes"`
	Optimizer  int64 `json:"optimizer_state_bytes"` // a 1/dp part of the stage's with --zero 1
	// Busy is the rank's share of the last step in compute (1 - its bubble).
	Busy float64 `json:"busy"`
}

// Timeline is the last step's measured spans per rank beside the expected
// ones (each action at its mean time, as the trace picture draws them),
// seconds from the step's first start.
type Timeline struct {
	Step     int      `json:"step"`
	Measured [][]Span `json:"measured"`
	Expected [][]Span `json:"expected,omitempty"`
	Span     float64  `json:"span_s"`
}

// Span is one action of a rank's timeline.
type Span struct {
	Kind  string  `json:"kind"`
	Stage int     `json:"stage"`
	Micro int     `json:"micro"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}
