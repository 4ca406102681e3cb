package ranks

import (
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
// flag that sets it: the model's kind (its sizes are among the agreed
// flags, resolved, so two presets that resolve to the same model agree),
// cut the blocks of each stage the layout gives, the schedule (a file with
// a digest of what this rank read), then the flags the option table marks
// (c.Agreed). Paths are compared as given: every node must name the same
// files.
func (c *TrainConfig) Flags(cut []int) []FlagValue {
	parts := make([]string, len(cut))
	for k, n := range cut {
		parts[k] = strconv.Itoa(n)
	}
	out := []FlagValue{{"--model", c.Model.Kind}, {"--layers-per-stage", strings.Join(parts, ",")}, {"--schedule", c.scheduleFlag()}}
	for _, f := range c.Agreed {
		if f.Flag != "--schedule" && f.Flag != "--model" && f.Flag != "--layers-per-stage" {
			out = append(out, f)
		}
	}
	return out
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
func (j *rankJob) checkConfig(ctx context.Context) error {
	mine := j.cfg.Flags(j.cut)
	wctx, cancel := j.waitCtx(ctx)
	defer cancel()
	if j.job.Rank == 0 {
		b, err := json.Marshal(mine)
		if err != nil {
			return fmt.Errorf("training flags: %w", err)
		}
		if err := j.job.Store.Set(wctx, configKey, b); err != nil {
			return fmt.Errorf("publish the training flags: %w", err)
		}
		return nil
	}
	b, err := j.job.Store.Get(wctx, configKey)
	if err != nil {
		return &collective.PeerError{Peer: 0, Err: fmt.Errorf("waiting for rank 0's training flags: %w", err)}
	}
	var rank0 []FlagValue
	if err := json.Unmarshal(b, &rank0); err != nil {
		return fmt.Errorf("rank 0's training flags %q: %w", b, err)
	}
	if d := DiffFlags(mine, rank0); len(d) > 0 {
		return flagMismatch(j.job.Rank, j.job.Node, d)
	}
	return nil
}
