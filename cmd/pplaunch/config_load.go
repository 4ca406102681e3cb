package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/ranks"
)

// withConfigFile re-reads the command line over train --config FILE: the
// flags' defaults, then the file, then the flags given (args, the launcher
// flags and subcommand as run parsed them). go-arg parses into the struct
// the file has filled with IgnoreDefault, so only the flags on the command
// line overwrite it.
func withConfigFile(c *cli, args []string) error {
	path := c.Train.Config
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if b, err = configJSON(path, b); err != nil {
		return err
	}
	f, err := parseRunFile(path, b)
	if err != nil {
		return err
	}
	var d cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch", IgnoreEnv: true}, &d)
	if err != nil {
		return err
	}
	if err := p.Parse([]string{"train"}); err != nil {
		return err
	}
	train := d.Train
	if err := f.apply(train, path, givenFlags(args)); err != nil {
		return err
	}
	merged := *c
	merged.Train = train
	p, err = arg.NewParser(arg.Config{Program: "pplaunch", IgnoreDefault: true}, &merged)
	if err != nil {
		return err
	}
	if err := p.Parse(args); err != nil {
		return err
	}
	*c = merged
	return nil
}

// givenFlags is the set of long flags written on the command line (their
// names only: --microbatches=8 and --microbatches 8 both give
// "--microbatches").
func givenFlags(args []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			out[name] = true
		}
	}
	return out
}

// effective is the whole configuration of the run in the file's format:
// what --config would read to run it again, printed at the start and saved
// in every checkpoint. cfg is the resolved configuration (cfg.PP set from
// the world).
func (c *trainCmd) effective(cfg ranks.TrainConfig) []byte {
	i := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	fl := func(v float64) *float64 { return &v }
	bl := func(v bool) *bool { return &v }
	total := cfg.MicroSize * cfg.Micro * cfg.DP
	m := cfg.Model
	sched := map[string]string{ranks.LRConstant: "WarmupLR", ranks.LRLinear: "WarmupDecayLR"}[cfg.LRSchedule]
	sp := &fileSchedParams{WarmupNumSteps: i(cfg.Warmup), WarmupType: s("linear"), TotalNumSteps: i(cfg.LRDecaySteps)}
	if cfg.LRDecaySteps == 0 {
		sp.TotalNumSteps = i(cfg.Steps)
	}
	if sched == "" {
		sched = "WarmupCosineLR"
		sp.WarmupMinRatio, sp.CosMinRatio = fl(ratio(cfg.WarmupStart, cfg.LR)), fl(ratio(cfg.MinLR, cfg.LR))
		if cfg.LR == 0 {
			sp.WarmupMinRatio, sp.CosMinRatio = fl(0), fl(0)
		}
	} else {
		sp.WarmupMinLR, sp.WarmupMaxLR = fl(cfg.MinLR), fl(cfg.LR)
		if sched == "WarmupLR" {
			sp.TotalNumSteps = nil
		}
	}
	op := &fileOptimParams{LR: fl(cfg.LR), WeightDecay: fl(cfg.WeightDecay)}
	otype := "AdamW"
	if cfg.Optimizer == "sgd" {
		otype, op.Momentum = "SGD", fl(cfg.Momentum)
	} else {
		op.Betas, op.Eps = &[]float64{c.AdamBeta1, c.AdamBeta2}, fl(c.AdamEps)
	}
	partition := map[string]string{"params": "parameters"}[c.Balance]
	if partition == "" {
		partition = c.Balance
	}
	interval := 0
	if cfg.Recompute {
		interval = 1
	}
	f := runFile{
		TrainBatchSize: i(total), MicroBatch: i(cfg.MicroSize), GradAccum: i(cfg.Micro), GradientClipping: fl(cfg.Clip),
		Optimizer: &fileOptimizer{Type: s(otype), Params: op},
		Scheduler: &fileScheduler{Type: s(sched), Params: sp},
		Pipeline: &filePipeline{Enabled: bl(cfg.PP > 1), NumStages: i(cfg.PP), Schedule: s(cfg.Schedule),
			PartitionMethod: s(partition), ActCkptInterval: i(interval), Virtual: i(cfg.Virtual)},
		Steps: i(cfg.Steps),
		Model: s(c.Model), Layers: i(m.Layers), Width: i(m.Width), Heads: i(m.Heads), Seq: i(m.Seq), Tied: bl(m.Tied),
		DP: i(cfg.DP), Seed: &cfg.Seed, Timeout: s(cfg.Timeout.String()),
		Eval:   &fileEval{Every: i(cfg.EvalEvery), Batches: i(cfg.EvalBatches)},
		Sample: &fileSample{Every: i(c.SampleEvery), Tokens: i(c.SampleTokens), Temperature: fl(c.Temperature), TopK: i(c.TopK)},
	}
	for _, kv := range []struct {
		dst **string
		v   string
	}{{&f.LayersPerStage, c.LayersPerStage}, {&f.Data, cfg.Data}, {&f.InitFrom, cfg.InitFrom}, {&f.Metrics, c.Metrics}, {&f.MetricsAddr, c.MetricsAddr}} {
		if kv.v != "" {
			*kv.dst = s(kv.v)
		}
	}
	if c.Prompt != "" {
		f.Sample.Prompt = s(c.Prompt)
	}
	if cfg.CheckpointDir != "" {
		f.Checkpoint = &fileCheckpoint{Dir: s(cfg.CheckpointDir), Every: i(cfg.CheckpointEvery)}
	}
	if cfg.Zero > 0 {
		f.ZeroOptimization = &fileZero{Stage: i(cfg.Zero)}
	}
	b, _ := json.Marshal(f)
	return b
}

// ratio is a/b, written with 12 significant digits when those give back a
// exactly (0.1, not 0.09999999999999999, for 0.0003/0.003).
func ratio(a, b float64) float64 {
	r := a / b
	if short, err := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 12, 64), 64); err == nil && short*b == a {
		return short
	}
	return r
}
