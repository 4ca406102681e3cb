package ranks

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/collective"
)

// FlagValue is one training flag as a rank sees it: the command-line name
// and its value, printed the way the flag would be written.
type FlagValue struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// FlagDiff is one flag that differs between this rank and rank 0.
type FlagDiff struct {
	Flag        string
	Mine, Rank0 string
}

// Flags lists every setting of c that must be the same on every rank, by the
// flag that sets it, with cut the blocks of each stage the layout gives. The
// model appears as the resolved values (--layers, --width, ...; --model for
// what only the preset sets), so two presets that resolve to the same model
// agree. Paths are compared as given: every node must name the same files.
func (c *TrainConfig) Flags(cut []int) []FlagValue {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := strconv.Itoa
	b := strconv.FormatBool
	parts := make([]string, len(cut))
	for k, n := range cut {
		parts[k] = i(n)
	}
	m := c.Model
	return []FlagValue{
		{"--model", fmt.Sprintf("%s (vocab %d)", m.Kind, m.Vocab)},
		{"--layers", i(m.Layers)}, {"--width", i(m.Width)}, {"--heads", i(m.Heads)}, {"--seq", i(m.Seq)}, {"--tied", b(m.Tied)},
		{"--gelu", cmp.Or(m.Gelu, "tanh")},
		{"--layers-per-stage", strings.Join(parts, ",")},
		{"--schedule", c.scheduleFlag()}, {"--virtual", i(c.Virtual)},
		{"--microbatches", i(c.Micro)}, {"--microbatch-size", i(c.MicroSize)},
		{"--pp", i(c.PP)}, {"--dp", i(c.DP)}, {"--recompute", b(c.Recompute)}, {"--precision", c.Precision.String()}, {"--profile", b(c.Profile)},
		{"--optimizer", c.Optimizer}, {"--lr", f(c.LR)}, {"--min-lr", f(c.MinLR)}, {"--warmup", i(c.Warmup)},
		{"--weight-decay", f(c.WeightDecay)}, {"--clip", f(c.Clip)}, {"--zero", i(c.Zero)},
		{"--lr-schedule", c.LRSchedule}, {"--warmup-start-lr", f(c.WarmupStart)}, {"--lr-decay-steps", i(c.LRDecaySteps)},
		{"--adam-beta1", f(c.Beta1)}, {"--adam-beta2", f(c.Beta2)}, {"--adam-eps", f(c.Eps)}, {"--momentum", f(c.Momentum)},
		{"--steps", i(c.Steps)}, {"--eval-every", i(c.EvalEvery)}, {"--eval-batches", i(c.EvalBatches)},
		{"--seed", strconv.FormatUint(c.Seed, 10)}, {"--data", c.Data}, {"--init-from", c.InitFrom},
		{"--check-transfers", b(c.CheckTransfers)},
		{"--timeout", c.Timeout.String()},
		{"--checkpoint-dir", c.CheckpointDir}, {"--checkpoint-every", i(c.CheckpointEvery)},
		{"--resume", b(c.Resume)}, {"--overwrite", b(c.Overwrite)},
	}
}

// scheduleFlag is --schedule as compared between ranks: a file's name with
// a digest of what this rank read from it.
func (c *TrainConfig) scheduleFlag() string {
	if c.ScheduleText == "" {
		return c.Schedule
	}
	sum := sha256.Sum256([]byte(c.ScheduleText))
	return fmt.Sprintf("%s (sha256 %x)", c.Schedule, sum[:6])
}

// DiffFlags compares this rank's flags with rank 0's and returns those that
// differ, in mine's order; a flag only one side lists (another build) counts
// as differing, with "(unknown)" for the missing value.
func DiffFlags(mine, rank0 []FlagValue) []FlagDiff {
	theirs := make(map[string]string, len(rank0))
	for _, f := range rank0 {
		theirs[f.Flag] = f.Value
	}
	var out []FlagDiff
	seen := map[string]bool{}
	for _, f := range mine {
		seen[f.Flag] = true
		v, ok := theirs[f.Flag]
		if !ok {
			v = "(unknown)"
		}
		if v != f.Value {
			out = append(out, FlagDiff{Flag: f.Flag, Mine: f.Value, Rank0: v})
		}
	}
	for _, f := range rank0 {
		if !seen[f.Flag] {
			out = append(out, FlagDiff{Flag: f.Flag, Mine: "(unknown)", Rank0: f.Value})
		}
	}
	return out
}

// flagMismatch describes the differences for rank (on node) as one error.
func flagMismatch(rank, node int, d []FlagDiff) error {
	show := func(v string) string {
		if v == "" {
			return `""`
		}
		return v
	}
	parts := make([]string, len(d))
	for k, x := range d {
		parts[k] = fmt.Sprintf("%s %s on rank %d (node %d), %s on rank 0", x.Flag, show(x.Mine), rank, node, show(x.Rank0))
	}
	return fmt.Errorf("%s: start every node with the same training flags", strings.Join(parts, "; "))
}

// configKey holds rank 0's training flags in the store (this attempt's namespace).
const configKey = "train/config"

// checkConfig makes every rank compare its training flags with rank 0's,
// which rank 0 publishes through the store, and refuse any difference.
func (t *trainer) checkConfig(ctx context.Context) error {
	mine := t.cfg.Flags(t.cut)
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if t.job.Rank == 0 {
		b, err := json.Marshal(mine)
		if err != nil {
			return fmt.Errorf("training flags: %w", err)
		}
		if err := t.job.Store.Set(wctx, configKey, b); err != nil {
			return fmt.Errorf("publish the training flags: %w", err)
		}
		return nil
	}
	b, err := t.job.Store.Get(wctx, configKey)
	if err != nil {
		return &collective.PeerError{Peer: 0, Err: fmt.Errorf("waiting for rank 0's training flags: %w", err)}
	}
	var rank0 []FlagValue
	if err := json.Unmarshal(b, &rank0); err != nil {
		return fmt.Errorf("rank 0's training flags %q: %w", b, err)
	}
	if d := DiffFlags(mine, rank0); len(d) > 0 {
		return flagMismatch(t.job.Rank, t.job.Node, d)
	}
	return nil
}
