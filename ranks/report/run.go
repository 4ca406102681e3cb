package report

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// Config is what a run's reporting is built from: the run, where it
// computes, the console, and the files and address the flags name ("" for
// each that is not given).
type Config struct {
	Train   ranks.TrainConfig
	World   int       // ranks in the job
	Compute string    // where the ranks compute and how the device tensors travel, for the start line
	Out     io.Writer // the console
	TTY     bool      // Out ends in a terminal: a progress bar rather than a line a step

	Metrics     string // --metrics: the records as JSON lines
	Trace       string // --trace: the measured timeline as Chrome-trace JSON
	TraceSVG    string // --trace-svg: the measured timeline as a picture
	TraceSteps  string // --trace-steps: the steps the picture draws (ParseTraceSteps)
	MetricsAddr string // --metrics-addr: the Prometheus endpoint and the live view
	Profile     string // --profile: the measured costs, written by Finish

	// Getenv reads the agent's environment (contract's names); nil: os.Getenv.
	Getenv func(string) string
}

func (c Config) getenv(name string) string {
	if c.Getenv == nil {
		return os.Getenv(name)
	}
	return c.Getenv(name)
}

// Run is rank 0's reporting of one training run (one attempt of a job).
type Run struct {
	cfg   Config
	start time.Time
	lines *jsonLines     // nil without --metrics
	trace *traceStream   // nil without --trace and --trace-svg
	prom  *metricsServer // nil without --metrics-addr
}

// Open opens the files and the endpoint cfg names and prints the run's
// start lines.
func Open(cfg Config) (*Run, error) {
	r := &Run{cfg: cfg, start: time.Now()}
	var err error
	if r.lines, err = openJSONLines(cfg); err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	if cfg.Trace != "" || cfg.TraceSVG != "" {
		if r.trace, err = openTraceStream(cfg.Trace, cfg.TraceSVG, cfg.World); err != nil {
			r.Close()
			return nil, fmt.Errorf("--trace: %w", err)
		}
	}
	title := runTitle(cfg.Train, cfg.World, cfg.Compute)
	if cfg.MetricsAddr != "" {
		if r.prom, err = startMetrics(cfg, newBoard(cfg.Train, title, cfg.World)); err != nil {
			r.Close()
			return nil, err
		}
	}
	fmt.Fprintf(cfg.Out, "train: %s\n", title)
	if len(cfg.Train.Effective) > 0 {
		fmt.Fprintf(cfg.Out, "config: %s\n", cfg.Train.Effective)
	}
	for _, n := range schedules.LoadNotes(cfg.Train.Schedule, cfg.Train.ScheduleText) {
		fmt.Fprintf(cfg.Out, "schedule: %s\n", n)
	}
	return r, nil
}

// Close releases what the run holds after a failure: the --metrics file,
// the trace (ended, so the steps done open in a viewer) and the endpoint,
// whose view then says the attempt failed. After Finish it does nothing
// more.
func (r *Run) Close() {
	r.lines.close()
	if r.trace != nil {
		r.trace.close()
	}
	if r.prom != nil {
		r.prom.close("this attempt ended with an error (the console says which)", false)
	}
}
