package launch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// EnvProgress names the progress file of a rank: a small file in the agent's
// run directory that a pplaunch rank maps and overwrites in place with the
// action it is about to run, and at the end with its account of its failure
// (the writer and the layout: ranks.Progress). The agent reads it when the
// group fails, to tell a rank's own failure from one it only saw, and what a
// silent rank was last doing.
const EnvProgress = "PPLAUNCH_PROGRESS_FILE"

// progressSize and progressActionSize are ranks.ProgressSize and its action
// record (this package may not import ranks; cmd/pplaunch's test checks that
// both sides agree).
const (
	progressSize       = 4096
	progressActionSize = 256
)

// newProgressFile creates (or clears) the progress file at path.
func newProgressFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("progress file: %w", err)
	}
	defer f.Close()
	return f.Truncate(progressSize)
}

// readRecord reads one record (see ranks.Progress), retrying while the writer
// is in the middle of it. ok is false for an empty or unreadable record.
func readRecord(f *os.File, off, size int64) ([]byte, bool) {
	buf := make([]byte, size)
	for range 100 {
		if n, err := f.ReadAt(buf, off); n != len(buf) && err != nil {
			return nil, false
		}
		begin := binary.LittleEndian.Uint32(buf)
		end := binary.LittleEndian.Uint32(buf[size-4:])
		n := binary.LittleEndian.Uint32(buf[4:])
		if begin == 0 {
			return nil, false
		}
		if begin == end && int64(n) <= size-12 {
			return bytes.Clone(buf[8 : 8+n]), true
		}
	}
	return nil, false
}

// readProgress reads the rank's last action ("step 1 1F2", when it began, the
// pid that wrote it) and its failure report, if it wrote them.
func readProgress(path string) (action string, since time.Time, rep report, hasRep bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if b, ok := readRecord(f, 0, progressActionSize); ok {
		fields := strings.SplitN(string(b), " ", 3)
		if len(fields) == 3 {
			if ns, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
				since, action = time.Unix(0, ns), fields[2]
			}
		}
	}
	if b, ok := readRecord(f, progressActionSize, progressSize-progressActionSize); ok {
		rep.Peer = -1
		hasRep = json.Unmarshal(b, &rep) == nil && rep.Class != ""
	}
	return
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

func progressPath(dir string, rank int) string {
	return filepath.Join(dir, "rank."+strconv.Itoa(rank)+".progress")
}
