package runconfig

import (
	"strings"
	"testing"
)

// testTable is a small option table: a direct DeepSpeed key (clip), one the
// translation sets (lr, with the optimizer's), batch sizes and a plain one.
type testTable struct {
	Config    string  `arg:"--config"`
	Clip      float64 `arg:"--clip" default:"1" ds:"gradient_clipping" alias:"max_grad_norm"`
	Steps     int     `arg:"--steps" default:"200" ds:"train_iters"`
	Micro     int     `arg:"--microbatches" default:"8" ds:"gradient_accumulation_steps"`
	MicroSize int     `arg:"--microbatch-size" default:"4" ds:"train_micro_batch_size_per_gpu"`
	Optimizer string  `arg:"--optimizer" default:"adamw" ds:"optimizer.type"`
	LR        float64 `arg:"--lr" default:"0.003" ds:"optimizer.params.lr"`
	MinLR     float64 `arg:"--min-lr"`
	Decay     float64 `arg:"--weight-decay" ds:"optimizer.params.weight_decay"`
	Beta1     float64 `arg:"--adam-beta1" ds:"optimizer.params.betas"`
	Beta2     float64 `arg:"--adam-beta2" ds:"optimizer.params.betas"`
	Eps       float64 `arg:"--adam-eps" ds:"optimizer.params.eps"`
	Seed      uint64  `arg:"--seed"`
}

// TestReadDirect: a DeepSpeed key whose ds: tag an option carries sets the
// option as it is, with no code of its own; the options' own names set
// theirs; the batch sizes given are said; --config is not an option.
func TestReadDirect(t *testing.T) {
	var c testTable
	opts := Options(&c)
	for _, o := range opts {
		if o.Key == "config" {
			t.Errorf("option %s in the table", o.Key)
		}
	}
	b, err := Read(opts, "run.json", []byte(`{"gradient_clipping": 0.25, "train_iters": 7, "gradient_accumulation_steps": 2, "seed": 5}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Clip != 0.25 || c.Steps != 7 || c.Micro != 2 || c.Seed != 5 {
		t.Errorf("read %+v", c)
	}
	if !b.Accum || b.Micro || b.Total != 0 {
		t.Errorf("batch %+v: want the accumulation steps given, nothing else", b)
	}
	if _, err := Read(opts, "run.yaml", []byte("train_micro_batch_size_per_gpu: 3\n"), map[string]bool{"--microbatch-size": true}); err != nil || c.MicroSize != 3 {
		t.Errorf("YAML: %v, micro-batch size %d", err, c.MicroSize)
	}
}

// TestEffectiveReadsBack: Effective's file, read into a fresh table, gives
// the same values, and says every option.
func TestEffectiveReadsBack(t *testing.T) {
	c := testTable{Clip: 0.5, Steps: 3, Micro: 2, MicroSize: 1, Optimizer: "sgd", LR: 0.1, MinLR: 0.01, Decay: 0.2, Beta1: 0.8, Beta2: 0.9, Eps: 1e-6, Seed: 9}
	eff := Effective(Options(&c))
	var back testTable
	if _, err := Read(Options(&back), "eff.json", eff, nil); err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Errorf("%s reads back as %+v, want %+v", eff, back, c)
	}
	if string(Effective(Options(&back))) != string(eff) {
		t.Errorf("effective config changed on reading back")
	}
}

// TestReadTranslated: the optimizer block takes DeepSpeed's defaults for
// its type, not the flags'; a key and its option's name both given is
// refused; an unknown key is answered with an alias's option.
func TestReadTranslated(t *testing.T) {
	c := testTable{MinLR: 0.01}
	if _, err := Read(Options(&c), "run.json", []byte(`{"optimizer": {"type": "Adam", "params": {"lr": 0.005}}}`), nil); err != nil {
		t.Fatal(err)
	}
	if c.Optimizer != "adamw" || c.LR != 0.005 || c.Beta1 != 0.9 || c.Beta2 != 0.999 || c.Eps != 1e-8 || c.Decay != 0 || c.MinLR != 0.005 {
		t.Errorf("read %+v: want AdamW with DeepSpeed's defaults and min-lr capped at lr", c)
	}
	for _, tc := range []struct{ file, want string }{
		{`{"clip": 1, "gradient_clipping": 2}`, "clip 1 and gradient_clipping 2: give one"},
		{`{"max_grad_norm": 1}`, "did you mean clip (DeepSpeed: gradient_clipping)?"},
		{`{"gradient_clipping": "lots"}`, `gradient_clipping: "lots", want a number`},
	} {
		if _, err := Read(Options(&testTable{}), "run.json", []byte(tc.file), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
}

// TestCheckTable: a ds: tag that is no DeepSpeed key, a direct key of
// another kind, and a table that lacks an option the translation sets are
// each found.
func TestCheckTable(t *testing.T) {
	type misspelt struct {
		Clip float64 `arg:"--clip" ds:"gradient_cliping"`
	}
	type otherKind struct {
		Clip string `arg:"--clip" ds:"gradient_clipping"`
	}
	for _, tc := range []struct {
		table any
		want  string
	}{
		{&misspelt{}, `ds:"gradient_cliping" is not a DeepSpeed key`},
		{&otherKind{}, "holds a number, the option a string"},
		{&testTable{}, "the option table has no"},
	} {
		if err := CheckTable(Options(tc.table)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: %v, want %q", tc.table, err, tc.want)
		}
	}
}
