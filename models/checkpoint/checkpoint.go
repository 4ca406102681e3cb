package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// Manifest describes a checkpoint. The caller fills everything but Format (set by
// Commit) and Stages (the entries WriteShard returned, or left empty for Commit to
// read the shards on disk).
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
