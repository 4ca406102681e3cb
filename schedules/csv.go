package schedules

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// PyTorch's pipelining (torch.distributed.pipelining, and torchtitan's
// pipeline_parallel_schedule_csv) keeps a schedule as CSV: one row per rank,
// in rank order, one cell per action written [stage][kind][micro-batch]
// (2F0, 1SEND_B3), an empty cell for an idle step. The compute-only form
// (format "compute_only") has F, I, W and B only and is lowered by the
// loader; the compute+comms form (format "compute_comms") also has the
// transfers, which use the same convention as pplaunch's: 1SEND_F0 is sent
// by stage 1, 2RECV_F0 received by stage 2. DualPipeV's rows may hold an
// overlapped pair, (0F3;7B1)OVERLAP_F_B, which pplaunch runs as its two
// actions in order.
//
// torch also writes actions without a micro-batch that pplaunch's executor
// does by itself, so they are read and dropped (torchKinds, with the note
// CSVNotes gives for each): REDUCE_GRAD and WAIT_REDUCE_GRAD (the gradient
// reduction across data-parallel replicas, which the executor starts after
// a stage's last backward and waits for before the optimizer step), FSDP's
// UNSHARD and RESHARD (pplaunch keeps every stage's parameters whole), and
// WAIT_SEND_F and WAIT_SEND_B (every send completes within the step).
// Any other kind is refused.

// torchKinds are the kinds of torch's CSV that pplaunch reads and drops,
// by the group of torchNotes that says what stands for them.
var torchKinds = map[string]int{
	"REDUCE_GRAD": 0, "WAIT_REDUCE_GRAD": 0,
	"UNSHARD": 1, "RESHARD": 1,
	"WAIT_SEND_F": 2, "WAIT_SEND_B": 2,
}

var torchNotes = []string{
	"taken as pplaunch's data-parallel gradient exchange (--dp), which starts after each stage's last backward and completes before the optimizer step",
	"FSDP's, dropped: pplaunch keeps every stage's parameters whole",
	"dropped: every send completes within the step",
}

// ParseCSV reads a schedule in PyTorch's pipeline-order CSV. As with Parse,
// the result is not validated; a file without transfers is compute-only
// (see Lower). Errors name the row (the rank, from 0) and the cell (from 1).
func ParseCSV(text string) (*Schedule, error) {
	s, _, err := parseCSV(text)
	return s, err
}

// CSVNotes says, one line per kind, which of torch's actions a CSV schedule
// holds that pplaunch drops, and what stands for each (see torchKinds): for
// plan and train to print beside the schedule. Text that does not parse
// has no notes (ParseCSV says why).
func CSVNotes(text string) []string {
	_, dropped, err := parseCSV(text)
	if err != nil {
		return nil
	}
	kinds := make([][]string, len(torchNotes))
	count := make([]int, len(torchNotes))
	for _, k := range slices.Sorted(maps.Keys(dropped)) {
		g := torchKinds[k]
		kinds[g], count[g] = append(kinds[g], k), count[g]+dropped[k]
	}
	var notes []string
	for g, ks := range kinds {
		if len(ks) > 0 {
			notes = append(notes, fmt.Sprintf("%s (%d actions): %s", strings.Join(ks, ", "), count[g], torchNotes[g]))
		}
	}
	return notes
}

// parseCSV is ParseCSV, also counting the dropped actions of each kind.
func parseCSV(text string) (*Schedule, map[string]int, error) {
	dropped := map[string]int{}
	rd := csv.NewReader(strings.NewReader(strings.TrimPrefix(text, "\ufeff")))
	rd.FieldsPerRecord = -1
	rd.TrimLeadingSpace = true
	var lines []string
	for row := 0; ; row++ {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("schedule CSV: %w", err)
		}
		var acts []string
		for col, cell := range rec {
			got, drop, err := csvCell(strings.TrimSpace(cell))
			if err != nil {
				return nil, nil, fmt.Errorf("schedule CSV row %d (rank %d) cell %d: %w", row+1, row, col+1, err)
			}
			if drop != "" {
				dropped[drop]++
			}
			acts = append(acts, got...)
		}
		if len(acts) == 0 {
			return nil, nil, fmt.Errorf("schedule CSV row %d (rank %d) has no actions: every rank must hold its stages", row+1, row)
		}
		lines = append(lines, strings.Join(acts, ","))
	}
	if len(lines) == 0 {
		return nil, nil, errors.New("schedule CSV: no rows")
	}
	s, err := Parse(strings.Join(lines, "\n"))
	var pe *ParseError
	if errors.As(err, &pe) {
		return nil, nil, fmt.Errorf("schedule CSV row %d (rank %d): %s", pe.Line, pe.Line-1, pe.Msg)
	}
	return s, dropped, err
}

// csvCell turns one cell into the text-form actions it stands for, or names
// the kind of torch's it drops (torchKinds).
func csvCell(cell string) (acts []string, dropped string, err error) {
	switch {
	case cell == "":
		return nil, "", nil
	case strings.ContainsAny(cell, "#,"):
		return nil, "", fmt.Errorf("%q: an action holds no '#' or ','", cell)
	case strings.HasPrefix(cell, "("):
		end := strings.IndexByte(cell, ')')
		if end < 0 || cell[end+1:] != "OVERLAP_F_B" {
			return nil, "", fmt.Errorf("%q: want an overlapped pair written (F;B)OVERLAP_F_B", cell)
		}
		var out []string
		for sub := range strings.SplitSeq(cell[1:end], ";") {
			if sub = strings.TrimSpace(sub); sub != "" {
				out = append(out, sub)
			}
		}
		return out, "", nil
	}
	i := 0
	for i < len(cell) && cell[i] >= '0' && cell[i] <= '9' {
		i++
	}
	kind := strings.TrimRight(cell[i:], "0123456789")
	if _, ok := torchKinds[kind]; ok && i > 0 {
		return nil, kind, nil
	}
	return []string{cell}, "", nil
}

// FormatCSV writes s in PyTorch's pipeline-order CSV, one row per rank:
// with comms, every action (format "compute_comms"); without, the compute
// actions only (format "compute_only", what torchtitan's
// pipeline_parallel_schedule_csv loads by default).
func FormatCSV(s *Schedule, comms bool) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, l := range s.Ranks {
		var row []string
		for _, a := range l {
			if comms || a.Kind.IsCompute() {
				row = append(row, a.String())
			}
		}
		w.Write(row)
	}
	w.Flush()
	return b.String()
}

// Load reads a schedule file's text, in PyTorch's CSV when name ends in
// .csv and in the text form otherwise, inserts the transfers when it has
// none (Lower), and validates it. Errors start with name.
func Load(name, text string) (*Schedule, error) {
	var s *Schedule
	var err error
	if strings.EqualFold(filepath.Ext(name), ".csv") {
		s, err = ParseCSV(text)
	} else {
		s, err = Parse(text)
	}
	if err == nil {
		err = checkMicroRange(s)
	}
	if err == nil && !s.HasTransfers() {
		s, err = Lower(s)
	}
	if err == nil {
		err = Validate(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// LoadNotes is what Load drops from a schedule file that the user should
// know: CSVNotes for a CSV file (by name, as Load decides), none for the
// text form.
func LoadNotes(name, text string) []string {
	if strings.EqualFold(filepath.Ext(name), ".csv") {
		return CSVNotes(text)
	}
	return nil
}

// Fit checks a loaded schedule against a run of p pipeline ranks, m
// micro-batches and v virtual stages per rank (0: any), and says in the
// terms of the flags what does not fit.
func Fit(s *Schedule, p, m, v int) error {
	var bad []string
	if s.P != p {
		bad = append(bad, fmt.Sprintf("the file has %d ranks, the world has %d pipeline ranks (--pp %d)", s.P, p, p))
	}
	if s.M != m {
		bad = append(bad, fmt.Sprintf("the file has %d micro-batches, the run %d (--microbatches %d)", s.M, m, m))
	}
	if v != 0 && s.V != v {
		bad = append(bad, fmt.Sprintf("the file has %d stages per rank, the run asks for %d (--virtual %d; drop it to take the file's)", s.V, v, v))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}
