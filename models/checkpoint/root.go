package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A checkpoint root is the directory of one run's step-NNNNNN checkpoints. The
// functions here keep it usable: check that it can be written before a run
// relies on it, find another run's checkpoints in it, clear them, and remove
// the temporary files of saves that were killed.

// trashPrefix names the directory Clear moves old checkpoints into before it
// deletes them.
const trashPrefix = ".cleared-"

// CheckWritable creates root if needed and writes, syncs and removes a file in
// it, so that a root that cannot hold checkpoints (a path under a regular
// file, no permission, a read-only or full filesystem) is found before a run
// depends on it.
func CheckWritable(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(root, ".write-check-*")
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("pplaunch checkpoint root write check\n"))
	serr := f.Sync()
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	if err := errors.Join(werr, serr, cerr, rerr); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return nil
}

// stepDirs lists root's step-NNNNNN directories, by increasing step. A
// missing root has none.
func stepDirs(root string) ([]int, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint root: %w", err)
	}
	var steps []int
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), "step-")
		step, err := strconv.Atoi(digits)
		if ok && err == nil && step >= 0 && e.IsDir() && e.Name() == filepath.Base(StepDir(root, step)) {
			steps = append(steps, step)
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// Complete lists the steps of root's checkpoints that have a manifest (were
// committed), by increasing step, without reading them.
func Complete(root string) ([]int, error) {
	steps, err := stepDirs(root)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, s := range steps {
		if _, err := os.Stat(filepath.Join(StepDir(root, s), ManifestName)); err == nil {
			out = append(out, s)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	return out, nil
}

// Clear removes every step directory under root, complete or not. It first
// moves them, oldest first, into one hidden directory of root (each move a
// rename, atomic) and syncs root, then deletes that directory: a crash
// part-way leaves only a suffix of the old run's newest checkpoints, never a
// mix with checkpoints written afterwards, and the next Clear or CleanTemps
// deletes what was moved aside.
func Clear(root string) error {
	steps, err := stepDirs(root)
	if err != nil {
		return err
	}
	if len(steps) > 0 {
		trash, err := os.MkdirTemp(root, trashPrefix+"*")
		if err != nil {
			return fmt.Errorf("checkpoint root: %w", err)
		}
		for _, s := range steps {
			dir := StepDir(root, s)
			if err := os.Rename(dir, filepath.Join(trash, filepath.Base(dir))); err != nil {
				return fmt.Errorf("checkpoint root: %w", err)
			}
		}
		if err := syncDir(root); err != nil {
			return fmt.Errorf("checkpoint root: %w", err)
		}
	}
	return removeTrash(root)
}

// removeTrash deletes what Clear moved aside.
func removeTrash(root string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint root: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), trashPrefix) {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return fmt.Errorf("checkpoint root: %w", err)
			}
		}
	}
	return nil
}

// IsTemp reports whether a file name is one of writeAtomic's temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// CleanTemps removes the temporary files that killed saves left in root's
// step directories, except in skip (the directory a save is writing now,
// whose temporary files may be another writer's), and what an interrupted
// Clear left. It returns the files removed. Call it only when no save of
// another step is in flight.
func CleanTemps(root, skip string) ([]string, error) {
	steps, err := stepDirs(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, s := range steps {
		dir := StepDir(root, s)
		if skip != "" && filepath.Clean(dir) == filepath.Clean(skip) {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return removed, fmt.Errorf("checkpoint: %w", err)
		}
		for _, e := range entries {
			if IsTemp(e.Name()) && e.Type().IsRegular() {
				p := filepath.Join(dir, e.Name())
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return removed, fmt.Errorf("checkpoint: %w", err)
				}
				removed = append(removed, p)
			}
		}
	}
	return removed, removeTrash(root)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
