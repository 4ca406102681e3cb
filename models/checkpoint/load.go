package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pplaunch/pplaunch/models/safetensors"
)

// ReadManifest reads and checks dir's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("checkpoint %s: no %s: not a complete checkpoint", dir, ManifestName)
		}
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	m, err := parseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, nil
}

// parseManifest decodes and checks a manifest. Unknown fields are refused: they
// would come from a newer format this build cannot honour.
func parseManifest(b []byte) (*Manifest, error) {
	if !utf8.Valid(b) {
		// Written as UTF-8, always: a damaged byte inside a string would
		// otherwise decode (as U+FFFD) and fail later, elsewhere.
		return nil, errors.New("not valid UTF-8: the file is damaged")
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the manifest's JSON object")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Manifest) check() error {
	if m.Format != FormatVersion {
		return fmt.Errorf("format version %d, this build reads %d", m.Format, FormatVersion)
	}
	if m.NumStages < 1 || len(m.Stages) != m.NumStages {
		return fmt.Errorf("num_stages %d but %d stage entries", m.NumStages, len(m.Stages))
	}
	owner := map[string]int{}
	for i, s := range m.Stages {
		// The file name is fixed, so a manifest can never point outside its directory.
		if s.Stage != i || s.File != ShardFile(i, m.NumStages) {
			return fmt.Errorf("stage entry %d is stage %d, file %q; want stage %d, file %q", i, s.Stage, s.File, i, ShardFile(i, m.NumStages))
		}
		for _, p := range s.Params {
			if o, dup := owner[p]; dup {
				return fmt.Errorf("parameter %q listed in stage %d and stage %d", p, o, i)
			}
			owner[p] = i
		}
	}
	return nil
}

// Latest returns the newest complete checkpoint directory under root (the
// step-NNNNNN subdirectory with the largest step that has a manifest) and its
// manifest. Directories without a manifest are saves that did not finish and are
// ignored; a manifest that does not parse is an error. With none it returns
// ErrNoCheckpoint.
func Latest(root string) (string, *Manifest, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("checkpoint root %s: %w", root, ErrNoCheckpoint)
		}
		return "", nil, fmt.Errorf("checkpoint root: %w", err)
	}
	type cand struct {
		step int
		dir  string
	}
	var cands []cand
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), "step-")
		step, err := strconv.Atoi(digits)
		if !ok || err != nil || step < 0 || !e.IsDir() {
			continue
		}
		cands = append(cands, cand{step, filepath.Join(root, e.Name())})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].step > cands[j].step })
	for _, c := range cands {
		if _, err := os.Stat(filepath.Join(c.dir, ManifestName)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		m, err := ReadManifest(c.dir)
		if err != nil {
			return "", nil, err
		}
		if m.Step != c.step {
			return "", nil, fmt.Errorf("checkpoint %s: manifest says step %d", c.dir, m.Step)
		}
		return c.dir, m, nil
	}
	return "", nil, fmt.Errorf("checkpoint root %s: %w", root, ErrNoCheckpoint)
}

// Resolve accepts a checkpoint directory, or a root of step directories (then the
// newest complete one), and returns the directory and its manifest.
func Resolve(path string) (string, *Manifest, error) {
	if _, err := os.Stat(filepath.Join(path, ManifestName)); err == nil {
		m, err := ReadManifest(path)
		return path, m, err
	}
	return Latest(path)
}

// TensorSpec is a tensor's name and shape, as the caller expects it.
type TensorSpec struct {
	Name  string
	Shape []int
}

// Expect is what the caller's model looks like; Load refuses a checkpoint that
// differs. Zero fields are not checked.
type Expect struct {
	Model     json.RawMessage
	Optimizer string
	Stages    int
	// Params are the parameters to be restored: for LoadStage the stage's own, for
	// Load all of them. Names and shapes must match exactly, no more and no fewer.
	Params []TensorSpec
}

// open reads dir's manifest and checks it against e.
func (e Expect) open(dir string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := e.checkManifest(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (e Expect) checkManifest(dir string, m *Manifest) error {
	where := filepath.Join(dir, ManifestName)
	if e.Model != nil {
		if d, err := jsonDiff(m.Model, e.Model); err != nil {
			return fmt.Errorf("checkpoint %s: model config: %w", where, err)
		} else if d != "" {
			return fmt.Errorf("checkpoint %s: model config differs (checkpoint vs this run): %s", where, d)
		}
	}
	if e.Optimizer != "" && e.Optimizer != m.Optimizer {
		return fmt.Errorf("checkpoint %s: optimizer %q, this run uses %q", where, m.Optimizer, e.Optimizer)
	}
	if e.Stages != 0 && e.Stages != m.NumStages {
		return fmt.Errorf("checkpoint %s: saved with %d stages, this run has %d", where, m.NumStages, e.Stages)
	}
	return nil
}

// jsonDiff compares two JSON documents by value and describes the differences: per
// top-level key for objects, else the whole values.
func jsonDiff(saved, want json.RawMessage) (string, error) {
	var a, b any
	if err := json.Unmarshal(saved, &a); err != nil {
		return "", fmt.Errorf("checkpoint's: %w", err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		return "", fmt.Errorf("this run's: %w", err)
	}
	if reflect.DeepEqual(a, b) {
		return "", nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return fmt.Sprintf("%s vs %s", compact(a), compact(b)), nil
	}
	var keys []string
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var diffs []string
	for _, k := range keys {
		av, aok := am[k]
		bv, bok := bm[k]
		switch {
		case !aok:
			diffs = append(diffs, fmt.Sprintf("%s: missing vs %s", k, compact(bv)))
		case !bok:
			diffs = append(diffs, fmt.Sprintf("%s: %s vs missing", k, compact(av)))
		case !reflect.DeepEqual(av, bv):
			diffs = append(diffs, fmt.Sprintf("%s: %s vs %s", k, compact(av), compact(bv)))
		}
	}
	return strings.Join(diffs, "; "), nil
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// LoadStage loads one stage's shard from dir after checking the manifest, the
// shard's size and checksum, and its parameters against want. Params come back in
// want.Params's order when given (else sorted by name); each State slot in the
// same order as Params.
func LoadStage(dir string, stage int, want Expect) (*Manifest, Shard, error) {
	m, err := want.open(dir)
	if err != nil {
		return nil, Shard{}, err
	}
	if stage < 0 || stage >= m.NumStages {
		return nil, Shard{}, fmt.Errorf("checkpoint %s: no stage %d (it has %d)", dir, stage, m.NumStages)
	}
	byName, err := readShard(dir, m.Stages[stage])
	if err != nil {
		return nil, Shard{}, err
	}
	sh, err := assemble(filepath.Join(dir, m.Stages[stage].File), m.Stages[stage:stage+1], byName, want.Params)
	return m, sh, err
}

// Load loads every stage of dir into one Shard (a process holding the whole model),
// with the same checks as LoadStage; want.Params lists all parameters.
func Load(dir string, want Expect) (*Manifest, Shard, error) {
	m, err := want.open(dir)
	if err != nil {
		return nil, Shard{}, err
	}
	byName := map[string]Tensor{}
	for _, si := range m.Stages {
		ts, err := readShard(dir, si)
		if err != nil {
			return nil, Shard{}, err
		}
		maps.Copy(byName, ts)
	}
	sh, err := assemble(dir, m.Stages, byName, want.Params)
	return m, sh, err
}

// assemble builds a Shard from the tensors of the given stages, checking them against
// the manifest's lists and the caller's expected parameters. where names the file or
// directory in errors.
func assemble(where string, stages []StageInfo, byName map[string]Tensor, want []TensorSpec) (Shard, error) {
	var names []string
	for _, si := range stages {
		names = append(names, si.Params...)
	}
	sort.Strings(names)
	if want == nil {
		for _, n := range names {
			want = append(want, TensorSpec{Name: n})
		}
	} else if sorted := slices.Sorted(slices.Values(specNames(want))); !slices.Equal(sorted, names) {
		return Shard{}, fmt.Errorf("checkpoint %s: parameters differ: %s", where, nameDiff(names, sorted))
	}
	sh, err := pick(where, want, stages[0].State, byName)
	if err != nil {
		return Shard{}, err
	}
	if total := len(names) * (1 + len(stages[0].State)); total != len(byName) {
		return Shard{}, fmt.Errorf("checkpoint %s: %d tensors in the shards, the manifest accounts for %d", where, len(byName), total)
	}
	return sh, nil
}

func specNames(specs []TensorSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// pick takes the wanted parameters and their optimizer slots out of byName, in
// want's order. A nil Shape in want is not checked.
func pick(where string, want []TensorSpec, slots []string, byName map[string]Tensor) (Shard, error) {
	sh := Shard{State: map[string][]Tensor{}}
	for _, w := range want {
		p, ok := byName[ParamSlot+"/"+w.Name]
		if !ok {
			return Shard{}, fmt.Errorf("checkpoint %s: parameter %q is not in the shards", where, w.Name)
		}
		if w.Shape != nil && !slices.Equal(p.Shape, w.Shape) {
			return Shard{}, fmt.Errorf("checkpoint %s: parameter %q has shape %v, this run expects %v", where, w.Name, p.Shape, w.Shape)
		}
		sh.Params = append(sh.Params, Tensor{Name: w.Name, Shape: p.Shape, Data: p.Data})
		for _, slot := range slots {
			s, ok := byName[slot+"/"+w.Name]
			if !ok {
				return Shard{}, fmt.Errorf("checkpoint %s: optimizer slot %s lacks parameter %q", where, slot, w.Name)
			}
			if !slices.Equal(s.Shape, p.Shape) {
				return Shard{}, fmt.Errorf("checkpoint %s: optimizer slot %s: %q has shape %v, the parameter %v", where, slot, w.Name, s.Shape, p.Shape)
			}
			sh.State[slot] = append(sh.State[slot], Tensor{Name: w.Name, Shape: s.Shape, Data: s.Data})
		}
	}
	return sh, nil
}

// Gather loads the parameters named in want.Params, with their optimizer state,
// from a checkpoint saved with any stage layout, reading only the shards that hold
// them: a run cut into other stages than the saved one resumes with it (leave
// want.Stages 0). Names not in the checkpoint, or other shapes, are refused.
func Gather(dir string, want Expect) (*Manifest, Shard, error) {
	m, err := want.open(dir)
	if err != nil {
		return nil, Shard{}, err
	}
	owner := map[string]int{}
	for _, si := range m.Stages {
		for _, p := range si.Params {
			owner[p] = si.Stage
		}
		if !slices.Equal(si.State, m.Stages[0].State) {
			return nil, Shard{}, fmt.Errorf("checkpoint %s: stage %d saved optimizer slots %v, stage 0 %v", dir, si.Stage, si.State, m.Stages[0].State)
		}
	}
	var missing []string
	needed := map[int]bool{}
	for _, w := range want.Params {
		s, ok := owner[w.Name]
		if !ok {
			missing = append(missing, w.Name)
			continue
		}
		needed[s] = true
	}
	if missing != nil {
		return nil, Shard{}, fmt.Errorf("checkpoint %s: parameters not in the checkpoint: %v", dir, limit(missing))
	}
	byName := map[string]Tensor{}
	for s := range needed {
		ts, err := readShard(dir, m.Stages[s])
		if err != nil {
			return nil, Shard{}, err
		}
		maps.Copy(byName, ts)
	}
	sh, err := pick(dir, want.Params, m.Stages[0].State, byName)
	return m, sh, err
}

// nameDiff lists what is only in the checkpoint and only in the caller's model.
func nameDiff(saved, want []string) string {
	var onlySaved, onlyWant []string
	for _, n := range saved {
		if _, ok := slices.BinarySearch(want, n); !ok {
			onlySaved = append(onlySaved, n)
		}
	}
	for _, n := range want {
		if _, ok := slices.BinarySearch(saved, n); !ok {
			onlyWant = append(onlyWant, n)
		}
	}
	return fmt.Sprintf("only in the checkpoint %v, only in this run %v", limit(onlySaved), limit(onlyWant))
}

func limit(s []string) []string {
	if len(s) > 8 {
		return append(s[:8:8], fmt.Sprintf("... %d more", len(s)-8))
	}
	return s
}

// readShard reads one shard, verifying size and checksum against the manifest, and
// returns its tensors by full name.
func readShard(dir string, si StageInfo) (map[string]Tensor, error) {
	path := filepath.Join(dir, si.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: stage %d: %w", si.Stage, err)
	}
	if int64(len(b)) != si.Size {
		return nil, fmt.Errorf("checkpoint %s: %d bytes, the manifest says %d (truncated or replaced)", path, len(b), si.Size)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != si.SHA256 {
		return nil, fmt.Errorf("checkpoint %s: SHA-256 %x does not match the manifest's %s (corrupt)", path, sum, si.SHA256)
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	out := make(map[string]Tensor, len(f.Tensors))
	for _, t := range f.Tensors {
		if t.DType != safetensors.F32 {
			return nil, fmt.Errorf("checkpoint %s: tensor %q is %s, checkpoints hold F32", path, t.Name, t.DType)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		out[t.Name] = Tensor{Name: t.Name, Shape: t.Shape, Data: v}
	}
	return out, nil
}

// ReadTensors returns every tensor of the checkpoint in dir, all stages together,
// under their full names ("param/<name>", "<slot>/<name>"), sorted by name, after
// checking sizes and checksums. It reads a checkpoint saved with any stage layout.
func ReadTensors(dir string) (*Manifest, []Tensor, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	var out []Tensor
	for _, si := range m.Stages {
		ts, err := readShard(dir, si)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range ts {
			out = append(out, t) // sorted below
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, nil, fmt.Errorf("checkpoint %s: tensor %q is in two shards", dir, out[i].Name)
		}
	}
	return m, out, nil
}
