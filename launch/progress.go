package launch

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

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

// makeRunDir makes the agent's run directory (progress files), removed at
// the end, in the first of runDirBases that takes it.
func makeRunDir(runID string) (string, error) {
	var err error
	for _, base := range runDirBases(os.Getenv("TMPDIR"), os.Getenv("XDG_RUNTIME_DIR"), isTmpfs("/dev/shm")) {
		var dir string
		if dir, err = os.MkdirTemp(base, "pplaunch-"+runID+"-"); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("run directory: %w", err)
}

// runDirBases are where the run directory may go, best first: $TMPDIR when
// the user set it; else memory (the run directory is small and made anew at
// every launch, and a file made on a busy disk's file system costs the
// launch 0.1 to 0.3 ms a rank, on tmpfs a few µs): $XDG_RUNTIME_DIR, then
// /dev/shm where it is a tmpfs; then the system's temporary directory ("").
func runDirBases(tmpdir, xdgRuntime string, shmTmpfs bool) []string {
	if tmpdir != "" {
		return []string{tmpdir}
	}
	var out []string
	if xdgRuntime != "" {
		out = append(out, xdgRuntime)
	}
	if shmTmpfs {
		out = append(out, "/dev/shm")
	}
	return append(out, "")
}

// isTmpfs reports whether dir is on a tmpfs and this process may write it.
func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC && unix.Access(dir, unix.W_OK) == nil
}

func progressPath(dir string, rank int) string { return contract.ProgressPath(dir, rank) }
