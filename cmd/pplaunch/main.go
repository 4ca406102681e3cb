package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/internal/usage"
	"github.com/pplaunch/pplaunch/launch"
)

// cli is the whole command line. Launcher flags come first, then a subcommand
// or `-- PROGRAM ARGS...`.
type cli struct {
	launch.Flags
	Plan       *planCmd       `arg:"subcommand:plan" help:"generate, validate and simulate a pipeline schedule"`
	Train      *trainCmd      `arg:"subcommand:train" help:"pipeline-parallel training of a GPT (a rank job: runs under the launcher flags)"`
	Bench      *benchCmd      `arg:"subcommand:bench" help:"benchmarks: step, store, p2p, allreduce, rendezvous, scaling (listed below)"`
	Checkpoint *checkpointCmd `arg:"subcommand:checkpoint" help:"tools over saved checkpoints: compare (listed below)"`
	Devices    *devicesCmd    `arg:"subcommand:devices" help:"the NVIDIA libraries found (versions, where from) and the GPUs they see"`
	Sample     *sampleCmd     `arg:"subcommand:sample" help:"generate text from a checkpoint (one rank, or a pipeline of N ranks)"`
	Top        *topCmd        `arg:"subcommand:top" help:"watch a running job in the terminal: each rank's action, step, bubble and memory (reads train --metrics-addr)"`
}

// benchCmd groups the benchmarks.
type benchCmd struct {
	Step       *benchStepCmd       `arg:"subcommand:step" help:"time one training step (forward, backward, AdamW) in one process"`
	Store      *benchStoreCmd      `arg:"subcommand:store" help:"store round-trip latency, measured by every rank (a rank job: runs under the launcher flags)"`
	P2P        *benchP2PCmd        `arg:"subcommand:p2p" help:"point-to-point bandwidth and latency, nccl-tests style, beside a plain socket (a rank job)"`
	AllReduce  *benchAllReduceCmd  `arg:"subcommand:allreduce" help:"all-reduce time and bus bandwidth, nccl-tests style (a rank job)"`
	Rendezvous *benchRendezvousCmd `arg:"subcommand:rendezvous" help:"time to form the world with many agents joining one store on loopback"`
	Scaling    *benchScalingCmd    `arg:"subcommand:scaling" help:"a training run at several world sizes (nodes × ranks), across simulated hosts, a Slurm allocation or this machine: tokens/s, efficiency, bubble, transfer share, SVG curves (train flags after --)"`
}

func (cli) Description() string {
	return `pplaunch runs a job as ranks: a built-in job (a subcommand), or any program given
after --, with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...).

usage: pplaunch [LAUNCHER FLAGS] -- PROGRAM [ARGS...]
       pplaunch [LAUNCHER FLAGS] SUBCOMMAND [FLAGS]
`
}

func (cli) Epilogue() string {
	return `Examples:
  pplaunch --nproc 4 -- python train.py          4 ranks on this machine
  pplaunch --nproc 4 bench store                 a built-in job as 4 ranks
  pplaunch --nnodes 2 --node-rank 0 --rdzv-endpoint node0:29500 --nproc 4 -- ./worker
  srun --ntasks-per-node=1 pplaunch --nproc 4 -- ./worker   (nodes and node rank from Slurm)
  srun --ntasks-per-node=4 pplaunch --direct bench store    (each srun task is one rank)

Flags win over their environment variables, which win over Slurm's.

` + launch.TokenHelp
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses argv, runs the chosen command and returns the process exit code.
func run(argv []string, stdout, stderr io.Writer) int {
	flagArgs, program, hasProgram := splitProgram(argv)
	if hasProgram && len(program) > 0 && launcherFlagsOnly(flagArgs) {
		// A program run needs the launcher's flags alone: a parser of the
		// whole command line (every subcommand's options) costs every
		// launch about half a millisecond. Help, or a mistake, goes the
		// whole way below, for the same message.
		var f struct{ launch.Flags }
		if p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &f); err == nil && p.Parse(negativeValues(torchrunNames(flagArgs))) == nil {
			return launch.RunProgram(f.Flags, program, stdout, stderr)
		}
	}
	var c cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 2
	}
	if err := p.Parse(negativeValues(torchrunNames(flagArgs))); err != nil {
		switch {
		case errors.Is(err, arg.ErrHelp):
			p.WriteHelpForSubcommand(stdout, p.SubcommandNames()...)
			if slices.Equal(p.SubcommandNames(), []string{"bench", "scaling"}) {
				fmt.Fprint(stdout, scalingExamples)
			}
			if len(p.SubcommandNames()) == 0 {
				fmt.Fprintf(stdout, "\nbench's commands:\n%s\ncheckpoint's commands:\n%s", usage.CommandList(reflect.TypeFor[benchCmd]()), usage.CommandList(reflect.TypeFor[checkpointCmd]()))
			}
			return 0
		default:
			fmt.Fprintln(stderr, "pplaunch:", explainUsage(err, argv, p.SubcommandNames(), p.Subcommand()))
			if slices.Equal(p.SubcommandNames(), []string{"bench", "scaling"}) {
				fmt.Fprint(stderr, scalingExamples)
			}
			return 2
		}
	}
	if sub := p.Subcommand(); sub != nil && len(usage.Subcommands(reflect.TypeOf(sub))) > 0 {
		fmt.Fprintf(stderr, "pplaunch %s: give one of its commands:\n%s", strings.Join(p.SubcommandNames(), " "), usage.CommandList(reflect.TypeOf(sub)))
		return 2
	}
	if c.Train != nil && c.Train.Config != "" {
		if err := withConfigFile(&c, torchrunNames(flagArgs)); err != nil {
			fmt.Fprintln(stderr, "pplaunch: train:", err)
			return 2
		}
	}
	if c.Bench != nil && c.Bench.Scaling != nil {
		// The parser hands --nproc to the launcher's flag, before or after
		// the subcommand.
		if givenFlags(torchrunNames(flagArgs))["--nproc"] {
			c.Bench.Scaling.NProc = c.Flags.NProc
		}
		c.Bench.Scaling.train = program
		return runInProcess(stderr, func(ctx context.Context) error { return c.Bench.Scaling.run(ctx, stdout, stderr) })
	}
	if hasProgram {
		if p.Subcommand() != nil {
			fmt.Fprintf(stderr, "pplaunch: give a subcommand (%s) or -- PROGRAM, not both\n", strings.Join(p.SubcommandNames(), " "))
			return 2
		}
		if len(program) == 0 {
			fmt.Fprintln(stderr, "pplaunch: nothing after --: give the program each rank runs")
			return 2
		}
		return launch.RunProgram(c.Flags, program, stdout, stderr)
	}
	switch {
	case c.Bench != nil && c.Bench.Store != nil:
		return runAsRanks(c.Flags, argv, stdout, stderr, bench.StoreJob(c.Bench.Store.Iters, stdout))
	case c.Bench != nil && c.Bench.P2P != nil:
		c.Flags.Rank0Raw = c.Bench.P2P.JSON // its JSON lines parse as printed
		return c.Bench.P2P.run(c.Flags, argv, stdout, stderr)
	case c.Bench != nil && c.Bench.AllReduce != nil:
		c.Flags.Rank0Raw = c.Bench.AllReduce.JSON
		return c.Bench.AllReduce.run(c.Flags, argv, stdout, stderr)
	case c.Train != nil:
		return c.Train.run(c.Flags, argv, stdout, stderr)
	case c.Sample != nil:
		return c.Sample.run(c.Flags, argv, stdout, stderr)
	case c.Plan != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Plan.run(ctx, stdout, stderr) })
	case c.Bench != nil && c.Bench.Rendezvous != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Bench.Rendezvous.run(ctx, stdout) })
	case c.Bench != nil && c.Bench.Step != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Bench.Step.run(ctx, stdout, stderr) })
	case c.Checkpoint != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Checkpoint.run(ctx, stdout, stderr) })
	case c.Devices != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Devices.run(ctx, stdout, stderr) })
	case c.Top != nil:
		return runInProcess(stderr, func(ctx context.Context) error { return c.Top.run(ctx, stdout, stderr) })
	default:
		fmt.Fprintf(stderr, "pplaunch: nothing to run: give a command, or -- PROGRAM ARGS... to run a program on every rank (pplaunch --help):\n%s", usage.CommandList(reflect.TypeFor[cli]()))
		return 2
	}
}

// runInProcess runs a command that needs no ranks (plan, bench step).
func runInProcess(stderr io.Writer, f func(ctx context.Context) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f(ctx); err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		if ee := (exitError{}); errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// launcherFlagsOnly reports whether args (the part before "--") can hold
// launcher flags alone: no word names a subcommand, and none asks for help.
// (A flag's value that is a subcommand's name only sends the command line the
// whole way.)
func launcherFlagsOnly(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			return false
		}
		for _, c := range usage.Subcommands(reflect.TypeFor[cli]()) {
			if a == c.Name {
				return false
			}
		}
	}
	return true
}

// splitProgram cuts argv at the first "--": launcher flags and subcommand
// before, the program and its arguments after.
func splitProgram(argv []string) (flags, program []string, ok bool) {
	for i, a := range argv {
		if a == "--" {
			return argv[:i], argv[i+1:], true
		}
	}
	return argv, nil, false
}

// torchrunNames accepts torchrun's spellings: --nproc-per-node for --nproc,
// and underscores for dashes (--nproc_per_node, --max_restarts, ...).
func torchrunNames(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			name = strings.ReplaceAll(name, "_", "-")
			if name == "--nproc-per-node" {
				name = "--nproc"
			}
			if hasVal {
				name += "=" + val
			}
			a = name
		}
		out[i] = a
	}
	return out
}

// negativeValues joins "--flag -1" into "--flag=-1": the parser takes a
// value that begins with "-" for the next flag and says "missing value",
// where the flag's own check says what is wrong with a negative number
// ("--nproc \"-1\": want a positive number or auto").
func negativeValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && isNegativeNumber(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func isNegativeNumber(s string) bool {
	if !strings.HasPrefix(s, "-") {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
