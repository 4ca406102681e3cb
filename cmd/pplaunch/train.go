package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/ranks/store"
	"github.com/pplaunch/pplaunch/schedules"
)

// trainCmd is `pplaunch [launcher flags] train`: pipeline-parallel training of
// a GPT on the embedded corpus (or --data). Run by the agent, each rank runs
// it with the rank environment; run alone, it is a one-rank world.
type trainCmd struct {
	modelFlags
	cutFlags
	InitFrom        string        `arg:"--init-from" placeholder:"FILE.safetensors" help:"start from these weights (e.g. nanoGPT's state_dict) instead of the seed"`
	Schedule        string        `arg:"--schedule" default:"1f1b" help:"gpipe, 1f1b, interleaved, zb-h1 or zb-v"`
	Virtual         int           `arg:"--virtual" help:"virtual stages per rank (interleaved: default 2; zb-v always has 2)"`
	Microbatches    int           `arg:"--microbatches" default:"8" help:"micro-batches per step per data-parallel replica"`
	MicrobatchSize  int           `arg:"--microbatch-size" default:"4" help:"sequences per micro-batch"`
	PP              int           `arg:"--pp" help:"pipeline ranks [default: world / dp]"`
	DP              int           `arg:"--dp" default:"1" help:"data-parallel replicas"`
	Recompute       bool          `arg:"--recompute" help:"recompute activations during backward instead of keeping them"`
	Optimizer       string        `arg:"--optimizer" default:"adamw" help:"adamw or sgd"`
	LR              float64       `arg:"--lr" default:"0.003" help:"peak learning rate"`
	MinLR           float64       `arg:"--min-lr" default:"0.0003" help:"learning rate at the end of the cosine decay"`
	Warmup          int           `arg:"--warmup" default:"5" help:"linear warmup steps"`
	WeightDecay     float64       `arg:"--weight-decay" default:"0.1" help:"AdamW decoupled weight decay"`
	Clip            float64       `arg:"--clip" default:"1" help:"clip gradients to this global norm (0: off)"`
	Steps           int           `arg:"--steps" default:"200" help:"optimizer steps"`
	EvalEvery       int           `arg:"--eval-every" default:"50" help:"validation loss every K steps (and at the end)"`
	EvalBatches     int           `arg:"--eval-batches" default:"4" help:"held-out micro-batches per evaluation"`
	Seed            uint64        `arg:"--seed" default:"1" help:"initialisation and data order"`
	Data            string        `arg:"--data" placeholder:"PATH" help:"corpus file or directory [default: the embedded text]"`
	Timeout         time.Duration `arg:"--timeout" default:"5m" help:"deadline of every wait (receive, send, reduction, checkpoint gathering)"`
	CheckpointDir   string        `arg:"--checkpoint-dir" placeholder:"DIR" help:"write checkpoints here (always the final one)"`
	CheckpointEvery int           `arg:"--checkpoint-every" placeholder:"K" help:"also checkpoint every K steps"`
	Resume          bool          `arg:"--resume" help:"continue from the newest complete checkpoint in --checkpoint-dir (a restart always does)"`
	Metrics         string        `arg:"--metrics" placeholder:"FILE" help:"per-step JSON lines (rank 0)"`
	Trace           string        `arg:"--trace" placeholder:"FILE" help:"measured timeline of every rank as Chrome-trace JSON"`
	TraceSVG        string        `arg:"--trace-svg" placeholder:"FILE" help:"measured timeline as an SVG Gantt picture"`
}

// Test-only fault hooks, read only inside a rank:
//
//	PPLAUNCH_TEST_STALL=RANK:STEP:ACTION (e.g. 1:2:1F3) makes that rank hang
//	before that action of that step, as a wedged peer would, until the agent
//	ends it.
//	PPLAUNCH_TEST_KILL=RANK:STEP makes that rank SIGKILL itself before that
//	step, on the first attempt only (restarts run normally).
//	PPLAUNCH_TEST_HOLD=RANK:STEP makes that rank wait before that step until
//	it receives a preemption signal, so that a test's signal lands mid-run.
const (
	stallEnv = "PPLAUNCH_TEST_STALL"
	killEnv  = "PPLAUNCH_TEST_KILL"
	holdEnv  = "PPLAUNCH_TEST_HOLD"
)

func (c *trainCmd) config() (ranks.TrainConfig, error) {
	m, err := c.modelFlags.config()
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	if !slices.Contains(schedules.Names, c.Schedule) {
		return ranks.TrainConfig{}, fmt.Errorf("--schedule %q: want one of %s", c.Schedule, strings.Join(schedules.Names, ", "))
	}
	return ranks.TrainConfig{
		Model: m, Schedule: c.Schedule, Virtual: c.Virtual, Micro: c.Microbatches, MicroSize: c.MicrobatchSize,
		PP: c.PP, DP: c.DP, Recompute: c.Recompute,
		Cut:       func(stages int) ([]int, error) { return c.cutFlags.cut(m, stages) },
		Optimizer: c.Optimizer, LR: c.LR, MinLR: c.MinLR, Warmup: c.Warmup, WeightDecay: c.WeightDecay, Clip: c.Clip,
		Steps: c.Steps, EvalEvery: c.EvalEvery, EvalBatches: c.EvalBatches, Seed: c.Seed, Data: c.Data,
		InitFrom: c.InitFrom, Timeout: c.Timeout, CheckpointDir: c.CheckpointDir, CheckpointEvery: c.CheckpointEvery, Resume: c.Resume,
	}, nil
}

// run is the train subcommand. As the agent, it first checks the whole
// configuration for the world it is about to launch, so that a bad flag is
// one message and exit code 2 before any rank starts; the ranks check it again
// (under --direct, srun or mpirun start them with no agent).
func (c *trainCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	if err := c.precheck(f, os.Getenv); err != nil {
		fmt.Fprintln(stderr, "pplaunch: train:", err)
		return 2
	}
	return runAsRanks(f, argv, stdout, stderr, c.job(stdout))
}

// precheck is the agent's check of the configuration, with the world size
// when this node is the whole world (with several nodes the size is known
// only at the rendezvous: what does not depend on it is checked). Inside a
// rank, or under --direct, it checks nothing: the rank does.
func (c *trainCmd) precheck(f launch.Flags, getenv func(string) string) error {
	if f.Direct || getenv(store.EnvRole) == store.RoleRank {
		return nil
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	size := 0
	// Bad launcher flags are runAgent's to report.
	if lc, err := launch.Resolve(f, getenv); err == nil && lc.NNodes == 1 {
		size = lc.NProc
	}
	if _, err := cfg.Plan(size); err != nil {
		return err
	}
	if _, err := ranks.LoadData(cfg); err != nil {
		return err
	}
	if cfg.InitFrom != "" {
		f, err := os.Open(cfg.InitFrom)
		if err != nil {
			return fmt.Errorf("--init-from: %w", err)
		}
		f.Close()
	}
	if size == 0 {
		return nil // rank 0, which writes the files below, may be on another node
	}
	for _, o := range []struct{ flag, path string }{{"--metrics", c.Metrics}, {"--trace", c.Trace}, {"--trace-svg", c.TraceSVG}} {
		if o.path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(o.path)); err != nil {
			return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("%s %s: %s is not a directory", o.flag, o.path, filepath.Dir(o.path))
		}
	}
	return nil
}

// job is the rank job the launcher runs on every rank (see runAsRanks).
func (c *trainCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	if os.Getenv(store.EnvRole) != store.RoleRank && isTerminal(stdout) {
		// In the agent: the ranks inherit this environment.
		os.Setenv(terminalEnv, "1")
	}
	return func(ctx context.Context, r *ranks.Rank) error {
		cfg, err := c.config()
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		l, err := cfg.Plan(r.WorldSize)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		cfg.PP = l.PP
		be, err := tensor.NewCPUFromEnv()
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		logf := func(f string, a ...any) { fmt.Fprintf(stdout, f+"\n", a...) }
		pre := watchPreemption(cfg.CheckpointDir != "", r.Rank, logf)
		defer pre.close()
		comm, err := openComm(ctx, r, collective.TCPOptions{Options: collective.Options{Timeout: cfg.Timeout}})
		if err != nil {
			return err
		}
		defer comm.Close()
		job := ranks.Job{
			Rank: r.Rank, Size: r.WorldSize, Store: r.Store, Comm: comm, Restart: r.RestartCount, Backend: be, Logf: logf,
		}
		if cfg.CheckpointDir != "" {
			job.Stop = pre.requested
			// SIGTERM, SIGINT and SIGHUP also cancel ctx (runRank): the
			// step in flight finishes and the checkpoint is written
			// anyway, within the agent's --grace-period.
			ctx = context.WithoutCancel(ctx)
		}
		if job.Stall, err = faultHooks(os.Getenv(stallEnv), os.Getenv(killEnv), os.Getenv(holdEnv), job.Rank, job.Restart, pre.got); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		job.Stall = ranks.ProgressFrom(ctx).Before(job.Stall) // what this rank does, for the agent's summary
		var out *trainOutput
		if job.Rank == 0 {
			if out, err = newTrainOutput(c, cfg, be.Name(), job.Size, stdout); err != nil {
				return fmt.Errorf("train: %w", err)
			}
			defer out.close()
			job.Report = out.step
		}
		res, err := ranks.Train(ctx, cfg, job)
		if err != nil {
			return err
		}
		if out != nil {
			return out.finish(res, pre.signal())
		}
		return nil
	}
}

// preemption watches for the signals that ask a training job to stop early:
// Slurm's preemption warning (SIGUSR1, as in sbatch --signal=USR1@120,
// forwarded by the agent) and the signals that end a job (SIGTERM, SIGINT,
// SIGHUP). With --checkpoint-dir, the ranks then finish the step, write a
// checkpoint together and exit: 0 after SIGUSR1, 128+signal after the others
// (runRank's code for them, so the agent reports them). Without it there is
// nothing to save: SIGUSR1 is logged and ignored, the others end the job at
// once as before.
type preemption struct {
	sigs chan os.Signal
	once sync.Once
	got  chan struct{} // closed at the first signal
	sig  atomic.Value  // that signal
	quit chan struct{}
}

func watchPreemption(checkpoints bool, rank int, logf func(string, ...any)) *preemption {
	p := &preemption{sigs: make(chan os.Signal, 4), got: make(chan struct{}), quit: make(chan struct{})}
	if checkpoints {
		signal.Notify(p.sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	} else {
		signal.Notify(p.sigs, syscall.SIGUSR1)
	}
	go func() {
		for {
			select {
			case s := <-p.sigs:
				if !checkpoints {
					if rank == 0 {
						logf("received %s: no --checkpoint-dir to save to, carrying on", signalName(s))
					}
					continue
				}
				p.once.Do(func() {
					p.sig.Store(s)
					close(p.got)
					if rank == 0 {
						logf("received %s: stopping after this step with a checkpoint", signalName(s))
					}
				})
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

// signalName names a signal the way the launcher's summary does.
func signalName(s os.Signal) string {
	if sig, ok := s.(syscall.Signal); ok {
		return launch.SignalName(sig)
	}
	return s.String()
}

// requested reports whether a stop was asked for.
func (p *preemption) requested() bool {
	select {
	case <-p.got:
		return true
	default:
		return false
	}
}

// signal is the signal received, or nil.
func (p *preemption) signal() os.Signal {
	s, _ := p.sig.Load().(os.Signal)
	return s
}

func (p *preemption) close() {
	signal.Stop(p.sigs)
	close(p.quit)
}

// openComm joins the TCP communicator of the job. Each rank listens on the
// address it reaches the store from, which is one its peers can reach too
// (loopback on one node, the node's interface across nodes).
// opts.Timeout bounds the joining as well as every later wait.
func openComm(ctx context.Context, r *ranks.Rank, opts collective.TCPOptions) (collective.Comm, error) {
	host := "127.0.0.1"
	if c, err := net.Dial("udp", r.StoreAddr); err == nil {
		host = c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
	}
	dctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	opts.Token, opts.Addr = r.Token, net.JoinHostPort(host, "0")
	comm, err := collective.NewTCP(dctx, r.Store, r.Rank, r.WorldSize, opts)
	if err != nil {
		return nil, fmt.Errorf("rank %d: communicator: %w", r.Rank, err)
	}
	return comm, nil
}

// faultHooks parses the test-only hooks for this rank into one callback run
// before every action; signalled is closed when a preemption signal arrives.
func faultHooks(stall, kill, hold string, rank, restart int, signalled <-chan struct{}) (func(int, schedules.Action), error) {
	var hooks []func(int, schedules.Action)
	if stall != "" {
		f, err := parseFault(stall, 3)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", stallEnv, err)
		}
		sched, err := schedules.Parse(f.action)
		if err != nil || len(sched.Ranks) != 1 || len(sched.Ranks[0]) != 1 {
			return nil, fmt.Errorf("%s=%q: %q is not one action in the text form", stallEnv, stall, f.action)
		}
		want := sched.Ranks[0][0]
		if f.rank == rank {
			hooks = append(hooks, func(s int, a schedules.Action) {
				if s == f.step && a == want {
					fmt.Fprintf(os.Stderr, "rank %d: %s: stalling before %s of step %d\n", rank, stallEnv, a, s)
					for {
						time.Sleep(time.Hour) // until the agent ends this process
					}
				}
			})
		}
	}
	if kill != "" {
		f, err := parseFault(kill, 2)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", killEnv, err)
		}
		if f.rank == rank && restart == 0 {
			hooks = append(hooks, func(s int, _ schedules.Action) {
				if s == f.step {
					fmt.Fprintf(os.Stderr, "rank %d: %s: SIGKILL before step %d\n", rank, killEnv, s)
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			})
		}
	}
	if hold != "" {
		f, err := parseFault(hold, 2)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", holdEnv, err)
		}
		if f.rank == rank && restart == 0 {
			held := false
			hooks = append(hooks, func(s int, _ schedules.Action) {
				if s == f.step && !held {
					held = true
					fmt.Fprintf(os.Stderr, "rank %d: %s: waiting for a preemption signal before step %d\n", rank, holdEnv, s)
					<-signalled
				}
			})
		}
	}
	if len(hooks) == 0 {
		return nil, nil
	}
	return func(s int, a schedules.Action) {
		for _, h := range hooks {
			h(s, a)
		}
	}, nil
}

type fault struct {
	rank, step int
	action     string
}

// parseFault reads "RANK:STEP" (n=2) or "RANK:STEP:ACTION" (n=3).
func parseFault(spec string, n int) (fault, error) {
	parts := strings.SplitN(spec, ":", n)
	if len(parts) != n {
		return fault{}, fmt.Errorf("%q: want RANK:STEP%s", spec, strings.Repeat(":ACTION", n-2))
	}
	r, err1 := strconv.Atoi(parts[0])
	step, err2 := strconv.Atoi(parts[1])
	if err := errors.Join(err1, err2); err != nil {
		return fault{}, fmt.Errorf("%q: %w", spec, err)
	}
	f := fault{rank: r, step: step}
	if n == 3 {
		f.action = parts[2]
	}
	return f, nil
}

// terminalEnv tells the ranks that the agent's output is a terminal (theirs
// is a pipe to the agent), so rank 0 draws a progress bar.
const terminalEnv = "PPLAUNCH_TRAIN_TERMINAL"

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// trainOutput is rank 0's console, metrics and trace.
type trainOutput struct {
	cfg     ranks.TrainConfig
	w       io.Writer
	tty     bool
	metrics *os.File
	enc     *json.Encoder
	encErr  error // the first failed --metrics write, reported at the end
	trace   *schedules.Timeline
	c       *trainCmd
	start   time.Time
}

func newTrainOutput(c *trainCmd, cfg ranks.TrainConfig, backend string, world int, w io.Writer) (*trainOutput, error) {
	o := &trainOutput{cfg: cfg, w: w, c: c, start: time.Now(), tty: os.Getenv(terminalEnv) == "1" || isTerminal(w)}
	if c.Metrics != "" {
		f, err := os.Create(c.Metrics)
		if err != nil {
			return nil, fmt.Errorf("--metrics: %w", err)
		}
		o.metrics, o.enc = f, json.NewEncoder(f)
	}
	if c.Trace != "" || c.TraceSVG != "" {
		o.trace = &schedules.Timeline{Ranks: make([][]schedules.Span, world)}
	}
	v := ""
	if cfg.Schedule == "interleaved" {
		v = fmt.Sprintf(" v=%d", max(cfg.Virtual, 2))
	}
	fmt.Fprintf(w, "train: %s (%d parameters) on %s; %d ranks = pp %d × dp %d; schedule %s%s, %d micro-batches of %d sequences; %d steps; compute %s\n",
		cfg.Model, cfg.Model.NumParams(), dataName(cfg.Data), world, cfg.PP, cfg.DP, cfg.Schedule, v, cfg.Micro, cfg.MicroSize, cfg.Steps, backend)
	return o, nil
}

func dataName(p string) string {
	if p == "" {
		return "the embedded corpus"
	}
	return p
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func (o *trainOutput) step(r ranks.StepRecord) {
	if o.enc != nil && o.encErr == nil {
		o.encErr = o.enc.Encode(r)
	}
	if o.trace != nil {
		for i, spans := range r.Timeline.Ranks {
			o.trace.Ranks[i] = append(o.trace.Ranks[i], spans...)
		}
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
		r.Step+1, o.cfg.Steps, r.Loss, val, r.TokensPerS, r.StepS, 100*r.BubbleMeasured, 100*r.BubblePredicted, strings.Join(peaks, " "))
	if !o.tty {
		fmt.Fprintln(o.w, line)
		return
	}
	// The agent relays whole lines, so the bar is redrawn as a line every
	// twentieth of the run, at evaluations and at the ends.
	const width = 20
	n := max(o.cfg.Steps, 1)
	done := width * (r.Step + 1) / n
	if r.Step > 0 && r.Step+1 < n && r.ValLoss == nil && done == width*r.Step/n {
		return
	}
	eta := time.Duration(float64(time.Since(o.start)) / float64(r.Step+1) * float64(n-r.Step-1)).Round(time.Second)
	fmt.Fprintf(o.w, "[%s%s] %3d%%  ETA %-6v %s\n", strings.Repeat("#", done), strings.Repeat(".", width-done), 100*(r.Step+1)/n, eta, line)
}

func (o *trainOutput) close() {
	if o.metrics != nil {
		o.metrics.Close()
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
		if err := writeFile(o.c.Trace, func(w io.Writer) error { return schedules.WriteTrace(w, o.trace) }); err != nil {
			return fmt.Errorf("train: --trace: %w", err)
		}
		if err := writeFile(o.c.TraceSVG, func(w io.Writer) error {
			return schedules.WriteSVG(w, o.trace, fmt.Sprintf("measured: %s, pp %d × dp %d, %d micro-batches", o.cfg.Schedule, o.cfg.PP, o.cfg.DP, o.cfg.Micro))
		}); err != nil {
			return fmt.Errorf("train: --trace-svg: %w", err)
		}
	}
	recs := res.Records
	fmt.Fprintf(o.w, "\nsummary: steps %d..%d in %.1fs", res.FirstStep+1, res.Steps, time.Since(o.start).Seconds())
	if len(recs) == 0 {
		fmt.Fprintln(o.w, " (nothing to do)")
		return nil
	}
	fmt.Fprintf(o.w, "\n  loss %.4f -> %.4f", recs[0].Loss, recs[len(recs)-1].Loss)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].ValLoss != nil {
			fmt.Fprintf(o.w, ", validation loss %.4f", *recs[i].ValLoss)
			break
		}
	}
	// The first step pays for warm-up (allocation, connections): leave it out.
	steady := recs
	if len(steady) > 1 {
		steady = steady[1:]
	}
	var tps, st, bm, bp float64
	for _, r := range steady {
		tps += r.TokensPerS
		st += r.StepS
		bm += r.BubbleMeasured
		bp += r.BubblePredicted
	}
	n := float64(len(steady))
	fmt.Fprintf(o.w, "\n  %.0f tokens/s, %.3fs per step, bubble %.1f%% measured, %.1f%% predicted from measured action times\n", tps/n, st/n, 100*bm/n, 100*bp/n)
	last := recs[len(recs)-1]
	for r, p := range last.PeakActivation {
		fmt.Fprintf(o.w, "  rank %d: peak activations %s MiB (%.2f micro-batches)\n", r, mib(p), last.PeakMicroBatches[r])
	}
	if res.Checkpoint != "" {
		fmt.Fprintf(o.w, "  checkpoint: %s\n", res.Checkpoint)
	}
	if res.Stopped {
		why := "a preemption signal to another rank"
		if sig != nil {
			why = signalName(sig)
		}
		fmt.Fprintf(o.w, "  stopped after step %d of %d on %s: continue with --resume\n", res.Steps, o.cfg.Steps, why)
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
