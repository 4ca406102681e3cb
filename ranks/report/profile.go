package report

import (
	"fmt"
	"io"

	"github.com/google/renameio/v2"

	"github.com/pplaunch/pplaunch/plan"
)

// writeProfile writes p to path atomically, so that a reader never sees
// half a profile.
func writeProfile(path string, p *plan.Profile) error {
	return WriteFileAtomic(path, p.Write)
}

// WriteFileAtomic writes path through a temporary file and a rename
// (renameio: the file is synced before the rename, so a crash leaves the old
// file or the new one), readable by all as a file os.Create makes (0644 less
// the umask).
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	f, err := renameio.NewPendingFile(path, renameio.WithPermissions(0o644))
	if err != nil {
		return err
	}
	defer f.Cleanup()
	if err := write(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.CloseAtomicallyReplace()
}
