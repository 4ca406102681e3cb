package runconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/ranks"
)

// Output is a file rank 0 writes, named by the flag that gave its path.
type Output struct{ Flag, Path string }

// CheckFiles checks, before any rank starts, the files the run cfg reads
// (its corpus, --init-from) and, for a world of size ranks, those rank 0
// writes: the checkpoint directory and each output's directory (an empty
// path is not asked for). With size 0 the world is not known yet, and rank
// 0 may be on another node: what it writes is its own to check.
func CheckFiles(cfg ranks.TrainConfig, size int, outputs []Output) error {
	if _, err := ranks.LoadData(cfg); err != nil {
		return err
	}
	if err := CheckInitFrom(cfg.InitFrom); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	if err := ranks.CheckCheckpointDir(cfg); err != nil {
		return err
	}
	for _, o := range outputs {
		if o.Path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(o.Path)); err != nil {
			return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("%s %s: %s is not a directory", o.Flag, o.Path, filepath.Dir(o.Path))
		}
	}
	return nil
}

// CheckInitFrom checks that --init-from path names a weights file that can
// be read, and not a pplaunch checkpoint, whose shards hold one stage each
// (and optimizer state): --resume continues from those.
func CheckInitFrom(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--init-from %s does not exist", path)
	} else if err != nil {
		return fmt.Errorf("--init-from: %w", err)
	}
	dir := path
	if !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	if _, err := checkpoint.ReadManifest(dir); err == nil {
		return fmt.Errorf("--init-from %s is a pplaunch checkpoint (%s holds its manifest), whose shards hold one stage each: to continue that run, give --resume --checkpoint-dir %s; --init-from takes a whole model's weights in one safetensors file (nanoGPT's state_dict, or Hugging Face's GPT-2 model.safetensors)",
			path, dir, filepath.Dir(dir))
	}
	if fi.IsDir() {
		return fmt.Errorf("--init-from %s is a directory: give a safetensors file of the whole model's weights", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--init-from: %w", err)
	}
	return f.Close()
}
