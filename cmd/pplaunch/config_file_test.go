package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/runconfig"
)

// parseTrain parses `pplaunch train ARGS` as run does, with --config FILE
// holding file, and resolves the batch sizes for a world of size ranks.
func parseTrain(t *testing.T, file string, size int, args ...string) (ranks.TrainConfig, error) {
	t.Helper()
	return parseTrainAs(t, "run.json", file, size, args...)
}

// parseTrainAs is parseTrain with the file named name.
func parseTrainAs(t *testing.T, name, file string, size int, args ...string) (ranks.TrainConfig, error) {
	t.Helper()
	argv := []string{"train"}
	if file != "" {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "--config", path)
	}
	argv = append(argv, args...)
	var c cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Parse(argv); err != nil {
		return ranks.TrainConfig{}, err
	}
	if c.Train.Config != "" {
		if err := withConfigFile(&c, argv); err != nil {
			return ranks.TrainConfig{}, err
		}
	}
	return c.Train.rankConfig(size)
}

const dsExample = `{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
 "gradient_accumulation_steps": 4, "gradient_clipping": 0.5,
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.8, 0.9], "eps": 1e-7, "weight_decay": 0.05}},
 "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 3, "total_num_steps": 20, "warmup_type": "linear"}},
 "pipeline": {"enabled": true, "num_stages": 2, "schedule": "gpipe", "partition_method": "parameters",
              "activation_checkpoint_interval": 1},
 "steps": 20, "seed": 9, "eval_every": 5, "eval-batches": 1}`

func TestConfigFileMapping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		size  int
		args  []string
		check func(c ranks.TrainConfig) string // "" when right
	}{
		{"DeepSpeed's keys", dsExample, 2, nil, func(c ranks.TrainConfig) string {
			if c.MicroSize != 4 || c.Micro != 4 || c.PP != 2 || c.DP != 1 || c.Clip != 0.5 || c.Schedule != "gpipe" || !c.Recompute {
				return "batch, pipeline or clipping"
			}
			if c.Optimizer != "adamw" || c.LR != 0.001 || c.Beta1 != 0.8 || c.Beta2 != 0.9 || c.Eps != 1e-7 || c.WeightDecay != 0.05 {
				return "optimizer"
			}
			// cos_min_ratio's default 0.0001 times lr.
			if c.Warmup != 3 || c.LRDecaySteps != 20 || c.LRSchedule != ranks.LRCosine || math.Abs(c.MinLR-1e-7) > 1e-20 {
				return "scheduler"
			}
			if c.Steps != 20 || c.Seed != 9 || c.EvalEvery != 5 || c.EvalBatches != 1 {
				return "project keys"
			}
			return ""
		}},
		{"flags win over the file", dsExample, 2, []string{"--steps", "3", "--seed=4", "--schedule", "1f1b"}, func(c ranks.TrainConfig) string {
			if c.Steps != 3 || c.Seed != 4 || c.Schedule != "1f1b" || c.LR != 0.001 {
				return "flags not applied over the file"
			}
			return ""
		}},
		{"DeepSpeed's bf16 block", `{"bf16": {"enabled": true}}`, 1, nil, func(c ranks.TrainConfig) string {
			if c.Precision != models.BF16 {
				return fmt.Sprintf("precision %q, want bf16", c.Precision)
			}
			return ""
		}},
		{"bf16 disabled, the flag wins", `{"bf16": {"enabled": false}}`, 1, []string{"--precision", "bf16"}, func(c ranks.TrainConfig) string {
			if c.Precision != models.BF16 {
				return fmt.Sprintf("precision %q, want bf16 from the flag", c.Precision)
			}
			return ""
		}},
		{"dp from the world and num_stages", `{"pipeline": {"num_stages": 2}, "train_batch_size": 32, "train_micro_batch_size_per_gpu": 2}`, 4,
			nil, func(c ranks.TrainConfig) string {
				if c.PP != 2 || c.DP != 2 || c.Micro != 8 {
					return "want pp 2, dp 2, accumulation 32/(2·2) = 8"
				}
				return ""
			}},
		{"total and accumulation imply the micro-batch", `{"train_batch_size": 24, "gradient_accumulation_steps": 3}`, 1, nil,
			func(c ranks.TrainConfig) string {
				if c.MicroSize != 8 || c.Micro != 3 {
					return "want micro-batch 24/3 = 8"
				}
				return ""
			}},
		{"WarmupLR", `{"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0001, "warmup_max_lr": 0.002, "warmup_num_steps": 4}}}`, 1, nil,
			func(c ranks.TrainConfig) string {
				if c.LRSchedule != ranks.LRConstant || c.LR != 0.002 || c.WarmupStart != 0.0001 || c.Warmup != 4 || c.LRAt(100) != 0.002 {
					return "want constant 0.002 after warming up from 0.0001"
				}
				return ""
			}},
		{"WarmupDecayLR", `{"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_max_lr": 0.002, "warmup_num_steps": 2, "total_num_steps": 10}}}`, 1, nil,
			func(c ranks.TrainConfig) string {
				if c.LRSchedule != ranks.LRLinear || c.LR != 0.002 || c.MinLR != 0 || c.LRAt(6) != 0.001 {
					return "want a linear decay to 0 at step 10"
				}
				return ""
			}},
		{"SGD takes torch's defaults", `{"optimizer": {"type": "SGD", "params": {"lr": 0.01}}}`, 1, nil, func(c ranks.TrainConfig) string {
			if c.Optimizer != "sgd" || c.Momentum != 0 || c.WeightDecay != 0 || c.LR != 0.01 {
				return "want plain SGD at 0.01"
			}
			return ""
		}},
		{"ZeRO stage 1", `{"zero_optimization": {"stage": 1, "reduce_scatter": true, "allgather_partitions": true, "overlap_comm": true,
			"contiguous_gradients": true, "reduce_bucket_size": 5e8, "allgather_bucket_size": 5e8}, "dp": 2}`, 2, nil, func(c ranks.TrainConfig) string {
			if c.Zero != 1 || c.DP != 2 {
				return "want --zero 1 on dp 2"
			}
			return ""
		}},
		{"ZeRO off", `{"zero_optimization": {"stage": 0}}`, 1, nil, func(c ranks.TrainConfig) string {
			if c.Zero != 0 {
				return "want --zero 0"
			}
			return ""
		}},
		{"--zero wins over the file", `{"zero_optimization": {"stage": 1}}`, 1, []string{"--zero", "0"}, func(c ranks.TrainConfig) string {
			if c.Zero != 0 {
				return "want the flag's --zero 0"
			}
			return ""
		}},
		{"pipeline off", `{"pipeline": {"enabled": false}}`, 2, nil, func(c ranks.TrainConfig) string {
			if c.PP != 1 || c.DP != 2 {
				return "want pp 1 × dp 2"
			}
			return ""
		}},
		{"the flags' names, with dashes or underscores", `{"lr": 0.01, "microbatch-size": 3, "min_lr": 1e-5, "lr_schedule": "linear",
			"gelu": "exact", "vocab": 300, "tied": true, "optimizer": "sgd", "momentum": 0.5, "pp": 1}`, 2, nil, func(c ranks.TrainConfig) string {
			if c.LR != 0.01 || c.MicroSize != 3 || c.MinLR != 1e-5 || c.LRSchedule != ranks.LRLinear || c.Model.Gelu != "exact" ||
				c.Model.Vocab != 300 || !c.Model.Tied || c.Optimizer != "sgd" || c.Momentum != 0.5 || c.PP != 1 || c.DP != 2 {
				return "a flag's name not applied (or dp not world / pp)"
			}
			return ""
		}},
		{"project keys", `{"model": "gpt-tiny", "layers": 2, "width": 32, "heads": 2, "seq": 16, "virtual": 2, "schedule": "interleaved",
			"train_iters": 7, "checkpoint_dir": "` + os.TempDir() + `", "checkpoint-every": 3, "timeout": "1m"}`, 1, nil, func(c ranks.TrainConfig) string {
			if c.Model.Layers != 2 || c.Model.Width != 32 || c.Model.Seq != 16 || c.Virtual != 2 || c.Steps != 7 || c.CheckpointEvery != 3 || c.Timeout.Minutes() != 1 {
				return "project keys not applied"
			}
			return ""
		}},
	} {
		cfg, err := parseTrain(t, tc.file, tc.size, tc.args...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if why := tc.check(cfg); why != "" {
			t.Errorf("%s: %s: got %+v", tc.name, why, cfg)
		}
		// The effective configuration, read back, is the same run.
		again, err := parseTrain(t, string(cfg.Effective), tc.size)
		if err != nil {
			t.Errorf("%s: effective config %s: %v", tc.name, cfg.Effective, err)
			continue
		}
		// total_num_steps is written out where the run left it to --steps.
		for _, c := range []*ranks.TrainConfig{&cfg, &again} {
			if c.LRDecaySteps == 0 {
				c.LRDecaySteps = c.Steps
			}
		}
		for step := range cfg.Steps + 2 {
			if a, b := again.LRAt(step), cfg.LRAt(step); a != b {
				t.Errorf("%s: the effective config %s reads back with another learning rate at step %d: %v, not %v", tc.name, cfg.Effective, step, a, b)
				break
			}
		}
		if d := ranks.DiffFlags(again.Flags(nil), cfg.Flags(nil)); len(d) > 0 {
			t.Errorf("%s: the effective config %s reads back differently: %v", tc.name, cfg.Effective, d)
		}
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		size       int
		args       []string
		want       []string // every one in the error
	}{
		{"unknown key", `{"train_batch_sise": 8}`, 1, nil, []string{"unknown key train_batch_sise", "did you mean train_batch_size"}},
		{"unknown nested key", `{"optimizer": {"type": "AdamW", "params": {"weight_decai": 0.1}}}`, 1, nil,
			[]string{"optimizer.params.weight_decai", "optimizer.params.weight_decay"}},
		{"unknown pipeline key", `{"pipeline": {"num_stage": 2}}`, 1, nil, []string{"pipeline.num_stage", "did you mean pipeline.num_stages"}},
		{"unsupported DeepSpeed key", `{"fp16": {"enabled": true}}`, 1, nil, []string{"fp16 is not supported", "bf16.enabled"}},
		{"bf16 gradient exchange", `{"bf16": {"enabled": true}, "communication_data_type": "bf16"}`, 1, nil,
			[]string{"communication_data_type is not supported", "exchange is float32", "remove it"}},
		{"bf16 gradient accumulation", `{"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "bf16"}}`, 1, nil,
			[]string{"data_types is not supported", "accumulate and are exchanged in float32", "remove it"}},
		{"ZeRO stage 2", `{"zero_optimization": {"stage": 2}}`, 1, nil, []string{"zero_optimization.stage 2", "pipelines allow only stage 0 (off) or 1"}},
		{"ZeRO stage 3 as a flag", `{}`, 1, []string{"--zero", "3"}, []string{"--zero 3", "pipelines allow only stage 0 (off) or 1"}},
		{"ZeRO offload", `{"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}}}`, 1, nil,
			[]string{"zero_optimization.offload_optimizer is not supported", "no offload"}},
		{"unknown ZeRO key", `{"zero_optimization": {"stgae": 1}}`, 1, nil, []string{"zero_optimization.stgae", "did you mean zero_optimization.stage"}},
		{"wrong type", `{"steps": "ten"}`, 1, nil, []string{"steps", `"ten"`, "a whole number"}},
		{"not an object", `[1, 2]`, 1, nil, []string{"not a JSON object"}},
		{"batch inconsistent", `{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}`, 1, nil,
			[]string{"train_batch_size 16", "train_micro_batch_size_per_gpu 4", "gradient_accumulation_steps 2", "dp 1", "= 8"}},
		{"batch inconsistent with a flag", `{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4}`, 1, []string{"--microbatches", "2"},
			[]string{"train_batch_size 16", "--microbatches 2"}},
		{"batch inconsistent with dp", `{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
			"pipeline": {"num_stages": 1}}`, 2, nil, []string{"dp 2", "= 32"}},
		{"batch not divisible", `{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4}`, 1, nil,
			[]string{"train_batch_size 10 is not a multiple of train_micro_batch_size_per_gpu 4"}},
		{"stages do not divide", `{"pipeline": {"num_stages": 3}}`, 4, nil, []string{"--pp 3", "world of 4"}},
		{"steps twice", `{"steps": 3, "train_iters": 4}`, 1, nil, []string{"steps 3 and train_iters 4"}},
		{"schedule twice", `{"schedule": "gpipe", "pipeline": {"schedule": "1f1b"}}`, 1, nil, []string{"schedule", "pipeline.schedule", "give one"}},
		{"optimizer type", `{"optimizer": {"type": "Lamb"}}`, 1, nil, []string{`optimizer.type "Lamb"`, "AdamW"}},
		{"SGD without lr", `{"optimizer": {"type": "SGD"}}`, 1, nil, []string{"lr is required"}},
		{"SGD with betas", `{"optimizer": {"type": "SGD", "params": {"lr": 1, "betas": [0.9, 0.9]}}}`, 1, nil, []string{"Adam's"}},
		{"betas", `{"optimizer": {"type": "AdamW", "params": {"betas": [0.9]}}}`, 1, nil, []string{"betas [0.9]", "two numbers"}},
		{"scheduler type", `{"scheduler": {"type": "OneCycle"}}`, 1, nil, []string{`scheduler.type "OneCycle"`}},
		{"another scheduler's parameter", `{"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 9, "warmup_max_lr": 1}}}`, 1, nil,
			[]string{"warmup_max_lr is not a parameter of WarmupCosineLR"}},
		{"log warmup", `{"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "log"}}}`, 1, nil, []string{`warmup_type "log"`, "linear"}},
		{"total steps missing", `{"scheduler": {"type": "WarmupDecayLR"}}`, 1, nil, []string{"total_num_steps is required"}},
		{"partition", `{"pipeline": {"partition_method": "type:Embedding"}}`, 1, nil, []string{"type:Embedding", "TransformerBlock"}},
		{"another tool's name", `{"learning_rate": 0.01}`, 1, nil, []string{"unknown key learning_rate", "did you mean lr (DeepSpeed: optimizer.params.lr)?"}},
		{"a DeepSpeed key's last part", `{"num_stages": 2}`, 1, nil, []string{"did you mean pp (DeepSpeed: pipeline.num_stages)?"}},
		{"a misspelt flag name", `{"microbatch_sise": 2}`, 1, nil, []string{"did you mean microbatch_size (DeepSpeed: train_micro_batch_size_per_gpu)?"}},
		{"a flag's name and its DeepSpeed key", `{"lr": 0.01, "optimizer": {"type": "AdamW", "params": {"lr": 0.02}}}`, 1, nil,
			[]string{"lr 0.01 and optimizer.params.lr 0.02: give one"}},
		{"a group of the old form", `{"eval": {"every": 5}}`, 1, nil, []string{"unknown key eval", "eval_every, eval_batches"}},
		{"a flag's name of the wrong type", `{"lr": "fast"}`, 1, nil, []string{"lr", `"fast"`, "a number"}},
		{"bad value reaches the flag check", `{"optimizer": {"type": "AdamW", "params": {"betas": [1.5, 0.9]}}}`, 1, nil, []string{"--adam-beta1 1.5"}},
	} {
		_, err := parseTrain(t, tc.file, tc.size, tc.args...)
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want %q in it", tc.name, err, w)
			}
		}
	}
}

// TestOptionTable: the train option table's ds: tags are DeepSpeed keys
// the file reads, and every option the translation sets is in it.
func TestOptionTable(t *testing.T) {
	if err := runconfig.CheckTable(trainOptions(&trainCmd{})); err != nil {
		t.Error(err)
	}
}

// TestConfigYAML: the YAML example is the JSON example; YAML's errors and
// the key checks reach the user the same way.
func TestConfigYAML(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	j, err := parseTrainAs(t, "run.json", read("deepspeed.json"), 2)
	if err != nil {
		t.Fatal(err)
	}
	y, err := parseTrainAs(t, "run.yaml", read("deepspeed.yaml"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := ranks.DiffFlags(y.Flags(nil), j.Flags(nil)); len(d) > 0 {
		t.Errorf("examples/deepspeed.yaml differs from deepspeed.json: %v", d)
	}
	for _, tc := range []struct{ file, want string }{
		{"steps: [1\n", "run.yml"},
		{"pipeline:\n  num_stagez: 2\n", "did you mean pipeline.num_stages"},
		{"1: 2\n", "run.yml"},
	} {
		if _, err := parseTrainAs(t, "run.yml", tc.file, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q in it", tc.file, err, tc.want)
		}
	}
}

// TestDPFromPP: --pp alone takes dp = world / pp, as --dp alone takes
// pp = world / dp.
func TestDPFromPP(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		pp, dp int
	}{{[]string{"--pp", "2"}, 2, 2}, {[]string{"--dp", "2"}, 2, 2}, {nil, 4, 1}, {[]string{"--pp", "4"}, 4, 1}} {
		cfg, err := parseTrain(t, "", 4, tc.args...)
		if err != nil || cfg.PP != tc.pp || cfg.DP != tc.dp {
			t.Errorf("%q in a world of 4: pp %d × dp %d (%v), want %d × %d", tc.args, cfg.PP, cfg.DP, err, tc.pp, tc.dp)
		}
	}
}
