package plan

import (
	"errors"
	"fmt"
)

// Query is what `pplaunch plan` is asked: a schedule (built in, or a file's)
// with per-rank costs to simulate, every built-in schedule to compare, or a
// profile to cut by and search layouts with, and the files and form of the
// answer. Its tags are the command line's flags (go-arg's), which the
// command embeds, so each flag is declared here once, beside its check.
type Query struct {
	Schedule     string  `arg:"--schedule" default:"1f1b" placeholder:"NAME" help:"gpipe, 1f1b, interleaved, zb-h1, zb-v, v-half, v-min or dualpipev"`
	Stages       int     `arg:"--stages" default:"4" placeholder:"P" help:"pipeline ranks P (one stage per rank, v with --virtual)"`
	Microbatches int     `arg:"--microbatches" default:"8" placeholder:"M" help:"micro-batches per step M"`
	Virtual      int     `arg:"--virtual" placeholder:"V" help:"virtual stages per rank v (interleaved: 2 or more, default 2; zb-v, v-half, v-min and dualpipev always have 2; the others 1)"`
	TF           float64 `arg:"--tf" default:"1" placeholder:"MS" help:"forward time of one micro-batch through one rank's layers, ms"`
	TB           float64 `arg:"--tb" default:"2" placeholder:"MS" help:"full backward time (input and weight gradients), ms"`
	TW           float64 `arg:"--tw" default:"1" placeholder:"MS" help:"weight-gradient part of the backward, ms; zero-bubble schedules run I = tb-tw and W = tw"`
	TComm        float64 `arg:"--tcomm" default:"0" placeholder:"MS" help:"time of one activation or gradient transfer, ms"`
	ActBytes     int64   `arg:"--act-bytes" placeholder:"BYTES" help:"activation bytes one micro-batch holds on one rank; adds peak bytes per rank"`
	From         string  `arg:"--from" placeholder:"FILE" help:"validate and simulate the schedule in FILE (the text form, or PyTorch's pipeline-order CSV when FILE ends in .csv; transfers are inserted if it has none); P, v and M come from the file"`
	CSV          string  `arg:"--csv" placeholder:"FILE" help:"write the schedule as PyTorch's pipeline-order CSV (compute only, as torchtitan's pipeline_parallel_schedule_csv loads it) to FILE"`
	CSVComms     bool    `arg:"--csv-comms" help:"with --csv: write the transfers too (PyTorch's compute_comms format)"`
	SVG          string  `arg:"--svg" placeholder:"FILE" help:"write a Gantt picture (SVG) to FILE"`
	Trace        string  `arg:"--trace" placeholder:"FILE" help:"write Chrome-trace JSON (opens in Perfetto) to FILE"`
	Compare      bool    `arg:"--compare" help:"simulate every schedule for this P and M side by side"`
	JSON         bool    `arg:"--json" help:"print the summary as one JSON object"`
	Text         bool    `arg:"--text" help:"print the schedule in the text form (with transfers) and nothing else"`
	Profile      string  `arg:"--profile" placeholder:"FILE" help:"costs measured by train --profile: the profile-balanced cut beside the measured one; with --world or --memory-budget, a search of layouts"`
	World        int     `arg:"--world" placeholder:"N" help:"with --profile: search the pp × dp layouts of N ranks [default: the profiled run's]"`
	MemoryBudget string  `arg:"--memory-budget" placeholder:"SIZE" help:"with --profile: the memory a rank may use, e.g. 12GiB; layouts above it are rejected"`
	GlobalBatch  int     `arg:"--global-batch" placeholder:"SEQ" help:"with --profile: sequences per step to search for [default: the profiled run's]"`
	Zero         int     `arg:"--zero" placeholder:"STAGE" help:"with a search: predict train --zero STAGE (1: the optimizer state sharded over the data-parallel replicas; 0 off)"`
	Top          int     `arg:"--top" default:"5" placeholder:"N" help:"with a search: how many kept and how many rejected layouts to print"`
	Precision    string  `arg:"--precision" placeholder:"P" help:"with --profile: predict for train --precision P (fp32, tf32 or bf16: bf16 keeps and sends 2-byte activations) [default: the profile's]"`
}

// Check refuses what q cannot answer: negative costs, a weight gradient
// longer than its backward, and flags that ask for two answers at once or
// for what another flag provides.
func (q *Query) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"--tf", q.TF}, {"--tb", q.TB}, {"--tw", q.TW}, {"--tcomm", q.TComm}} {
		if f.v < 0 {
			return fmt.Errorf("plan: %s %v: times must be >= 0", f.name, f.v)
		}
	}
	if q.TW > q.TB {
		return fmt.Errorf("plan: --tw %v is more than --tb %v: the weight gradient is part of the backward", q.TW, q.TB)
	}
	if q.ActBytes < 0 {
		return fmt.Errorf("plan: --act-bytes %d: must be >= 0", q.ActBytes)
	}
	return q.checkCombination()
}

// checkCombination refuses flags that do not go together.
func (q *Query) checkCombination() error {
	if q.Compare && (q.SVG != "" || q.Trace != "" || q.From != "" || q.Text) {
		return errors.New("plan: --compare prints a table of the built-in schedules; --svg, --trace, --text and --from take one schedule")
	}
	if q.Text && (q.JSON || q.SVG != "" || q.Trace != "") {
		return errors.New("plan: --text prints only the schedule; drop --json, --svg and --trace")
	}
	if q.Profile != "" && (q.Compare || q.From != "" || q.Text || q.SVG != "" || q.Trace != "" || q.CSV != "") {
		return errors.New("plan: --profile predicts from measured costs; --compare, --from, --text, --svg, --trace and --csv take a schedule")
	}
	if q.Profile == "" && (q.World != 0 || q.MemoryBudget != "" || q.GlobalBatch != 0) {
		return errors.New("plan: --world, --memory-budget and --global-batch search layouts with the costs of --profile FILE (from train --profile)")
	}
	if q.CSVComms && q.CSV == "" {
		return errors.New("plan: --csv-comms says what --csv writes: give --csv FILE")
	}
	if q.Compare && q.CSV != "" {
		return errors.New("plan: --compare prints a table of the built-in schedules; --csv takes one schedule")
	}
	if q.From != "" && q.Virtual != 0 {
		return fmt.Errorf("plan: --virtual %d with --from: v comes from the file", q.Virtual)
	}
	return nil
}

// Costs are the per-rank times q gives.
func (q *Query) Costs() RankCosts {
	return RankCosts{F: q.TF, B: q.TB, W: q.TW, Comm: q.TComm}
}
