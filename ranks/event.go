package ranks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// EventRecord is work between steps that rank 0 reports apart from the
// step, so that a step's record measures the step alone: an evaluation of
// the validation split, or a checkpoint written (--metrics writes it as a
// JSON line beside the steps').
type EventRecord struct {
	// Record is "eval", "checkpoint" or "rebalance" (a step's record says
	// "step").
	Record string `json:"record"`
	// Step is the step it follows, counted from 1 as the console counts.
	Step int `json:"step"`
	// Seconds is rank 0's wall time for it, from its start until rank 0
	// has the mean validation loss, or the checkpoint's manifest is
	// committed.
	Seconds float64 `json:"seconds"`
	// ValLoss and Batches are the evaluation's; Dir is the checkpoint's
	// directory.
	ValLoss *float64 `json:"val_loss,omitempty"`
	Batches int      `json:"batches,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	// A rebalance's (--rebalance; Seconds is the move's): the blocks per
	// stage before and after, the predicted step with each (the schedule
	// simulated with the agreed measured costs), and rank 0's median measured
	// step time over the window the decision was made on; Back when the move
	// returns to a cut that ran faster, MeasuredBackS its step as simulated
	// with the block times measured while it ran.
	CutBefore        []int   `json:"cut_before,omitempty"`
	Cut              []int   `json:"cut,omitempty"`
	PredictedBeforeS float64 `json:"predicted_step_s_before,omitempty"`
	PredictedS       float64 `json:"predicted_step_s,omitempty"`
	MeasuredStepS    float64 `json:"measured_step_s,omitempty"`
	Back             bool    `json:"back,omitempty"`
	MeasuredBackS    float64 `json:"measured_step_s_back,omitempty"`
}

// The record kinds of --metrics' lines.
const (
	RecordStep       = "step"
	RecordEval       = "eval"
	RecordCheckpoint = "checkpoint"
	RecordRebalance  = "rebalance"
)

// ReadStepRecords reads the step records of --metrics' JSON lines, leaving
// out the evaluations' and checkpoints' (a line without "record" is a
// step's, as files written before the other records existed hold only
// steps; their steps count from 0).
func ReadStepRecords(r io.Reader) ([]StepRecord, error) {
	var out []StepRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec StepRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if rec.Record == "" || rec.Record == RecordStep {
			out = append(out, rec)
		}
	}
	return out, sc.Err()
}
