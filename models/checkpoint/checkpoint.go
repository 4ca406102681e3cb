package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/models/safetensors"
)

// FormatVersion is the manifest format this package writes and reads.
const FormatVersion = 1

// ManifestName is the manifest's file name inside a checkpoint directory.
const ManifestName = "manifest.json"

// ParamSlot is the name prefix (before the "/") of model parameters in a shard.
const ParamSlot = "param"

// ErrNoCheckpoint is returned by Latest when a root holds no complete checkpoint.
var ErrNoCheckpoint = errors.New("no complete checkpoint")

// Tensor is a named float32 tensor, row-major.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Shard is what one pipeline stage saves: its parameters and its optimizer state.
type Shard struct {
	// Params are the stage's model parameters, saved as "param/<name>".
	Params []Tensor
	// State maps an optimizer slot ("adam_m", "adam_v", "momentum", ...) to one tensor
	// per parameter, same names and shapes as Params, saved as "<slot>/<name>".
	State map[string][]Tensor
}

// DataPosition is where the data stream resumes: the batches of step Step onward,
// drawn with Seed (see models/data).
type DataPosition struct {
	Seed uint64 `json:"seed"`
	Step int    `json:"step"`
}

// Manifest describes a checkpoint. The caller fills everything but Format and
// Stages; Commit fills those from the shards on disk.
type Manifest struct {
	Format int `json:"format"`
	// Step is the number of optimizer steps completed.
	Step int          `json:"step"`
	Data DataPosition `json:"data"`
	// Model is the model configuration, as the caller's own JSON object; loading
	// compares it with the caller's.
	Model     json.RawMessage `json:"model"`
	Optimizer string          `json:"optimizer"`
	NumStages int             `json:"num_stages"`
	// Extra holds any other state the caller wants back (learning-rate schedule, ...).
	Extra  json.RawMessage `json:"extra,omitempty"`
	Stages []StageInfo     `json:"stages"`
}

// StageInfo describes one stage's shard.
type StageInfo struct {
	Stage  int    `json:"stage"`
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Params are the parameter names the stage holds (without "param/"), sorted.
	Params []string `json:"params"`
	// State are the optimizer slots saved beside them, sorted.
	State []string `json:"state"`
}

// ShardFile is the file name of a stage's shard.
func ShardFile(stage, stages int) string {
	return fmt.Sprintf("stage-%03d-of-%03d.safetensors", stage, stages)
}

// StepDir is the checkpoint directory for a step under root: root/step-000100.
func StepDir(root string, step int) string {
	return filepath.Join(root, fmt.Sprintf("step-%06d", step))
}

// WriteShard saves one stage's shard into dir (created if needed), atomically, and
// returns its entry for the manifest. It first removes any manifest in dir, so the
// directory counts as incomplete until Commit writes a new one.
func WriteShard(dir string, stage, stages int, sh Shard) (StageInfo, error) {
	if stage < 0 || stage >= stages {
		return StageInfo{}, fmt.Errorf("checkpoint %s: stage %d out of range for %d stages", dir, stage, stages)
	}
	ts, err := sh.tensors()
	if err != nil {
		return StageInfo{}, fmt.Errorf("checkpoint %s: stage %d: %w", dir, stage, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return StageInfo{}, fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, ManifestName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return StageInfo{}, fmt.Errorf("checkpoint: %w", err)
	}
	meta := map[string]string{"format": "pt", "pplaunch_stage": strconv.Itoa(stage), "pplaunch_stages": strconv.Itoa(stages)}
	size, sum, err := writeAtomic(dir, ShardFile(stage, stages), func(w io.Writer) error {
		return safetensors.Encode(w, ts, meta)
	})
	if err != nil {
		return StageInfo{}, err
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return stageInfo(stage, stages, names, size, sum), nil
}

// stageInfo describes a shard from its tensors' full names.
func stageInfo(stage, stages int, names []string, size int64, sum []byte) StageInfo {
	info := StageInfo{Stage: stage, File: ShardFile(stage, stages), Size: size, SHA256: hex.EncodeToString(sum), Params: []string{}, State: []string{}}
	for _, n := range names {
		slot, pname, _ := strings.Cut(n, "/")
		if slot == ParamSlot {
			info.Params = append(info.Params, pname)
		} else if !slices.Contains(info.State, slot) {
			info.State = append(info.State, slot)
		}
	}
	sort.Strings(info.Params)
	sort.Strings(info.State)
	return info
}

// tensors validates a shard and names its tensors for the file.
func (sh Shard) tensors() ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	shapes := map[string][]int{}
	for _, p := range sh.Params {
		if err := p.check(); err != nil {
			return nil, err
		}
		if _, dup := shapes[p.Name]; dup {
			return nil, fmt.Errorf("duplicate parameter %q", p.Name)
		}
		shapes[p.Name] = p.Shape
		out = append(out, safetensors.FromFloat32(ParamSlot+"/"+p.Name, p.Shape, p.Data))
	}
	for slot, ts := range sh.State {
		if slot == "" || slot == ParamSlot || strings.Contains(slot, "/") {
			return nil, fmt.Errorf("invalid optimizer slot name %q", slot)
		}
		seen := map[string]bool{}
		for _, t := range ts {
			if err := t.check(); err != nil {
				return nil, fmt.Errorf("%s: %w", slot, err)
			}
			shape, ok := shapes[t.Name]
			switch {
			case !ok:
				return nil, fmt.Errorf("optimizer slot %s holds %q, which is not a parameter of the stage", slot, t.Name)
			case !slices.Equal(shape, t.Shape):
				return nil, fmt.Errorf("optimizer slot %s: %q has shape %v, the parameter %v", slot, t.Name, t.Shape, shape)
			case seen[t.Name]:
				return nil, fmt.Errorf("optimizer slot %s: duplicate %q", slot, t.Name)
			}
			seen[t.Name] = true
			out = append(out, safetensors.FromFloat32(slot+"/"+t.Name, t.Shape, t.Data))
		}
		if len(seen) != len(shapes) {
			return nil, fmt.Errorf("optimizer slot %s holds %d tensors for %d parameters", slot, len(seen), len(shapes))
		}
	}
	return out, nil
}

func (t Tensor) check() error {
	n := 1
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
		n *= d
	}
	switch {
	case t.Name == "":
		return errors.New("tensor with an empty name")
	case n != len(t.Data):
		return fmt.Errorf("tensor %q: shape %v holds %d elements, data has %d", t.Name, t.Shape, n, len(t.Data))
	}
	return nil
}

// Commit completes the checkpoint in dir by writing its manifest, atomically. The
// stage entries are m.Stages when it holds one per stage (the StageInfo each rank's
// WriteShard returned, gathered by the committing rank); when m.Stages is empty,
// Commit reads the m.NumStages shards from dir (all written by WriteShard) and
// describes them itself. It refuses a missing shard or a parameter held by two stages.
func Commit(dir string, m Manifest) error {
	if m.NumStages < 1 {
		return fmt.Errorf("checkpoint %s: manifest needs num_stages >= 1, got %d", dir, m.NumStages)
	}
	if len(m.Model) > 0 && !json.Valid(m.Model) {
		return fmt.Errorf("checkpoint %s: model config is not valid JSON", dir)
	}
	m.Format = FormatVersion
	if len(m.Stages) == 0 {
		for s := 0; s < m.NumStages; s++ {
			path := filepath.Join(dir, ShardFile(s, m.NumStages))
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("checkpoint %s: stage %d: %w", dir, s, err)
			}
			f, err := safetensors.Decode(b)
			if err != nil {
				return fmt.Errorf("checkpoint %s: %w", path, err)
			}
			var names []string
			for _, t := range f.Tensors {
				names = append(names, t.Name)
			}
			sum := sha256.Sum256(b)
			m.Stages = append(m.Stages, stageInfo(s, m.NumStages, names, int64(len(b)), sum[:]))
		}
	}
	if err := m.check(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint %s: manifest: %w", dir, err)
	}
	_, _, err = writeAtomic(dir, ManifestName, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	return err
}

// Save writes a whole checkpoint from one process: every stage's shard, then the
// manifest. m.NumStages and m.Stages are set from shards.
func Save(dir string, m Manifest, shards []Shard) error {
	m.NumStages = len(shards)
	m.Stages = nil
	for s, sh := range shards {
		info, err := WriteShard(dir, s, len(shards), sh)
		if err != nil {
			return err
		}
		m.Stages = append(m.Stages, info)
	}
	return Commit(dir, m)
}

// writeAtomic writes dir/name through a temporary file in dir: write, fsync, rename,
// fsync dir. A crash leaves either the old file or the new one, never a torn one. It
// returns the file's size and SHA-256.
func writeAtomic(dir, name string, write func(io.Writer) error) (size int64, sum []byte, err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return 0, nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("checkpoint: writing %s: %w", filepath.Join(dir, name), err)
		}
	}()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	if err := write(cw); err != nil {
		return 0, nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		return 0, nil, err
	}
	if err := f.Sync(); err != nil {
		return 0, nil, err
	}
	if err := f.Close(); err != nil {
		return 0, nil, err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return 0, nil, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return 0, nil, err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return 0, nil, err
	}
	return cw.n, h.Sum(nil), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

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
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, Shard{}, err
	}
	if err := want.checkManifest(dir, m); err != nil {
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
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, Shard{}, err
	}
	if err := want.checkManifest(dir, m); err != nil {
		return nil, Shard{}, err
	}
	byName := map[string]Tensor{}
	for _, si := range m.Stages {
		ts, err := readShard(dir, si)
		if err != nil {
			return nil, Shard{}, err
		}
		for k, v := range ts {
			byName[k] = v
		}
	}
	sh, err := assemble(dir, m.Stages, byName, want.Params)
	return m, sh, err
}

// assemble builds a Shard from the tensors of the given stages, checking them against
// the manifest's lists and the caller's expected parameters. where names the file or
// directory in errors.
func assemble(where string, stages []StageInfo, byName map[string]Tensor, want []TensorSpec) (Shard, error) {
	var names, slots []string
	for _, si := range stages {
		names = append(names, si.Params...)
		slots = si.State // every stage of one checkpoint has the same optimizer slots
	}
	sort.Strings(names)
	if want != nil {
		var wantNames []string
		for _, w := range want {
			wantNames = append(wantNames, w.Name)
		}
		sorted := slices.Sorted(slices.Values(wantNames))
		if !slices.Equal(sorted, names) {
			return Shard{}, fmt.Errorf("checkpoint %s: parameters differ: %s", where, nameDiff(names, sorted))
		}
		names = wantNames
	}
	sh := Shard{State: map[string][]Tensor{}}
	for i, n := range names {
		p, ok := byName[ParamSlot+"/"+n]
		if !ok {
			return Shard{}, fmt.Errorf("checkpoint %s: manifest lists parameter %q, the shard lacks it", where, n)
		}
		if want != nil && !slices.Equal(p.Shape, want[i].Shape) {
			return Shard{}, fmt.Errorf("checkpoint %s: parameter %q has shape %v, this run expects %v", where, n, p.Shape, want[i].Shape)
		}
		sh.Params = append(sh.Params, Tensor{Name: n, Shape: p.Shape, Data: p.Data})
		for _, slot := range slots {
			s, ok := byName[slot+"/"+n]
			if !ok {
				return Shard{}, fmt.Errorf("checkpoint %s: optimizer slot %s lacks parameter %q", where, slot, n)
			}
			sh.State[slot] = append(sh.State[slot], Tensor{Name: n, Shape: s.Shape, Data: s.Data})
		}
	}
	if total := len(names) * (1 + len(slots)); total != len(byName) {
		return Shard{}, fmt.Errorf("checkpoint %s: %d tensors in the shards, the manifest accounts for %d", where, len(byName), total)
	}
	return sh, nil
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
