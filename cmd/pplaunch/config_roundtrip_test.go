package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/runconfig"
)

// roundTrip gives every option of the table a value other than its default,
// with what else the value needs (args), the world it runs in, and, where a
// run here cannot show it, why only the parsed configuration is compared.
// "DIR" in args is the test's own directory. A new option without a row
// fails TestOptionsRoundTrip: add one.
var roundTrip = map[string]struct {
	args  []string
	world int
	noRun string // why the run is not compared ("": it is)
}{
	"--model":            {args: []string{"--model", "mlp-tiny"}},
	"--layers":           {args: []string{"--layers", "3"}},
	"--width":            {args: []string{"--width", "48"}},
	"--heads":            {args: []string{"--heads", "4"}},
	"--seq":              {args: []string{"--seq", "24"}},
	"--tied":             {args: []string{"--tied"}},
	"--vocab":            {args: []string{"--vocab", "300"}},
	"--gelu":             {args: []string{"--gelu", "exact"}},
	"--layers-per-stage": {args: []string{"--pp", "2", "--layers-per-stage", "1,3"}, world: 2},
	"--balance":          {args: []string{"--pp", "2", "--balance", "params"}, world: 2},
	"--lr-schedule":      {args: []string{"--lr-schedule", "linear", "--warmup", "1"}},
	"--warmup-start-lr":  {args: []string{"--warmup-start-lr", "0.001"}},
	"--lr-decay-steps":   {args: []string{"--lr-decay-steps", "3", "--warmup", "1"}},
	"--adam-beta1":       {args: []string{"--adam-beta1", "0.8"}},
	"--adam-beta2":       {args: []string{"--adam-beta2", "0.99"}},
	"--adam-eps":         {args: []string{"--adam-eps", "1e-3"}},
	"--momentum":         {args: []string{"--optimizer", "sgd", "--momentum", "0.5"}},
	"--sample-tokens":    {args: []string{"--sample-tokens", "4"}},
	"--temperature":      {args: []string{"--sample-tokens", "4", "--temperature", "0.5"}},
	"--top-k":            {args: []string{"--sample-tokens", "4", "--top-k", "5"}},
	"--prompt":           {args: []string{"--sample-tokens", "4", "--prompt", "ab"}},
	"--sample-every":     {args: []string{"--sample-tokens", "4", "--sample-every", "1"}},
	"--metrics-addr":     {args: []string{"--metrics-addr", "127.0.0.1:0"}},
	"--init-from":        {args: []string{"--init-from", "DIR/weights.safetensors"}, noRun: "needs a weights file; only the parsed configuration is compared"},
	"--schedule":         {args: []string{"--pp", "2", "--schedule", "gpipe"}, world: 2},
	"--virtual":          {args: []string{"--pp", "2", "--schedule", "interleaved", "--virtual", "2"}, world: 2},
	"--microbatches":     {args: []string{"--microbatches", "4"}},
	"--microbatch-size":  {args: []string{"--microbatch-size", "3"}},
	"--pp":               {args: []string{"--pp", "2"}, world: 2},
	"--dp":               {args: []string{"--dp", "2"}, world: 2},
	"--recompute":        {args: []string{"--recompute"}},
	"--zero":             {args: []string{"--dp", "2", "--zero", "1"}, world: 2},
	"--optimizer":        {args: []string{"--optimizer", "sgd"}},
	"--lr":               {args: []string{"--lr", "0.01"}},
	"--min-lr":           {args: []string{"--min-lr", "0.00001"}},
	"--warmup":           {args: []string{"--warmup", "1"}},
	"--weight-decay":     {args: []string{"--weight-decay", "0.01"}},
	"--clip":             {args: []string{"--clip", "0.05"}},
	"--steps":            {args: []string{"--steps", "3"}},
	"--eval-every":       {args: []string{"--eval-every", "1"}},
	"--eval-batches":     {args: []string{"--eval-every", "1", "--eval-batches", "2"}},
	"--seed":             {args: []string{"--seed", "7"}},
	"--data":             {args: []string{"--data", "DIR/corpus.txt"}},
	"--timeout":          {args: []string{"--timeout", "2m"}},
	"--checkpoint-dir":   {args: []string{"--checkpoint-dir", "DIR/ckpt", "--overwrite"}},
	"--checkpoint-every": {args: []string{"--checkpoint-dir", "DIR/ckpt", "--overwrite", "--checkpoint-every", "1"}},
	"--resume":           {args: []string{"--checkpoint-dir", "DIR", "--resume"}, noRun: "the second run resumes from the first one's checkpoint, as it should"},
	"--overwrite":        {args: []string{"--checkpoint-dir", "DIR/ckpt", "--overwrite"}},
	"--metrics":          {args: []string{"--metrics", "DIR/m.jsonl"}, noRun: "every run of this test writes --metrics, which it reads the losses from"},
	"--trace":            {args: []string{"--trace", "DIR/trace.json"}},
	"--trace-svg":        {args: []string{"--trace-svg", "DIR/trace.svg"}},
	"--trace-steps":      {args: []string{"--trace-svg", "DIR/trace.svg", "--trace-steps", "all"}},
	"--device":           {args: []string{"--device", "cuda"}, noRun: "needs a GPU"},
	"--precision":        {args: []string{"--precision", "bf16"}},
	"--tf32":             {args: []string{"--device", "cuda", "--tf32"}, noRun: "needs a GPU"},
	"--backend":          {args: []string{"--backend", "auto"}},
	"--check-transfers":  {args: []string{"--check-transfers"}},
	"--profile":          {args: []string{"--profile", "DIR/profile.json"}},

	// Rebalancing checks the cut after every step; a move would not change the numbers.
	"--rebalance":           {args: []string{"--pp", "2", "--rebalance", "every:1"}, world: 2},
	"--rebalance-threshold": {args: []string{"--pp", "2", "--rebalance", "every:1", "--rebalance-threshold", "0.2"}, world: 2},
}

// roundTripBase is a small model for the runs (the option's own flags come
// after, and win).
var roundTripBase = []string{"--layers", "4", "--width", "32", "--heads", "2", "--seq", "16",
	"--microbatches", "2", "--microbatch-size", "2", "--steps", "2", "--eval-every", "0", "--eval-batches", "1",
	"--sample-tokens", "0", "--timeout", "60s"}

func roundTripArgs(t *testing.T, flag string) ([]string, int) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := roundTrip[flag]
	args := append([]string{}, roundTripBase...)
	for _, a := range rt.args {
		args = append(args, strings.ReplaceAll(a, "DIR", dir))
	}
	return args, max(rt.world, 1)
}

// parsedEffective parses train args for a world of size ranks and returns
// the effective configuration as a map.
func parsedEffective(t *testing.T, file string, size int, args ...string) (ranks.TrainConfig, map[string]any) {
	t.Helper()
	cfg, err := parseTrain(t, file, size, args...)
	if err != nil {
		t.Fatalf("train %s: %v", strings.Join(args, " "), err)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg.Effective, &m); err != nil {
		t.Fatalf("effective config %s: %v", cfg.Effective, err)
	}
	return cfg, m
}

// TestOptionsRoundTrip: for every option of the table, the effective
// configuration of a run given that option reads back (--config) as the
// same configuration, and it holds the option's value (not the default).
func TestOptionsRoundTrip(t *testing.T) {
	var defaults trainCmd
	_, def := parsedEffective(t, "", 1, roundTripBase...)
	for _, o := range trainOptions(&defaults) {
		if _, ok := roundTrip[o.Flag]; !ok {
			t.Errorf("option %s has no row in roundTrip: give it a value other than its default", o.Flag)
			continue
		}
		if _, ok := def[o.Key]; !ok {
			t.Errorf("option %s (%s) is missing from the effective config %v", o.Flag, o.Key, def)
		}
		args, world := roundTripArgs(t, o.Flag)
		cfg, got := parsedEffective(t, "", world, args...)
		if reflectEqual(got[o.Key], def[o.Key]) {
			t.Errorf("%s: the effective config has %s %v, the default: the row does not exercise it", o.Flag, o.Key, got[o.Key])
		}
		again, _ := parsedEffective(t, string(cfg.Effective), world)
		if string(again.Effective) != string(cfg.Effective) {
			t.Errorf("%s: the effective config\n%s\nreads back as\n%s", o.Flag, cfg.Effective, again.Effective)
		}
		if d := ranks.DiffFlags(again.Flags(nil), cfg.Flags(nil)); len(d) > 0 {
			t.Errorf("%s: the effective config reads back as another run: %v", o.Flag, d)
		}
	}
	for flag := range roundTrip {
		if !slices.ContainsFunc(trainOptions(&defaults), func(o runconfig.Option) bool { return o.Flag == flag }) {
			t.Errorf("roundTrip has a row for %s, which is not an option", flag)
		}
	}
}

func reflectEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestOptionsRoundTripRun runs every option (but those a CPU-only machine
// cannot run, each with its reason), feeds the printed config: line back with
// --config, and wants the same config: line and the same losses, bit for bit.
func TestOptionsRoundTripRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two jobs per option")
	}
	configLine := regexp.MustCompile(`(?m)^\[rank 0\] config: (\{.*\})$`)
	effective := func(t *testing.T, r jobResult) (string, map[string]any) {
		m := configLine.FindStringSubmatch(r.out)
		if m == nil {
			t.Fatalf("no config line:\n%s", r.out)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "metrics") // runJob gives each run its own --metrics file
		return m[1], v
	}
	var defaults trainCmd
	for _, o := range trainOptions(&defaults) {
		rt, ok := roundTrip[o.Flag]
		if !ok {
			continue // TestOptionsRoundTrip says so
		}
		t.Run(strings.TrimPrefix(o.Flag, "--"), func(t *testing.T) {
			if rt.noRun != "" {
				t.Skip(rt.noRun)
			}
			t.Parallel()
			args, world := roundTripArgs(t, o.Flag)
			first := runJob(t, world, 0, nil, args...)
			mustSucceed(t, first, "train "+strings.Join(args, " "))
			line, want := effective(t, first)
			file := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
			second := runJob(t, world, 0, nil, "--config", file)
			mustSucceed(t, second, "train --config "+file)
			if _, got := effective(t, second); !reflectEqual(got, want) {
				t.Errorf("config line %s reads back as another config line:\n%s", line, second.out)
			}
			a, b := losses(first), losses(second)
			if len(a) == 0 || !slices.Equal(a, b) {
				t.Errorf("losses %v, read back %v", a, b)
			}
		})
	}
}
