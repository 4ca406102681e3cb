package report

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/pplaunch/pplaunch/contract"
)

// jsonLines is the --metrics file: every record (step, evaluation,
// checkpoint, re-layout) as a JSON line, in the order reported. A failed
// write is kept, the later records are dropped, and Finish reports it.
type jsonLines struct {
	f   *os.File
	enc *json.Encoder
	err error // the first failed write
}

// openJSONLines creates cfg.Metrics (nil without it). An elastic job's
// re-formed world goes on with the records of the worlds before it.
func openJSONLines(cfg Config) (*jsonLines, error) {
	if cfg.Metrics == "" {
		return nil, nil
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if rc := cfg.getenv(contract.EnvRestartCount); cfg.getenv(contract.EnvElasticBase) != "" && rc != "" && rc != "0" {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(cfg.Metrics, flags, 0o666)
	if err != nil {
		return nil, err
	}
	return &jsonLines{f: f, enc: json.NewEncoder(f)}, nil
}

func (j *jsonLines) write(rec any) {
	if j != nil && j.err == nil {
		j.err = j.enc.Encode(rec)
	}
}

// finish closes the file: the first failed write, or the close's error.
func (j *jsonLines) finish() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := errors.Join(j.err, j.f.Close())
	j.f = nil
	return err
}

func (j *jsonLines) close() {
	if j != nil && j.f != nil {
		j.f.Close()
		j.f = nil
	}
}
