package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/schedules"
)

// planCmd is `pplaunch plan`: generate (or read), validate and simulate a
// pipeline schedule, and show its timeline.
type planCmd struct {
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

// run exits 2 when the flags (or the schedule they name) are wrong, as
// every command does for a usage error, and 1 when a file cannot be written.
func (c *planCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	usage := func(err error) error {
		if err == nil {
			return nil
		}
		return exitError{code: 2, err: err}
	}
	if err := c.check(); err != nil {
		return usage(err)
	}
	if c.Profile != "" {
		return usage(c.profilePlan(stdout))
	}
	if c.Compare {
		return usage(c.compare(stdout))
	}
	var res *plan.Result
	var err error
	if c.From != "" {
		res, err = c.fromFile()
	} else {
		res, err = plan.SimulateBuiltin(c.Schedule, c.Stages, c.Microbatches, c.Virtual, c.costs(), c.ActBytes)
	}
	if err != nil {
		return usage(fmt.Errorf("plan: %w", err))
	}
	if err := c.writeFiles(res); err != nil {
		return err
	}
	if c.Text {
		_, err := io.WriteString(stdout, schedules.Format(res.Sched))
		return err
	}
	if c.JSON {
		return writeJSON(stdout, res)
	}
	return plan.WriteResult(stdout, res, c.costs())
}

func (c *planCmd) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"--tf", c.TF}, {"--tb", c.TB}, {"--tw", c.TW}, {"--tcomm", c.TComm}} {
		if f.v < 0 {
			return fmt.Errorf("plan: %s %v: times must be >= 0", f.name, f.v)
		}
	}
	if c.TW > c.TB {
		return fmt.Errorf("plan: --tw %v is more than --tb %v: the weight gradient is part of the backward", c.TW, c.TB)
	}
	if c.ActBytes < 0 {
		return fmt.Errorf("plan: --act-bytes %d: must be >= 0", c.ActBytes)
	}
	if c.Compare && (c.SVG != "" || c.Trace != "" || c.From != "" || c.Text) {
		return errors.New("plan: --compare prints a table of the built-in schedules; --svg, --trace, --text and --from take one schedule")
	}
	if c.Text && (c.JSON || c.SVG != "" || c.Trace != "") {
		return errors.New("plan: --text prints only the schedule; drop --json, --svg and --trace")
	}
	if c.Profile != "" && (c.Compare || c.From != "" || c.Text || c.SVG != "" || c.Trace != "" || c.CSV != "") {
		return errors.New("plan: --profile predicts from measured costs; --compare, --from, --text, --svg, --trace and --csv take a schedule")
	}
	if c.Profile == "" && (c.World != 0 || c.MemoryBudget != "" || c.GlobalBatch != 0) {
		return errors.New("plan: --world, --memory-budget and --global-batch search layouts with the costs of --profile FILE (from train --profile)")
	}
	if c.CSVComms && c.CSV == "" {
		return errors.New("plan: --csv-comms says what --csv writes: give --csv FILE")
	}
	if c.Compare && c.CSV != "" {
		return errors.New("plan: --compare prints a table of the built-in schedules; --csv takes one schedule")
	}
	if c.From != "" && c.Virtual != 0 {
		return fmt.Errorf("plan: --virtual %d with --from: v comes from the file", c.Virtual)
	}
	return nil
}

// costs are the per-rank times the flags give.
func (c *planCmd) costs() plan.RankCosts {
	return plan.RankCosts{F: c.TF, B: c.TB, W: c.TW, Comm: c.TComm}
}

func (c *planCmd) fromFile() (*plan.Result, error) {
	text, err := os.ReadFile(c.From)
	if err != nil {
		return nil, err
	}
	s, err := schedules.Load(c.From, string(text))
	if err != nil {
		return nil, err
	}
	res, err := plan.Simulate(c.From, s, c.costs(), c.ActBytes)
	if err == nil {
		res.Notes = schedules.LoadNotes(c.From, string(text))
	}
	return res, err
}

func (c *planCmd) writeFiles(res *plan.Result) error {
	if c.CSV != "" {
		if err := os.WriteFile(c.CSV, []byte(schedules.FormatCSV(res.Sched, c.CSVComms)), 0o644); err != nil {
			return fmt.Errorf("plan: --csv: %w", err)
		}
	}
	if c.SVG == "" && c.Trace == "" {
		return nil
	}
	// The timeline is in ms; the writers take seconds.
	tl := &schedules.Timeline{Ranks: make([][]schedules.Span, len(res.Timeline.Ranks))}
	for r, spans := range res.Timeline.Ranks {
		for _, sp := range spans {
			tl.Ranks[r] = append(tl.Ranks[r], schedules.Span{Action: sp.Action, Start: sp.Start / 1e3, End: sp.End / 1e3})
		}
	}
	if c.SVG != "" {
		var b bytes.Buffer
		title := fmt.Sprintf("%s  P=%d v=%d M=%d  makespan %.4g ms  bubble %.1f%%", res.Schedule, res.P, res.V, res.M, res.Makespan, 100*res.Bubble)
		if err := schedules.WriteSVGWith(&b, tl, schedules.SVGOptions{Title: title, V: res.V, AxisFrom: "the step's start"}); err != nil {
			return err
		}
		if err := os.WriteFile(c.SVG, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("plan: --svg: %w", err)
		}
	}
	if c.Trace != "" {
		var b bytes.Buffer
		if err := schedules.WriteTrace(&b, tl); err != nil {
			return err
		}
		if err := os.WriteFile(c.Trace, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("plan: --trace: %w", err)
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

func (c *planCmd) compare(w io.Writer) error {
	all, err := plan.Compare(c.Stages, c.Microbatches, c.Virtual, c.costs(), c.ActBytes)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if c.JSON {
		return writeJSON(w, struct {
			P         int            `json:"p"`
			M         int            `json:"m"`
			Schedules []*plan.Result `json:"schedules"`
		}{c.Stages, c.Microbatches, all})
	}
	return plan.WriteComparison(w, c.Stages, c.Microbatches, c.costs(), all)
}
