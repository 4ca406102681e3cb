package checkpoint

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/safetensors"
)

// params is a small model's parameters, values a function of the name and index.
func params() []Tensor {
	specs := []TensorSpec{
		{"wte", []int{8, 4}}, {"h.0.w", []int{4, 4}}, {"h.0.b", []int{4}},
		{"h.1.w", []int{4, 4}}, {"h.1.b", []int{4}}, {"ln_f.g", []int{4}},
	}
	var out []Tensor
	for k, s := range specs {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(k*100+i))) / 3
		}
		out = append(out, Tensor{Name: s.Name, Shape: s.Shape, Data: v})
	}
	return out
}

func scaled(ts []Tensor, f float32) []Tensor {
	var out []Tensor
	for _, t := range ts {
		v := slices.Clone(t.Data)
		for i := range v {
			v[i] *= f
		}
		out = append(out, Tensor{Name: t.Name, Shape: t.Shape, Data: v})
	}
	return out
}

// split cuts the parameters into stages of the given sizes, with Adam state.
func split(ps []Tensor, sizes ...int) []Shard {
	var shards []Shard
	for _, n := range sizes {
		part := ps[:n]
		ps = ps[n:]
		shards = append(shards, Shard{Params: part, State: map[string][]Tensor{
			"adam_m": scaled(part, 0.1), "adam_v": scaled(part, 0.01),
		}})
	}
	return shards
}

var model = json.RawMessage(`{"layers": 2, "width": 4, "vocab": 8, "tied": false}`)

func manifest(step int) Manifest {
	return Manifest{Step: step, Data: DataPosition{Seed: 1 << 63, Step: step}, Model: model, Optimizer: "adamw"}
}

func specs(ts []Tensor) []TensorSpec {
	var out []TensorSpec
	for _, t := range ts {
		out = append(out, TensorSpec{t.Name, t.Shape})
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := StepDir(t.TempDir(), 7)
	ps := params()
	shards := split(ps, 3, 3)
	if err := Save(dir, manifest(7), shards); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"manifest.json", "stage-000-of-002.safetensors", "stage-001-of-002.safetensors"}; !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v (no temporaries left)", names, want)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != FormatVersion || m.Step != 7 || m.Data.Seed != 1<<63 || m.NumStages != 2 || m.Optimizer != "adamw" {
		t.Fatalf("manifest %+v", m)
	}
	if want := []string{"h.0.b", "h.0.w", "wte"}; !slices.Equal(m.Stages[0].Params, want) {
		t.Fatalf("stage 0 params %v, want %v", m.Stages[0].Params, want)
	}
	if want := []string{"adam_m", "adam_v"}; !slices.Equal(m.Stages[1].State, want) {
		t.Fatalf("stage 1 state %v, want %v", m.Stages[1].State, want)
	}
	for s := 0; s < 2; s++ {
		want := shards[s]
		_, got, err := LoadStage(dir, s, Expect{Model: model, Optimizer: "adamw", Stages: 2, Params: specs(want.Params)})
		if err != nil {
			t.Fatal(err)
		}
		if !equalTensors(got.Params, want.Params) {
			t.Fatalf("stage %d params differ after the round trip", s)
		}
		for slot, ts := range want.State {
			if !equalTensors(got.State[slot], ts) {
				t.Fatalf("stage %d slot %s differs after the round trip", s, slot)
			}
		}
	}
	// One process loading the whole model from a 2-stage checkpoint.
	_, all, err := Load(dir, Expect{Model: model, Params: specs(ps)})
	if err != nil {
		t.Fatal(err)
	}
	if !equalTensors(all.Params, ps) || !equalTensors(all.State["adam_v"], scaled(ps, 0.01)) {
		t.Fatal("whole-model load differs")
	}
	// Another reader of the format sees the same numbers under the documented names.
	f, err := safetensors.ReadFile(filepath.Join(dir, "stage-001-of-002.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	w, ok := f.Get("adam_m/h.1.w")
	if !ok {
		t.Fatal("adam_m/h.1.w missing from stage 1's shard")
	}
	if v, _ := w.Float32s(); !slices.Equal(v, scaled(ps, 0.1)[3].Data) {
		t.Fatal("adam_m/h.1.w has other values")
	}
}

func equalTensors(a, b []Tensor) bool {
	return slices.EqualFunc(a, b, func(x, y Tensor) bool {
		return x.Name == y.Name && slices.Equal(x.Shape, y.Shape) && slices.Equal(x.Data, y.Data)
	})
}

// The pipeline flow: each rank writes its shard; the directory is incomplete (ignored
// by Latest) until one rank commits.
func TestLatestIgnoresIncomplete(t *testing.T) {
	root := t.TempDir()
	if _, _, err := Latest(root); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("empty root: %v", err)
	}
	if _, _, err := Latest(filepath.Join(root, "absent")); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("missing root: %v", err)
	}
	ps := params()
	for _, step := range []int{5, 10} {
		if err := Save(StepDir(root, step), manifest(step), split(ps, 6)); err != nil {
			t.Fatal(err)
		}
	}
	// step 15: shards written, never committed (the job died before the manifest).
	shards := split(ps, 2, 4)
	for s, sh := range shards {
		if _, err := WriteShard(StepDir(root, 15), s, 2, sh); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "step-notanumber"), 0o755)
	os.WriteFile(filepath.Join(root, "step-000099"), []byte("a file, not a dir"), 0o644)
	dir, m, err := Latest(root)
	if err != nil || dir != StepDir(root, 10) || m.Step != 10 {
		t.Fatalf("Latest = %s, %v; want step 10", dir, err)
	}
	if err := Commit(StepDir(root, 15), Manifest{Step: 15, Model: model, NumStages: 2}); err != nil {
		t.Fatal(err)
	}
	if dir, _, _ := Latest(root); dir != StepDir(root, 15) {
		t.Fatalf("after commit Latest = %s", dir)
	}
	// Rewriting a shard of a complete checkpoint makes it incomplete again.
	if _, err := WriteShard(StepDir(root, 15), 0, 2, shards[0]); err != nil {
		t.Fatal(err)
	}
	if dir, _, _ := Latest(root); dir != StepDir(root, 10) {
		t.Fatalf("after rewriting a shard Latest = %s, want step 10", dir)
	}
	// Resolve takes a root or a checkpoint directory.
	if d, _, err := Resolve(root); err != nil || d != StepDir(root, 10) {
		t.Fatalf("Resolve(root) = %s, %v", d, err)
	}
	if d, _, err := Resolve(StepDir(root, 5)); err != nil || d != StepDir(root, 5) {
		t.Fatalf("Resolve(step 5) = %s, %v", d, err)
	}
	// A manifest that does not parse is an error, not silently skipped.
	os.WriteFile(filepath.Join(StepDir(root, 10), ManifestName), []byte("{"), 0o644)
	if _, _, err := Latest(root); err == nil || !strings.Contains(err.Error(), "step-000010") {
		t.Fatalf("broken manifest: %v", err)
	}
}

func TestWriteAtomicFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	_, _, err := writeAtomic(dir, "x.safetensors", func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("disk full")
	})
	if err == nil || !strings.Contains(err.Error(), "x.safetensors") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v behind", entries)
	}
}

func TestLoadRefuses(t *testing.T) {
	ps := params()
	good := Expect{Model: model, Optimizer: "adamw", Stages: 2, Params: specs(ps[:3])}
	fresh := func(t *testing.T) string {
		dir := StepDir(t.TempDir(), 3)
		if err := Save(dir, manifest(3), split(ps, 3, 3)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	shard0 := "stage-000-of-002.safetensors"
	cases := []struct {
		name   string
		damage func(dir string)
		want   Expect
		errs   []string
	}{
		{"truncated shard", func(dir string) {
			p := filepath.Join(dir, shard0)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o644)
		}, good, []string{shard0, "truncated"}},
		{"corrupt shard", func(dir string) {
			p := filepath.Join(dir, shard0)
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o644)
		}, good, []string{shard0, "SHA-256", "corrupt"}},
		{"missing shard", func(dir string) { os.Remove(filepath.Join(dir, shard0)) }, good, []string{shard0}},
		{"no manifest", func(dir string) { os.Remove(filepath.Join(dir, ManifestName)) }, good, []string{"not a complete checkpoint"}},
		{"model config", nil, Expect{Model: json.RawMessage(`{"layers": 3, "width": 4, "vocab": 8, "heads": 2}`)},
			[]string{ManifestName, "model config differs", "layers: 2 vs 3", "heads: missing vs 2", "tied: false vs missing"}},
		{"optimizer", nil, Expect{Optimizer: "sgd"}, []string{`optimizer "adamw", this run uses "sgd"`}},
		{"stage count", nil, Expect{Stages: 4}, []string{"saved with 2 stages, this run has 4"}},
		{"param names", nil, Expect{Params: append(specs(ps[:2]), TensorSpec{"h.9.w", []int{4, 4}})},
			[]string{shard0, "only in the checkpoint [h.0.b]", "only in this run [h.9.w]"}},
		{"param shape", nil, Expect{Params: []TensorSpec{{"wte", []int{4, 8}}, {"h.0.w", []int{4, 4}}, {"h.0.b", []int{4}}}},
			[]string{`"wte" has shape [8 4], this run expects [4 8]`}},
		{"format version", func(dir string) {
			p := filepath.Join(dir, ManifestName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"format": 1`, `"format": 9`, 1)), 0o644)
		}, good, []string{"format version 9"}},
		{"optimizer slot shape", func(dir string) {
			// A shard written by another tool, hashed into a valid manifest,
			// whose first moment of wte is laid out [4 8] instead of [8 4].
			p := filepath.Join(dir, shard0)
			f, err := safetensors.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for i := range f.Tensors {
				if f.Tensors[i].Name == "adam_m/wte" {
					f.Tensors[i].Shape = []int{4, 8}
				}
			}
			if err := safetensors.WriteFile(p, f.Tensors, f.Metadata); err != nil {
				t.Fatal(err)
			}
			m := manifest(3)
			m.NumStages = 2
			if err := Commit(dir, m); err != nil {
				t.Fatal(err)
			}
		}, good, []string{shard0, `optimizer slot adam_m: "wte" has shape [4 8], the parameter [8 4]`}},
		{"damaged byte in a string", func(dir string) {
			// A byte of a tensor's name inverted: JSON would decode it as
			// U+FFFD, and the name would then be missing from the shard.
			p := filepath.Join(dir, ManifestName)
			b, _ := os.ReadFile(p)
			i := strings.Index(string(b), `"h.0.w"`) + 2
			b[i] ^= 0xFF
			os.WriteFile(p, b, 0o644)
		}, good, []string{ManifestName, "not valid UTF-8: the file is damaged"}},
		{"escaping file name", func(dir string) {
			p := filepath.Join(dir, ManifestName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), shard0, "../../etc/passwd", 1)), 0o644)
		}, good, []string{`file "../../etc/passwd"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fresh(t)
			if c.damage != nil {
				c.damage(dir)
			}
			_, _, err := LoadStage(dir, 0, c.want)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, _, err := LoadStage(fresh(t), 2, Expect{}); err == nil || !strings.Contains(err.Error(), "no stage 2") {
		t.Fatalf("stage out of range: %v", err)
	}
}

func TestSaveRefuses(t *testing.T) {
	ps := params()
	cases := map[string][]Shard{
		"slot lacks a param":    {{Params: ps[:2], State: map[string][]Tensor{"m": ps[:1]}}},
		"slot has a stranger":   {{Params: ps[:1], State: map[string][]Tensor{"m": ps[1:2]}}},
		"slot shape":            {{Params: ps[:1], State: map[string][]Tensor{"m": {{Name: "wte", Shape: []int{32}, Data: ps[0].Data}}}}},
		"slot named param":      {{Params: ps[:1], State: map[string][]Tensor{"param": ps[:1]}}},
		"slot with slash":       {{Params: ps[:1], State: map[string][]Tensor{"a/b": ps[:1]}}},
		"data shorter":          {{Params: []Tensor{{Name: "x", Shape: []int{3}, Data: []float32{1}}}}},
		"duplicate param":       {{Params: []Tensor{ps[0], ps[0]}}},
		"param in two stages":   {{Params: ps[:2]}, {Params: ps[1:3]}},
		"empty tensor name":     {{Params: []Tensor{{Name: "", Shape: []int{1}, Data: []float32{1}}}}},
		"negative shape":        {{Params: []Tensor{{Name: "x", Shape: []int{-1, -1}, Data: []float32{1}}}}},
		"duplicate slot tensor": {{Params: ps[:1], State: map[string][]Tensor{"m": {ps[0], ps[0]}}}},
	}
	for name, shards := range cases {
		if err := Save(filepath.Join(t.TempDir(), "c"), manifest(1), shards); err == nil {
			t.Errorf("%s: saved", name)
		}
	}
	dir := t.TempDir()
	if _, err := WriteShard(dir, 0, 2, split(ps, 6)[0]); err != nil {
		t.Fatal(err)
	}
	if err := Commit(dir, Manifest{NumStages: 2}); err == nil || !strings.Contains(err.Error(), "stage 1") {
		t.Fatalf("commit with a missing shard: %v", err)
	}
	if _, err := WriteShard(dir, 2, 2, Shard{}); err == nil {
		t.Fatal("stage 2 of 2 accepted")
	}
}

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	a := []Tensor{
		{Name: "same", Shape: []int{3}, Data: []float32{1, nan, inf}},
		{Name: "close", Shape: []int{2}, Data: []float32{1, 100.0001}},
		{Name: "far", Shape: []int{1}, Data: []float32{1}},
		{Name: "shape", Shape: []int{2}, Data: []float32{1, 2}},
		{Name: "onlyA", Shape: []int{1}, Data: []float32{1}},
		{Name: "zero", Shape: []int{1}, Data: []float32{1e-9}},
	}
	b := []Tensor{
		{Name: "same", Shape: []int{3}, Data: []float32{1, nan, inf}},
		{Name: "close", Shape: []int{2}, Data: []float32{1, 100}},
		{Name: "far", Shape: []int{1}, Data: []float32{2}},
		{Name: "shape", Shape: []int{1, 2}, Data: []float32{1, 2}},
		{Name: "onlyB", Shape: []int{1}, Data: []float32{1}},
		{Name: "zero", Shape: []int{1}, Data: []float32{0}},
	}
	byName := func(r Report) map[string]TensorDiff {
		m := map[string]TensorDiff{}
		for _, d := range r.Diffs {
			m[d.Name] = d
		}
		return m
	}
	exact := byName(Compare(a, b, Tolerance{}))
	if len(exact) != 7 {
		t.Fatalf("%d diffs, want the union of 7 names", len(exact))
	}
	for name, match := range map[string]bool{"same": true, "close": false, "far": false, "shape": false, "onlyA": false, "onlyB": false, "zero": false} {
		if exact[name].Match() != match {
			t.Errorf("exact: %s match = %v, want %v (%+v)", name, !match, match, exact[name])
		}
	}
	if d := exact["far"]; d.MaxAbs != 1 || d.MaxRel != 0.5 || d.Outside != 1 {
		t.Errorf("far: %+v", d)
	}
	if d := exact["zero"]; !math.IsInf(d.MaxRel, 1) {
		t.Errorf("zero: relative difference to 0 should be +Inf, got %v", d.MaxRel)
	}
	// float32 holds 100.0001 as 100.0001068 (spacing 7.6e-6 near 100), so the
	// relative difference is 1.07e-6, not exactly 1e-6.
	if d := exact["close"]; math.Abs(d.MaxRel-1e-6) > 2e-7 {
		t.Errorf("close: max relative %v, want about 1e-6", d.MaxRel)
	}
	if exact["onlyA"].Problem != "only in the first" || exact["onlyB"].ShapeA != nil || exact["shape"].Problem != "shape [2] vs [1 2]" {
		t.Errorf("problems: %+v %+v %+v", exact["onlyA"], exact["onlyB"], exact["shape"])
	}
	loose := byName(Compare(a, b, Tolerance{RTol: 1e-5, ATol: 1e-8}))
	if !loose["close"].Match() || !loose["zero"].Match() || loose["far"].Match() {
		t.Errorf("with rtol 1e-5 atol 1e-8: close %+v zero %+v far %+v", loose["close"], loose["zero"], loose["far"])
	}
	same := Compare(a[:1], b[:1], Tolerance{})
	if !same.OK() || Compare(a, b, Tolerance{}).OK() {
		t.Error("OK() wrong")
	}
}

// Checkpoints of the same state saved with different stage layouts compare equal;
// one changed element is found and named.
func TestCompareDirsAcrossLayouts(t *testing.T) {
	root := t.TempDir()
	ps := params()
	one, three := filepath.Join(root, "one"), filepath.Join(root, "three")
	if err := Save(StepDir(one, 4), manifest(4), split(ps, 6)); err != nil {
		t.Fatal(err)
	}
	if err := Save(StepDir(three, 4), manifest(4), split(ps, 1, 3, 2)); err != nil {
		t.Fatal(err)
	}
	da, db, r, err := CompareDirs(one, three, Tolerance{})
	if err != nil {
		t.Fatal(err)
	}
	if da != StepDir(one, 4) || db != StepDir(three, 4) {
		t.Fatalf("resolved %s, %s", da, db)
	}
	if !r.OK() || len(r.Diffs) != 3*len(ps) {
		t.Fatalf("same state, different layouts: ok=%v, %d tensors", r.OK(), len(r.Diffs))
	}
	changed := params()
	changed[4].Data[2] += 1e-3
	if err := Save(StepDir(three, 8), manifest(8), split(changed, 2, 4)); err != nil {
		t.Fatal(err)
	}
	_, _, r, err = CompareDirs(one, three, Tolerance{})
	if err != nil {
		t.Fatal(err)
	}
	// The parameter and its Adam moments (scaled copies here) differ, nothing else.
	var bad []string
	for _, d := range r.Diffs {
		if !d.Match() {
			bad = append(bad, d.Name)
		}
		// 1e-3 added in float32 to a value below 1 (spacing 6e-8).
		if d.Name == "param/h.1.b" && math.Abs(d.MaxAbs-1e-3) > 1e-6 {
			t.Errorf("param/h.1.b differs by %v, want about 1e-3", d.MaxAbs)
		}
	}
	if want := []string{"adam_m/h.1.b", "adam_v/h.1.b", "param/h.1.b"}; !slices.Equal(bad, want) {
		t.Fatalf("mismatched %v, want %v", bad, want)
	}
	if _, _, _, err := CompareDirs(one, filepath.Join(root, "none"), Tolerance{}); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("missing checkpoint: %v", err)
	}
}

// parseManifest never panics; what it accepts re-encodes to an equal manifest.
func FuzzManifest(f *testing.F) {
	dir := f.TempDir()
	if err := Save(dir, manifest(3), split(params(), 2, 4)); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format":1,"num_stages":1,"stages":[{"stage":0,"file":"stage-000-of-001.safetensors","params":["a","a"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted manifest does not re-encode: %v", err)
		}
		m2, err := parseManifest(again)
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v\n%s", err, again)
		}
		if m2.Step != m.Step || m2.NumStages != m.NumStages || len(m2.Stages) != len(m.Stages) {
			t.Fatalf("manifest changed in the round trip")
		}
	})
}

// The entries ranks compute while writing (gathered for Commit) equal what Commit
// finds by reading the shards back.
func TestCommitGatheredEqualsScanned(t *testing.T) {
	dir := t.TempDir()
	var infos []StageInfo
	for s, sh := range split(params(), 4, 2) {
		info, err := WriteShard(dir, s, 2, sh)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	commit := func(m Manifest) *Manifest {
		if err := Commit(dir, m); err != nil {
			t.Fatal(err)
		}
		back, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return back
	}
	m := manifest(1)
	m.NumStages = 2
	m.Stages = infos
	gathered := commit(m)
	m.Stages = nil
	scanned := commit(m)
	if !reflect.DeepEqual(gathered.Stages, scanned.Stages) {
		t.Fatalf("gathered %+v\nscanned %+v", gathered.Stages, scanned.Stages)
	}
	// Entries that contradict each other are refused.
	m.Stages = []StageInfo{infos[1], infos[0]}
	if err := Commit(dir, m); err == nil || !strings.Contains(err.Error(), "stage entry 0 is stage 1") {
		t.Fatalf("swapped entries: %v", err)
	}
}

// A checkpoint saved with 3 stages restores a run cut into 2, each stage reading only
// the shards that hold its parameters.
func TestGatherOtherLayout(t *testing.T) {
	dir := t.TempDir()
	ps := params()
	if err := Save(dir, manifest(2), split(ps, 2, 2, 2)); err != nil {
		t.Fatal(err)
	}
	want := split(ps, 4, 2)
	// Stage 1 of the new layout needs only the old stage 2's shard: damage stage 0's.
	p := filepath.Join(dir, "stage-000-of-003.safetensors")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o644)
	_, got, err := Gather(dir, Expect{Model: model, Params: specs(want[1].Params)})
	if err != nil {
		t.Fatal(err)
	}
	if !equalTensors(got.Params, want[1].Params) || !equalTensors(got.State["adam_m"], want[1].State["adam_m"]) {
		t.Fatal("gathered stage 1 differs")
	}
	// Stage 0 needs the damaged shard, and is refused.
	if _, _, err := Gather(dir, Expect{Params: specs(want[0].Params)}); err == nil || !strings.Contains(err.Error(), "stage-000-of-003") {
		t.Fatalf("damaged shard: %v", err)
	}
	if _, _, err := Gather(dir, Expect{Params: []TensorSpec{{"h.7.w", nil}, {"h.1.b", nil}}}); err == nil || !strings.Contains(err.Error(), "[h.7.w]") {
		t.Fatalf("unknown parameter: %v", err)
	}
	if _, _, err := Gather(dir, Expect{Params: []TensorSpec{{"h.1.b", []int{5}}}}); err == nil || !strings.Contains(err.Error(), "shape [4], this run expects [5]") {
		t.Fatalf("other shape: %v", err)
	}
}
