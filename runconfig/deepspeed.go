package runconfig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/ranks"
)

// optimizerTypes maps DeepSpeed's optimizer names onto --optimizer.
// DeepSpeed's "Adam" is AdamW unless adam_w_mode is false.
var optimizerTypes = map[string]string{"adamw": "adamw", "adam": "adamw", "sgd": "sgd"}

// schedulerParams lists each DeepSpeed scheduler's parameters (the keys of
// fileSchedParams it accepts).
var schedulerParams = map[string][]string{
	"WarmupLR":       {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"},
	"WarmupDecayLR":  {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration", "total_num_steps"},
	"WarmupCosineLR": {"warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type", "last_batch_iteration", "total_num_steps"},
}

// translated are the DeepSpeed keys of the table's ds: tags whose meaning
// the code below translates (a default that depends on another key, a
// check, another unit); every other ds: key sets its option directly.
var translated = []string{
	"pipeline.num_stages", "pipeline.activation_checkpoint_interval", "pipeline.partition_method",
	"optimizer.type", "optimizer.params.lr", "optimizer.params.betas", "optimizer.params.eps",
	"optimizer.params.weight_decay", "optimizer.params.momentum",
	"scheduler.type", "scheduler.params.total_num_steps", "scheduler.params.warmup_num_steps",
	"zero_optimization.stage", "bf16.enabled",
}

// apply sets the options from the DeepSpeed keys the file has (ds, its
// DeepSpeed part as decoded JSON); given says which flags the command line
// gave (they are applied after, and win). It returns what the file and the
// flags gave of the batch sizes.
func (f *runFile) apply(t table, opts []Option, ds map[string]json.RawMessage, name string, given map[string]bool) (Batch, error) {
	for _, o := range opts {
		if o.DS == "" || slices.Contains(translated, o.DS) {
			continue
		}
		if raw, ok := lookupPath(ds, o.DS); ok {
			if err := o.set(name, o.DS, raw); err != nil {
				return Batch{}, err
			}
		}
	}
	if f.BF16 != nil && f.BF16.Enabled != nil {
		p := "fp32"
		if *f.BF16.Enabled {
			p = "bf16"
		}
		t.set("precision", p)
	}
	b := Batch{
		Micro: f.MicroBatch != nil || given["--microbatch-size"], MicroFlag: given["--microbatch-size"],
		Accum: f.GradAccum != nil || given["--microbatches"], AccumFlag: given["--microbatches"],
	}
	if f.TrainBatchSize != nil {
		if *f.TrainBatchSize < 1 {
			return b, fmt.Errorf("%s: train_batch_size %d: want at least 1", name, *f.TrainBatchSize)
		}
		b.Total = *f.TrainBatchSize
	}
	if err := f.applyPipeline(t, name); err != nil {
		return b, err
	}
	if err := f.applyOptimizer(t, name); err != nil {
		return b, err
	}
	if z := f.ZeroOptimization; z != nil && z.Stage != nil {
		if *z.Stage != 0 && *z.Stage != 1 {
			return b, fmt.Errorf("%s: zero_optimization.stage %d: pipelines allow only stage 0 (off) or 1 (optimizer state sharded over the data-parallel replicas), as DeepSpeed's do: use 1", name, *z.Stage)
		}
		t.set("zero", *z.Stage)
	}
	return b, f.applyScheduler(t, name)
}

func (f *runFile) applyPipeline(t table, name string) error {
	p := f.Pipeline
	if p == nil {
		return nil
	}
	if p.Enabled != nil && !*p.Enabled {
		if p.NumStages != nil && *p.NumStages != 1 {
			return fmt.Errorf("%s: pipeline.enabled false with pipeline.num_stages %d: remove one", name, *p.NumStages)
		}
		t.set("pp", 1)
	} else if p.NumStages != nil {
		if *p.NumStages < 1 {
			return fmt.Errorf("%s: pipeline.num_stages %d: want at least 1", name, *p.NumStages)
		}
		t.set("pp", *p.NumStages)
	}
	if p.PartitionMethod != nil {
		b, err := partitionBalance(*p.PartitionMethod)
		if err != nil {
			return fmt.Errorf("%s: pipeline.partition_method: %w", name, err)
		}
		t.set("balance", b)
	}
	if p.ActCkptInterval != nil {
		if *p.ActCkptInterval < 0 {
			return fmt.Errorf("%s: pipeline.activation_checkpoint_interval %d: want 0 (off) or more", name, *p.ActCkptInterval)
		}
		// A stage recomputes its whole forward from its input: any positive
		// interval means recomputation, at the stage's granularity.
		t.set("recompute", *p.ActCkptInterval > 0)
	}
	return nil
}

// partitionBalance maps DeepSpeed's partition_method onto --balance:
// "parameters" and "uniform" directly; "type:REGEX" balances the layers
// whose class matches, which here are the transformer blocks (all alike:
// uniform) when REGEX matches "transformer" or "block"; "flops" is ours.
func partitionBalance(m string) (string, error) {
	switch strings.ToLower(m) {
	case "parameters", "params":
		return models.BalanceParams, nil
	case "uniform":
		return models.BalanceUniform, nil
	case "flops":
		return models.BalanceFLOPs, nil
	}
	if re, ok := strings.CutPrefix(m, "type:"); ok {
		r, err := regexp.Compile("(?i)" + re)
		if err != nil {
			return "", fmt.Errorf("%q: %v", m, err)
		}
		if r.MatchString("TransformerBlock") {
			return models.BalanceUniform, nil
		}
		return "", fmt.Errorf("%q matches none of this model's layers: the blocks are TransformerBlock (e.g. \"type:transformer\")", m)
	}
	return "", fmt.Errorf("%q: want parameters, uniform, type:REGEX or flops", m)
}

// applyOptimizer maps DeepSpeed's optimizer block. A missing parameter takes
// DeepSpeed's default for that optimizer (FusedAdam: lr 1e-3, betas 0.9,
// 0.999, eps 1e-8, weight decay 0; torch.optim.SGD: momentum 0, weight
// decay 0, lr required), not the flags' defaults, so that a DeepSpeed file
// trains as it would there.
func (f *runFile) applyOptimizer(t table, name string) error {
	o := f.Optimizer
	if o == nil {
		return nil
	}
	if o.Type == nil {
		return fmt.Errorf("%s: optimizer.type missing: want AdamW or SGD", name)
	}
	kind, ok := optimizerTypes[strings.ToLower(*o.Type)]
	if !ok {
		return fmt.Errorf("%s: optimizer.type %q: want AdamW, Adam or SGD", name, *o.Type)
	}
	p := o.Params
	if p == nil {
		p = &fileOptimParams{}
	}
	t.set("optimizer", kind)
	t.set("weight_decay", 0)
	if p.WeightDecay != nil {
		t.set("weight_decay", *p.WeightDecay)
	}
	switch kind {
	case "adamw":
		if p.Momentum != nil {
			return fmt.Errorf("%s: optimizer.params.momentum is SGD's: AdamW has betas", name)
		}
		if p.AdamWMode != nil && !*p.AdamWMode {
			return fmt.Errorf("%s: optimizer.params.adam_w_mode false (Adam with L2 decay) is not implemented: use AdamW", name)
		}
		beta1, beta2, eps := 0.9, 0.999, 1e-8
		if b := p.Betas; b != nil {
			if len(*b) != 2 {
				return fmt.Errorf("%s: optimizer.params.betas %v: want two numbers", name, *b)
			}
			beta1, beta2 = (*b)[0], (*b)[1]
		}
		if p.Eps != nil {
			eps = *p.Eps
		}
		t.set("lr", 1e-3)
		t.set("adam_beta1", beta1)
		t.set("adam_beta2", beta2)
		t.set("adam_eps", eps)
	case "sgd":
		if p.Betas != nil || p.Eps != nil || p.AdamWMode != nil {
			return fmt.Errorf("%s: optimizer.params betas, eps and adam_w_mode are Adam's, not SGD's", name)
		}
		if p.LR == nil {
			return fmt.Errorf("%s: optimizer.params.lr is required with SGD", name)
		}
		t.set("momentum", 0)
		if p.Momentum != nil {
			t.set("momentum", *p.Momentum)
		}
	}
	if p.LR != nil {
		t.set("lr", *p.LR)
	}
	if t.float("min_lr") > t.float("lr") {
		t.set("min_lr", t.float("lr")) // the flags' --min-lr must not exceed a smaller file lr
	}
	return nil
}

// applyScheduler maps DeepSpeed's three warmup schedulers onto the
// learning-rate flags. Warmup is linear: DeepSpeed's default warmup_type is
// "log", so a file without warmup_type warms up linearly here (the printed
// configuration says so) and one asking for "log" is refused.
func (f *runFile) applyScheduler(t table, name string) error {
	s := f.Scheduler
	if s == nil {
		return nil
	}
	if s.Type == nil {
		return fmt.Errorf("%s: scheduler.type missing: want WarmupLR, WarmupDecayLR or WarmupCosineLR", name)
	}
	allowed, ok := schedulerParams[*s.Type]
	if !ok {
		return fmt.Errorf("%s: scheduler.type %q: want WarmupLR, WarmupDecayLR or WarmupCosineLR", name, *s.Type)
	}
	p := s.Params
	if p == nil {
		p = &fileSchedParams{}
	}
	for _, k := range presentKeys(p) {
		if !strings.Contains(" "+strings.Join(allowed, " ")+" ", " "+k+" ") {
			return fmt.Errorf("%s: scheduler.params.%s is not a parameter of %s (it takes %s)", name, k, *s.Type, strings.Join(allowed, ", "))
		}
	}
	if p.WarmupType != nil && *p.WarmupType != "linear" {
		return fmt.Errorf("%s: scheduler.params.warmup_type %q: only \"linear\" warmup is implemented", name, *p.WarmupType)
	}
	if p.LastBatchIter != nil && *p.LastBatchIter != -1 {
		return fmt.Errorf("%s: scheduler.params.last_batch_iteration %d: resume with --resume, which restores the step", name, *p.LastBatchIter)
	}
	t.set("warmup", 1000)
	if p.WarmupNumSteps != nil {
		t.set("warmup", *p.WarmupNumSteps)
	}
	t.set("lr_decay_steps", 0)
	if p.TotalNumSteps != nil {
		t.set("lr_decay_steps", *p.TotalNumSteps)
	} else if *s.Type != "WarmupLR" {
		return fmt.Errorf("%s: scheduler.params.total_num_steps is required with %s", name, *s.Type)
	}
	get := func(v *float64, def float64) float64 {
		if v != nil {
			return *v
		}
		return def
	}
	switch lr := t.float("lr"); *s.Type {
	case "WarmupCosineLR": // ratios of the optimizer's lr
		t.set("lr_schedule", ranks.LRCosine)
		t.set("warmup_start_lr", get(p.WarmupMinRatio, 0)*lr)
		t.set("min_lr", get(p.CosMinRatio, 0.0001)*lr)
	default: // the scheduler sets the rates itself
		sched := ranks.LRConstant
		if *s.Type == "WarmupDecayLR" {
			sched = ranks.LRLinear
		}
		t.set("lr_schedule", sched)
		t.set("lr", get(p.WarmupMaxLR, 0.001))
		t.set("min_lr", get(p.WarmupMinLR, 0))
		t.set("warmup_start_lr", get(p.WarmupMinLR, 0))
	}
	return nil
}

// presentKeys lists the JSON names of v's non-nil pointer fields.
func presentKeys(v *fileSchedParams) []string {
	var out []string
	for _, kv := range []struct {
		k  string
		ok bool
	}{
		{"warmup_min_lr", v.WarmupMinLR != nil}, {"warmup_max_lr", v.WarmupMaxLR != nil}, {"warmup_num_steps", v.WarmupNumSteps != nil},
		{"warmup_type", v.WarmupType != nil}, {"total_num_steps", v.TotalNumSteps != nil}, {"warmup_min_ratio", v.WarmupMinRatio != nil},
		{"cos_min_ratio", v.CosMinRatio != nil}, {"last_batch_iteration", v.LastBatchIter != nil},
	} {
		if kv.ok {
			out = append(out, kv.k)
		}
	}
	return out
}
