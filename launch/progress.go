package launch

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"

	"github.com/pplaunch/pplaunch/contract"
)

// EnvProgress names the progress file of a rank (contract.EnvProgress): the
// agent reads it when the group fails, to tell a rank's own failure from one
// it only saw, and what a silent rank was last doing.
const EnvProgress = contract.EnvProgress

// newProgressFile creates (or clears) the progress file at path.
func newProgressFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("progress file: %w", err)
	}
	defer f.Close()
	return f.Truncate(contract.ProgressSize)
}

// readProgress reads the rank's last action ("step 1 1F2") and when it
// began, and its failure report, if it wrote them (contract.ReadProgress).
func readProgress(path string) (action string, since time.Time, rep report, hasRep bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	return contract.ReadProgress(f)
}

// procStopped reports whether pid is stopped by a signal (state T).
func procStopped(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State == "T"
}

// runDir is the agent's run directory (progress files), removed at the end.
func makeRunDir(runID string) (string, error) {
	dir, err := os.MkdirTemp("", "pplaunch-"+runID+"-")
	if err != nil {
		return "", fmt.Errorf("run directory: %w", err)
	}
	return dir, nil
}

func progressPath(dir string, rank int) string { return contract.ProgressPath(dir, rank) }
