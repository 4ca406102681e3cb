package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/ranks/report"
	"github.com/pplaunch/pplaunch/runconfig"
	"github.com/pplaunch/pplaunch/schedules"
)

// trainCmd is `pplaunch [launcher flags] train`: pipeline-parallel training of
// a GPT on the embedded corpus (or --data). Run by the agent, each rank runs
// it with the rank environment; run alone, it is a one-rank world.
type trainCmd struct {
	Config string `arg:"--config" placeholder:"FILE" help:"read the run's settings from this JSON (or .yaml) file: DeepSpeed's keys and the flags' names; flags given win"`
	modelFlags
	cutFlags
	optimFlags
	sampleFlags
	metricsFlags
	InitFrom        string        `arg:"--init-from" placeholder:"FILE.safetensors" help:"start from these weights (e.g. nanoGPT's state_dict) instead of the seed" same:"true"`
	Schedule        string        `arg:"--schedule" default:"1f1b" help:"gpipe, 1f1b, interleaved, zb-h1, zb-v, v-half, v-min, dualpipev, or a schedule FILE (text form, or PyTorch's pipeline-order .csv) checked against --pp and --microbatches" ds:"pipeline.schedule" same:"true"`
	Virtual         int           `arg:"--virtual" help:"virtual stages per rank (interleaved: default 2; the V schedules zb-v, v-half, v-min and dualpipev always have 2)" ds:"pipeline.virtual" alias:"virtual_stages,num_layers_per_virtual_pipeline_stage" same:"true"`
	Microbatches    int           `arg:"--microbatches" default:"8" help:"micro-batches per step per data-parallel replica" ds:"gradient_accumulation_steps" alias:"n_microbatches,num_microbatches,gradient_accumulation" same:"true"`
	MicrobatchSize  int           `arg:"--microbatch-size" default:"4" help:"sequences per micro-batch" ds:"train_micro_batch_size_per_gpu" alias:"micro_batch_size,batch_size,per_device_train_batch_size" same:"true"`
	PP              int           `arg:"--pp" help:"pipeline ranks [default: world / dp]" ds:"pipeline.num_stages" alias:"pipeline_parallel_size,pipeline_model_parallel_size,pipeline_parallel_degree" same:"true"`
	DP              int           `arg:"--dp" help:"data-parallel replicas [default: world / pp]" alias:"data_parallel_size,data_parallel_degree,data_parallel_replicate_degree" same:"true"`
	Recompute       bool          `arg:"--recompute" help:"recompute activations during backward instead of keeping them" ds:"pipeline.activation_checkpoint_interval" alias:"recompute_activations,gradient_checkpointing" same:"true"`
	Optimizer       string        `arg:"--optimizer" default:"adamw" help:"adamw or sgd" ds:"optimizer.type" same:"true"`
	LR              float64       `arg:"--lr" default:"0.003" help:"peak learning rate" ds:"optimizer.params.lr" alias:"learning_rate" same:"true"`
	MinLR           float64       `arg:"--min-lr" default:"0.0003" help:"learning rate at the end of the cosine decay" alias:"min_learning_rate,lr_min" same:"true"`
	Warmup          int           `arg:"--warmup" default:"5" help:"linear warmup steps" ds:"scheduler.params.warmup_num_steps" alias:"warmup_steps,warmup_iters,lr_warmup_steps,lr_warmup_iters" same:"true"`
	WeightDecay     float64       `arg:"--weight-decay" default:"0.1" help:"weight decay: AdamW's decoupled decay; with --optimizer sgd, L2 added to the gradient (torch.optim.SGD's weight_decay)" ds:"optimizer.params.weight_decay" same:"true"`
	Clip            float64       `arg:"--clip" default:"1" help:"clip gradients to this global norm (0: off)" ds:"gradient_clipping" alias:"clip_grad,max_grad_norm,grad_clip" same:"true"`
	Steps           int           `arg:"--steps" default:"200" help:"optimizer steps" ds:"train_iters" alias:"max_steps,train_steps,iterations" same:"true"`
	EvalEvery       int           `arg:"--eval-every" default:"50" help:"validation loss every K steps (and at the end)" alias:"eval_interval,eval_steps" same:"true"`
	EvalBatches     int           `arg:"--eval-batches" default:"4" help:"held-out micro-batches per evaluation" alias:"eval_iters" same:"true"`
	Seed            uint64        `arg:"--seed" default:"1" help:"initialisation and data order" same:"true"`
	Data            string        `arg:"--data" placeholder:"PATH" help:"corpus file or directory [default: the embedded text]" alias:"data_path,dataset" same:"true"`
	Timeout         durationValue `arg:"--timeout" default:"5m" help:"deadline of every wait (receive, send, reduction, checkpoint gathering); seconds, or 30s, 5m" same:"true"`
	CheckpointDir   string        `arg:"--checkpoint-dir" placeholder:"DIR" help:"write checkpoints here (always the final one)" alias:"save,output_dir,checkpoint_folder" same:"true"`
	CheckpointEvery int           `arg:"--checkpoint-every" placeholder:"K" help:"also checkpoint every K steps" alias:"save_interval,save_steps,checkpoint_interval" same:"true"`
	Resume          bool          `arg:"--resume" help:"continue from the newest complete checkpoint in --checkpoint-dir (a restart always does)" same:"true"`
	Overwrite       bool          `arg:"--overwrite" help:"a new run into a --checkpoint-dir holding another run's checkpoints removes them first (without it, or --resume, such a run is refused)" same:"true"`
	Metrics         string        `arg:"--metrics" placeholder:"FILE" help:"per-step JSON lines (rank 0)"`
	Trace           string        `arg:"--trace" placeholder:"FILE" help:"measured timeline of every rank as Chrome-trace JSON"`
	TraceSVG        string        `arg:"--trace-svg" placeholder:"FILE" help:"measured timeline as an SVG Gantt picture, of the steps --trace-steps chooses"`
	TraceSteps      string        `arg:"--trace-steps" default:"last" placeholder:"N|A-B|last|all" help:"the steps --trace-svg draws, counted from 1 as the console: one, a range, the last or all"`
	Device          string        `arg:"--device" default:"cpu" help:"where the model computes: cpu or cuda (a rank's GPU is its LOCAL_RANK modulo the visible GPUs)"`
	Precision       string        `arg:"--precision" default:"fp32" help:"fp32; tf32 (cuda: float32 products on TF32 tensor cores); or bf16, mixed precision as PyTorch's autocast: activations, their gradients and the pipeline's transfers in bfloat16, products on bfloat16 operands with float32 accumulation, weights, gradients and optimizer state in float32" ds:"bf16.enabled" alias:"mixed_precision,dtype" same:"true"`
	TF32            bool          `arg:"--tf32" help:"the same as --precision tf32"`
	Backend         string        `arg:"--backend" default:"tcp" help:"communicator of the device tensors: tcp, nccl or auto (nccl when every rank has a GPU and NCCL loads; says which it chose); host messages always go over tcp"`
	CheckTransfers  bool          `arg:"--check-transfers" help:"compare every rank's transfer shapes before every step (with nccl, which carries no shapes, they are compared before the first step anyway)" same:"true"`

	Rebalance          string  `arg:"--rebalance" default:"off" placeholder:"off|auto|every:N" help:"cut the stages again while training, from the block times the ranks measure: the blocks move between ranks (parameters and optimizer state, over the communicator) when the planner's cut predicts a step shorter by more than --rebalance-threshold; every:N checks every N steps, auto after 4 steps and then every 20" same:"true"`
	RebalanceThreshold float64 `arg:"--rebalance-threshold" default:"0.05" help:"the predicted step gain, a fraction of the step, that a rebalance needs to move blocks" same:"true"`

	Profile string          `arg:"--profile" placeholder:"FILE" help:"time every block's forward and backward passes and the transfers, and write the medians after the first step as JSON (for plan --profile and --balance profile:FILE)" same:"true"`
	batch   runconfig.Batch // what --config gave of the batch sizes (resolveWorld)
}

func (c *trainCmd) config() (ranks.TrainConfig, error) {
	m, err := c.modelFlags.config()
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	if err := tensor.CheckDevice(c.Device); err != nil {
		return ranks.TrainConfig{}, err
	}
	prec, err := models.ResolvePrecision(c.Precision, c.TF32, c.Device)
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	var schedText string
	if !slices.Contains(schedules.Names, c.Schedule) {
		b, err := os.ReadFile(c.Schedule)
		if err != nil {
			return ranks.TrainConfig{}, fmt.Errorf("--schedule %q: want one of %s, or a schedule file (text form, or PyTorch's .csv): %w", c.Schedule, strings.Join(schedules.Names, ", "), err)
		}
		schedText = string(b)
	}
	return ranks.TrainConfig{
		Model: m, Schedule: c.Schedule, ScheduleText: schedText, Virtual: c.Virtual, Micro: c.Microbatches, MicroSize: c.MicrobatchSize,
		PP: c.PP, DP: c.DP, Recompute: c.Recompute, Profile: c.Profile != "", Precision: prec,
		Cut:       func(stages int) ([]int, error) { return c.cutFlags.cut(m, stages) },
		Optimizer: c.Optimizer, LR: c.LR, MinLR: c.MinLR, Warmup: c.Warmup, WeightDecay: c.WeightDecay, Clip: c.Clip,
		Steps: c.Steps, EvalEvery: c.EvalEvery, EvalBatches: c.EvalBatches, Seed: c.Seed, Data: c.Data,
		InitFrom: c.InitFrom, Timeout: c.Timeout.D(), CheckpointDir: c.CheckpointDir, CheckpointEvery: c.CheckpointEvery, Resume: c.Resume, Overwrite: c.Overwrite,
		LRSchedule: c.LRSchedule, WarmupStart: c.WarmupStartLR, LRDecaySteps: c.LRDecaySteps,
		Beta1: c.AdamBeta1, Beta2: c.AdamBeta2, Eps: c.AdamEps, Momentum: c.Momentum,
		CheckTransfers: c.CheckTransfers,
		Zero:           c.Zero,
		Rebalance:      c.Rebalance, RebalanceThreshold: c.RebalanceThreshold,
	}, nil
}

// run is the train subcommand. As the agent, it first checks the whole
// configuration for the world it is about to launch, so that a bad flag is
// one message and exit code 2 before any rank starts; the ranks check it again
// (under --direct, srun or mpirun start them with no agent).
func (c *trainCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	f, err := c.prepareDevice(f, os.Getenv)
	if err == nil {
		err = c.precheck(f, os.Getenv)
	}
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch: train:", err)
		return 2
	}
	// The stage loop hands NCCL the device tensors as they are (ranks
	// Job.DeviceComm): collective.ChooseBackend says what else nccl needs.
	choice, err := resolveBackend(c.Backend, c.Device, true, f, os.Getenv, os.Setenv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch: train:", err)
		return 2
	}
	return runAsRanks(f, argv, stdout, stderr, c.job(stdout, choice))
}

// precheck is the agent's check of the configuration, with the world size
// when this node is the whole world (with several nodes the size is known
// only at the rendezvous: what does not depend on it is checked). Inside a
// rank, or under --direct, it checks nothing: the rank does.
func (c *trainCmd) precheck(f launch.Flags, getenv func(string) string) error {
	if f.Direct || getenv(contract.EnvRole) == contract.RoleRank {
		return nil
	}
	size := 0
	// Bad launcher flags are launch.RunAgent's to report.
	lc, err := launch.Resolve(f, getenv)
	if err == nil && lc.NNodes == 1 {
		size = lc.NProc
	}
	if err == nil && lc.Elastic() && c.CheckpointDir == "" {
		return fmt.Errorf("--nnodes %d:%d needs --checkpoint-dir: a world that re-forms goes on from the newest checkpoint", lc.MinNodes, lc.NNodes)
	}
	return c.checkWorld(size)
}

// checkWorld checks the configuration for a world of size ranks (0: not
// known, what depends on it is left out).
func (c *trainCmd) checkWorld(size int) error {
	if err := c.resolveWorld(size); err != nil {
		return err
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if _, err := cfg.Plan(size); err != nil {
		return err
	}
	if _, err := c.genFlags.options(cfg.Model.Vocab, cfg.Seed); err != nil {
		return err
	}
	if err := report.CheckMetricsAddr(c.MetricsAddr); err != nil {
		return err
	}
	if _, err := report.ParseTraceSteps(c.TraceSteps); err != nil {
		return err
	}
	outputs := []runconfig.Output{{Flag: "--metrics", Path: c.Metrics}, {Flag: "--trace", Path: c.Trace}, {Flag: "--trace-svg", Path: c.TraceSVG}, {Flag: "--profile", Path: c.Profile}}
	return runconfig.CheckFiles(cfg, size, outputs)
}

// job is the rank job the launcher runs on every rank (see runAsRanks).
// backend is the communicator of the device tensors: "tcp" or "nccl".
func (c *trainCmd) job(stdout io.Writer, backend string) func(ctx context.Context, r *ranks.Rank) error {
	if os.Getenv(contract.EnvRole) != contract.RoleRank && isTerminal(stdout) {
		// In the agent: the ranks inherit this environment.
		os.Setenv(terminalEnv, "1")
	}
	return func(ctx context.Context, r *ranks.Rank) error {
		cfg, err := c.rankConfig(r.WorldSize)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		relayout, err := c.relayout(r)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		dev, err := tensor.Open(c.Device, r.LocalRank, r.LocalWorldSize, tensor.OpenOptions{TF32: cfg.Precision == models.TF32})
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		defer dev.Close()
		be, what := dev.Backend, dev.What
		logf := func(f string, a ...any) { fmt.Fprintf(stdout, f+"\n", a...) }
		if dev.Hint != "" && r.Rank == 0 {
			logf("train: %s", dev.Hint)
		}
		pre := ranks.WatchPreemption(ctx, cfg.CheckpointDir != "", r.Rank, logf)
		defer pre.Close()
		comm, err := r.JoinTCP(ctx, collective.TCPOptions{Options: collective.Options{Timeout: cfg.Timeout}})
		if err != nil {
			return err
		}
		defer comm.Close()
		job := ranks.Job{
			Rank: r.Rank, Size: r.WorldSize, Node: r.NodeRank, Store: r.Store, Comm: comm, Restart: r.RestartCount, Compute: be, Logf: logf,
			Salvage: os.Getenv(contract.EnvElasticBase) != "", // an elastic job's
		}
		if backend == collective.BackendNCCL {
			if job.DeviceComm, err = collective.JoinNCCL(ctx, r.Store, r.Rank, r.WorldSize, r.RestartCount, be.Device(), cfg.Timeout); err != nil {
				return err
			}
			defer job.DeviceComm.Close()
		}
		what += collective.TransfersOver(backend)
		if ctx, err = c.hooks(ctx, &job, cfg, pre); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		var out *report.Run
		if job.Rank == 0 {
			if out, err = report.Open(c.reportConfig(cfg, what, job.Size, stdout)); err != nil {
				return fmt.Errorf("train: %w", err)
			}
			defer out.Close()
			job.Report, job.Event, job.OnSample = out.Step, out.Event, out.Sample
			if relayout != nil {
				job.OnResume = func(step int) { out.Relayout(relayout, step) }
			}
		}
		if c.MetricsAddr != "" {
			lctx, stopLive := context.WithCancel(ctx)
			defer stopLive()
			report.Track(lctx, &job, cfg, out, r.MaxRestarts)
		}
		res, err := ranks.Train(ctx, cfg, job)
		if err != nil {
			if job.DeviceComm != nil {
				// NCCL may still use the rank's buffers, and its
				// communicator could hang on a peer that is gone: abort
				// it before the deferred Close.
				job.DeviceComm.Abort(err)
			}
			return err
		}
		if out != nil {
			return out.Finish(res, pre.Signal())
		}
		return nil
	}
}

// rankConfig is the run's configuration on a rank of a world of size ranks:
// the flags (and --config) resolved for that world and checked.
func (c *trainCmd) rankConfig(size int) (ranks.TrainConfig, error) {
	e, err := contract.ReadElastic(os.Getenv)
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	world := size
	if e.Base > 0 {
		world = e.Base // an elastic job's batch is its first world's
	}
	if err := c.resolveWorld(world); err != nil {
		return ranks.TrainConfig{}, err
	}
	cfg, err := c.config()
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	if cfg, err = cfg.ForWorld(e, size); err != nil {
		return ranks.TrainConfig{}, err
	}
	l, err := cfg.Plan(size)
	if err != nil {
		return ranks.TrainConfig{}, err
	}
	cfg.PP, cfg.DP = l.PP, l.DP
	resolved := *c
	resolved.PP, resolved.DP, resolved.Microbatches = l.PP, l.DP, cfg.Micro
	m := cfg.Model // the preset's sizes, as the run has them
	resolved.Layers, resolved.Width, resolved.Heads, resolved.Seq, resolved.Vocab, resolved.Tied = m.Layers, m.Width, m.Heads, m.Seq, m.Vocab, m.Tied
	cfg.Effective = runconfig.Effective(trainOptions(&resolved))
	cfg.Agreed = runconfig.Agreed(trainOptions(&resolved))
	return cfg, nil
}

// hooks gives the job what it calls back: the preemption stop (with
// checkpoints, the returned context then outlives the signals, so the step in
// flight finishes and the checkpoint is written within the agent's
// --grace-period), the test-only fault hooks, the progress the agent reads,
// and the sampling options.
func (c *trainCmd) hooks(ctx context.Context, job *ranks.Job, cfg ranks.TrainConfig, pre *ranks.Preemption) (context.Context, error) {
	if cfg.CheckpointDir != "" {
		job.Stop = pre.Requested
		ctx = context.WithoutCancel(ctx)
	}
	var err error
	if job.Stall, err = ranks.FaultHooksFromEnv(os.Getenv, job.Rank, job.Restart, pre.Got()); err != nil {
		return ctx, err
	}
	job.Stall = ranks.ProgressFrom(ctx).Before(job.Stall) // what this rank does, for the agent's summary
	if job.Slow, err = ranks.SlowHookFromEnv(os.Getenv, job.Rank); err != nil {
		return ctx, err
	}
	so, err := c.genFlags.options(cfg.Model.Vocab, cfg.Seed)
	if err != nil {
		return ctx, err
	}
	so.Every = c.SampleEvery
	job.Sample = &so
	return ctx, nil
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
