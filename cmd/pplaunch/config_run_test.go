package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/ranks"
)

// TestTrainDeepSpeedConfig runs `pplaunch --nproc 2 train --config
// examples/deepspeed.json` (three steps): the file's pipeline and batch
// sizes are what the ranks run, the effective configuration is printed at
// the start, and the checkpoint's manifest holds the same configuration.
func TestTrainDeepSpeedConfig(t *testing.T) {
	root := t.TempDir()
	r := runJob(t, 2, 0, nil, "--config", filepath.Join("..", "..", "examples", "deepspeed.json"),
		"--steps", "3", "--checkpoint-dir", root, "--sample-tokens", "0")
	mustSucceed(t, r, "train --config examples/deepspeed.json")
	if !strings.Contains(r.out, "2 ranks = pp 2 × dp 1; schedule 1f1b, 4 micro-batches of 4 sequences; 3 steps") {
		t.Errorf("the file's pipeline and batch sizes are not the run's:\n%s", r.out)
	}
	m := regexp.MustCompile(`(?m)^\[rank 0\] config: (\{.*\})$`).FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("no config line:\n%s", r.out)
	}
	var printed map[string]any
	if err := json.Unmarshal([]byte(m[1]), &printed); err != nil {
		t.Fatalf("config line %s: %v", m[1], err)
	}
	if printed["microbatch_size"] != 4.0 || printed["microbatches"] != 4.0 || printed["pp"] != 2.0 || printed["steps"] != 3.0 {
		t.Errorf("printed config %s: want the file's batch of 4 × 4, pp 2 and the flag's steps 3", m[1])
	}
	if len(r.metrics) != 3 || r.metrics[2].LR == r.metrics[1].LR {
		t.Errorf("metrics %+v: want 3 steps in the warmup", r.metrics)
	}
	_, man, err := checkpoint.Latest(root)
	if err != nil {
		t.Fatal(err)
	}
	var extra ranks.ManifestExtra
	if err := json.Unmarshal(man.Extra, &extra); err != nil {
		t.Fatalf("manifest extra %s: %v", man.Extra, err)
	}
	var saved map[string]any
	if err := json.Unmarshal(extra.Config, &saved); err != nil || !reflect.DeepEqual(saved, printed) {
		t.Errorf("checkpoint's config %s (%v), printed %s", extra.Config, err, m[1])
	}
}
