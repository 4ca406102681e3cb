package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// trainOutput is rank 0's console, metrics and trace.
type trainOutput struct {
	cfg     ranks.TrainConfig
	w       io.Writer
	tty     bool
	metrics *os.File
	enc     *json.Encoder
	encErr  error          // the first failed --metrics write, reported at the end
	trace   *traceStream   // nil without --trace and --trace-svg
	prom    *metricsServer // nil without --metrics-addr
	c       *trainCmd
	world   int
	start   time.Time
}

func newTrainOutput(c *trainCmd, cfg ranks.TrainConfig, backend string, world int, w io.Writer) (*trainOutput, error) {
	o := &trainOutput{cfg: cfg, w: w, c: c, world: world, start: time.Now(), tty: os.Getenv(terminalEnv) == "1" || isTerminal(w)}
	if c.Metrics != "" {
		// An elastic job's re-formed world goes on with the records of
		// the worlds before it.
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if rc := os.Getenv(contract.EnvRestartCount); os.Getenv(contract.EnvElasticBase) != "" && rc != "" && rc != "0" {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(c.Metrics, flags, 0o666)
		if err != nil {
			return nil, fmt.Errorf("--metrics: %w", err)
		}
		o.metrics, o.enc = f, json.NewEncoder(f)
	}
	if c.Trace != "" || c.TraceSVG != "" {
		t, err := openTraceStream(c.Trace, c.TraceSVG, world)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("--trace: %w", err)
		}
		o.trace = t
	}
	v := ""
	if n, err := schedules.Resolve(cfg.Schedule, cfg.PP, cfg.Micro, cfg.Virtual); err == nil && cfg.Schedule == "interleaved" {
		v = fmt.Sprintf(" v=%d", n)
	}
	title := fmt.Sprintf("%s (%d parameters) on %s; %d ranks = pp %d × dp %d%s; schedule %s%s, %d micro-batches of %d sequences; %d steps; compute %s",
		cfg.Model, cfg.Model.NumParams(), dataName(cfg.Data), world, cfg.PP, cfg.DP, zeroNote(cfg.Zero, cfg.DP), cfg.Schedule, v, cfg.Micro, cfg.MicroSize, cfg.Steps, backend)
	if c.MetricsAddr != "" {
		b := newBoard(cfg, title, world)
		m, err := startMetrics(c.MetricsAddr, cfg.Steps, b, w)
		if err != nil {
			o.close()
			return nil, err
		}
		m.history = openLiveHistory(os.Getenv(launch.EnvProgress), b)
		o.prom = m
	}
	fmt.Fprintf(w, "train: %s\n", title)
	if len(cfg.Effective) > 0 {
		fmt.Fprintf(w, "config: %s\n", cfg.Effective)
	}
	for _, n := range schedules.LoadNotes(cfg.Schedule, cfg.ScheduleText) {
		fmt.Fprintf(w, "schedule: %s\n", n)
	}
	return o, nil
}

func dataName(p string) string {
	if p == "" {
		return "the embedded corpus"
	}
	return p
}

// zeroNote is what the start line says of --zero.
func zeroNote(zero, dp int) string {
	switch {
	case zero == 0:
		return ""
	case dp == 1:
		return fmt.Sprintf(" (ZeRO stage %d shards nothing on one replica)", zero)
	}
	return fmt.Sprintf(" (ZeRO stage %d: each replica keeps 1/%d of the optimizer state)", zero, dp)
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func (o *trainOutput) step(r ranks.StepRecord) {
	if o.enc != nil && o.encErr == nil {
		o.encErr = o.enc.Encode(r)
	}
	if o.trace != nil && r.Timeline != nil {
		o.trace.add(r.Timeline)
	}
	if o.prom != nil {
		o.prom.observe(r)
	}
	peaks := make([]string, len(r.PeakActivation))
	for i, p := range r.PeakActivation {
		peaks[i] = mib(p)
	}
	val := ""
	if r.ValLoss != nil {
		val = fmt.Sprintf("  val %.4f", *r.ValLoss)
	}
	line := fmt.Sprintf("step %d/%d  loss %.4f%s  %.0f tok/s  %.3fs  bubble %.1f%% (sim %.1f%%)  peak act MiB [%s]",
		r.Step, o.cfg.Steps, r.Loss, val, r.TokensPerS, r.StepS, 100*r.BubbleMeasured, 100*r.BubblePredicted, strings.Join(peaks, " "))
	if r.PeakDevice != nil {
		dev := make([]string, len(r.PeakDevice))
		for i, p := range r.PeakDevice {
			dev[i] = mib(p)
		}
		line += fmt.Sprintf("  device MiB [%s]", strings.Join(dev, " "))
	}
	if !o.tty {
		fmt.Fprintln(o.w, line)
		return
	}
	// The agent relays whole lines, so the bar is redrawn as a line every
	// twentieth of the run, at evaluations and at the ends.
	const width = 20
	n := max(o.cfg.Steps, 1)
	done := width * r.Step / n
	if r.Step > 1 && r.Step < n && r.ValLoss == nil && done == width*(r.Step-1)/n {
		return
	}
	eta := time.Duration(float64(time.Since(o.start)) / float64(r.Step) * float64(n-r.Step)).Round(time.Second)
	fmt.Fprintf(o.w, "[%s%s] %3d%%  ETA %-6v %s\n", strings.Repeat("#", done), strings.Repeat(".", width-done), 100*r.Step/n, eta, line)
}

// event writes an evaluation's or a checkpoint's record to --metrics, as
// its own line after its step's.
func (o *trainOutput) event(e ranks.EventRecord) {
	if o.enc != nil && o.encErr == nil {
		o.encErr = o.enc.Encode(e)
	}
}

// relayout prints the line of the re-layout that made this world and writes
// its record to --metrics, once training resumes from step.
func (o *trainOutput) relayout(r *ranks.RelayoutRecord, step int) {
	r.Step = step
	fmt.Fprintln(o.w, r.Line())
	if o.enc != nil && o.encErr == nil {
		o.encErr = o.enc.Encode(r)
	}
}

// sample prints a sample on one line.
func (o *trainOutput) sample(s ranks.Sample) {
	fmt.Fprintf(o.w, "sample after step %d: %s\n", s.Step, ranks.FormatSample(o.cfg.Model.Vocab, s.Prompt, s.Tokens))
}

func (o *trainOutput) close() {
	if o.metrics != nil {
		o.metrics.Close()
	}
	if o.trace != nil {
		o.trace.close()
	}
	if o.prom != nil {
		o.prom.close("this attempt ended with an error (the console says which)", false)
	}
}

// finish writes the trace files and prints the summary; sig is the
// preemption signal rank 0 received, if any.
func (o *trainOutput) finish(res *ranks.Result, sig os.Signal) error {
	if o.metrics != nil {
		err := errors.Join(o.encErr, o.metrics.Close())
		o.metrics = nil
		if err != nil {
			return fmt.Errorf("train: --metrics: %w", err)
		}
	}
	if o.trace != nil {
		title := fmt.Sprintf("measured: %s, pp %d × dp %d, %d micro-batches", o.cfg.Schedule, o.cfg.PP, o.cfg.DP, o.cfg.Micro)
		var sched *schedules.Schedule // for the steps and the expected timeline
		if l, err := o.cfg.Plan(o.world); err == nil {
			sched = l.Sched
		}
		win, err := parseTraceSteps(o.c.TraceSteps)
		if err == nil {
			err = o.trace.finish(o.c.TraceSVG, title, sched, win, res.FirstStep)
		}
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	if o.prom != nil {
		outcome := fmt.Sprintf("finished: steps %d..%d in %.1f s", res.FirstStep+1, res.Steps, time.Since(o.start).Seconds())
		if res.Stopped {
			outcome = fmt.Sprintf("stopped after step %d of %d (preempted): continue with --resume", res.Steps, o.cfg.Steps)
		}
		o.prom.close(outcome, true)
		o.prom = nil
	}
	stoppedBy := "a preemption signal to another rank"
	if sig != nil {
		stoppedBy = contract.SignalName(sig)
	}
	if !res.WriteSummary(o.w, time.Since(o.start), o.cfg.Steps, stoppedBy) {
		return nil
	}
	for _, f := range []string{o.c.Metrics, o.c.Trace, o.c.TraceSVG} {
		if f != "" {
			fmt.Fprintf(o.w, "  wrote %s\n", f)
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
