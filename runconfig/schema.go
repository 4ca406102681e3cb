package runconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// runFile is DeepSpeed's part of what `pplaunch train --config FILE` reads
// (batch sizes, clipping, optimizer, scheduler, pipeline); the rest of the
// file's keys are the options' own names (Options). Every key is
// optional: a missing key leaves the flag's default, a flag given on the
// command line wins over the file. A pointer says whether the key was there.
type runFile struct {
	TrainBatchSize   *int           `json:"train_batch_size,omitempty"`
	MicroBatch       *int           `json:"train_micro_batch_size_per_gpu,omitempty"`
	GradAccum        *int           `json:"gradient_accumulation_steps,omitempty"`
	GradientClipping *float64       `json:"gradient_clipping,omitempty"`
	Optimizer        *fileOptimizer `json:"optimizer,omitempty"`
	Scheduler        *fileScheduler `json:"scheduler,omitempty"`
	Pipeline         *filePipeline  `json:"pipeline,omitempty"`
	ZeroOptimization *fileZero      `json:"zero_optimization,omitempty"`
	TrainIters       *int           `json:"train_iters,omitempty"` // Megatron's name for --steps
	BF16             *fileEnabled   `json:"bf16,omitempty"`        // --precision bf16
}

// fileEnabled is a DeepSpeed block that only switches something on or off
// (bf16).
type fileEnabled struct {
	Enabled *bool `json:"enabled,omitempty"`
}

type fileOptimizer struct {
	Type   *string          `json:"type,omitempty"`
	Params *fileOptimParams `json:"params,omitempty"`
}

type fileOptimParams struct {
	LR          *float64   `json:"lr,omitempty"`
	Betas       *[]float64 `json:"betas,omitempty"`
	Eps         *float64   `json:"eps,omitempty"`
	WeightDecay *float64   `json:"weight_decay,omitempty"`
	Momentum    *float64   `json:"momentum,omitempty"`
	AdamWMode   *bool      `json:"adam_w_mode,omitempty"`
}

type fileScheduler struct {
	Type   *string          `json:"type,omitempty"`
	Params *fileSchedParams `json:"params,omitempty"`
}

// fileSchedParams is the union of the three schedulers' parameters;
// schedulerParams says which belong to which.
type fileSchedParams struct {
	WarmupMinLR    *float64 `json:"warmup_min_lr,omitempty"`
	WarmupMaxLR    *float64 `json:"warmup_max_lr,omitempty"`
	WarmupNumSteps *int     `json:"warmup_num_steps,omitempty"`
	WarmupType     *string  `json:"warmup_type,omitempty"`
	TotalNumSteps  *int     `json:"total_num_steps,omitempty"`
	WarmupMinRatio *float64 `json:"warmup_min_ratio,omitempty"`
	CosMinRatio    *float64 `json:"cos_min_ratio,omitempty"`
	LastBatchIter  *int     `json:"last_batch_iteration,omitempty"`
}

type filePipeline struct {
	Enabled         *bool   `json:"enabled,omitempty"`
	NumStages       *int    `json:"num_stages,omitempty"`
	Schedule        *string `json:"schedule,omitempty"`
	PartitionMethod *string `json:"partition_method,omitempty"`
	ActCkptInterval *int    `json:"activation_checkpoint_interval,omitempty"`
	Virtual         *int    `json:"virtual,omitempty"`
}

// fileZero is DeepSpeed's zero_optimization block: stage sets --zero; the
// bucket sizes and overlap switches tune DeepSpeed's own exchange and change
// no number (here each stage's exchange is one reduce-scatter and one
// all-gather), so they are accepted and have no effect.
type fileZero struct {
	Stage               *int     `json:"stage,omitempty"`
	ReduceScatter       *bool    `json:"reduce_scatter,omitempty"`
	AllgatherPartitions *bool    `json:"allgather_partitions,omitempty"`
	OverlapComm         *bool    `json:"overlap_comm,omitempty"`
	ContiguousGradients *bool    `json:"contiguous_gradients,omitempty"`
	ReduceBucketSize    *float64 `json:"reduce_bucket_size,omitempty"`
	AllgatherBucketSize *float64 `json:"allgather_bucket_size,omitempty"`
}

// runFileKeys are runFile's top-level keys.
func runFileKeys() []string {
	var out []string
	t := reflect.TypeFor[runFile]()
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, k)
	}
	return out
}

// unsupportedKeys are DeepSpeed keys a DeepSpeed user may well have that
// pplaunch train does not do, with what to do instead.
var unsupportedKeys = map[string]string{
	"fp16":                       "mixed precision is bfloat16 here: use bf16.enabled (--precision bf16)",
	"amp":                        "mixed precision is bfloat16 here: use bf16.enabled (--precision bf16)",
	"bf16.immediate_grad_update": "gradients accumulate in float32 over the micro-batches: remove it",
	"steps_per_print":            "every step is printed (or every twentieth of the run on a terminal): remove it",
	"wall_clock_breakdown":       "the step line and --trace show the time of every action: remove it",
	"activation_checkpointing":   "use pipeline.activation_checkpoint_interval (or --recompute)",
	"tensorboard":                "use --metrics (JSON lines) or --metrics-addr (Prometheus)",
	"wandb":                      "use --metrics (JSON lines) or --metrics-addr (Prometheus)",

	// A bfloat16 gradient exchange (with float32 accumulation) would halve the
	// data-parallel bytes but make dp > 1 round where one process does not.
	"communication_data_type": "the data-parallel gradient exchange is float32 in every precision (a bfloat16 exchange would round each replica's gradients and part from one process's bits; bf16.enabled halves the pipeline's transfers only): remove it",
	"data_types":              "gradients accumulate and are exchanged in float32 in every precision (bf16.enabled keeps activations in bfloat16, never gradients of weights): remove it",

	"zero_optimization.offload_optimizer": "the optimizer state stays on the device (no offload): remove it",
	"zero_optimization.offload_param":     "the parameters stay on the device (no offload): remove it",
}

// parseRunFile decodes a config file, refusing unknown keys (naming the
// nearest known one) and values of the wrong type (naming the key).
func parseRunFile(name string, b []byte) (*runFile, error) {
	f := &runFile{}
	if err := decodeStrict(name, "", bytes.TrimSpace(b), reflect.ValueOf(f).Elem()); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeStrict decodes raw into v, walking objects key by key so that an
// unknown key or a bad value is reported with its path (pipeline.num_stages).
func decodeStrict(file, path string, raw []byte, v reflect.Value) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %s: %s, want %s", file, path, raw, KindName(v.Type()))
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		where := path
		if where == "" {
			where = "the file"
		}
		if err != nil && path == "" {
			return fmt.Errorf("%s: not a JSON object: %v", file, err)
		}
		return fmt.Errorf("%s: %s: want a JSON object, got %.40s", file, where, raw)
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		fields[tag] = i
		names = append(names, tag)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first problem reported is the same every time
	for _, k := range keys {
		key := join(path, k)
		i, ok := fields[k]
		if !ok {
			if why, ok := unsupportedKeys[key]; ok {
				return fmt.Errorf("%s: %s is not supported: %s", file, key, why)
			}
			return fmt.Errorf("%s: unknown key %s (did you mean %s?)", file, key, join(path, Nearest(k, names)))
		}
		if err := decodeStrict(file, key, obj[k], v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
