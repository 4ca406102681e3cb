package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/plan"
)

// writeProfile writes p to path atomically, so that a reader never sees
// half a profile.
func writeProfile(path string, p *plan.Profile) error {
	return WriteFileAtomic(path, p.Write)
}

// WriteFileAtomic writes path through a temporary file in the same
// directory and a rename.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pplaunch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
