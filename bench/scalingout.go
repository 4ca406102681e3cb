package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// ScalingReport is a whole scaling run: how it ran and one row per size.
type ScalingReport struct {
	Mode  ScalingMode  `json:"mode"`
	Grow  string       `json:"grow"`
	Hosts string       `json:"hosts"` // where the sizes ran, in words
	Title string       `json:"title"` // the same, short
	Train []string     `json:"train_args"`
	Rows  []ScalingRow `json:"rows"`
}

// WriteJSON writes the report as one indented JSON document.
func (r ScalingReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as an aligned table, one line per size.
func (r ScalingReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s scaling (%s grows) on %s\n", r.Mode, r.Grow, r.Hosts)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes×nproc\tworld\tpp×dp\tschedule\tbatch\ttokens/s\tstep s\tpredicted s\tefficiency\tbubble\tsim bubble\ttransfer\tpeak MiB\t")
	for _, x := range r.Rows {
		pred := "-"
		if x.PredictedStepS > 0 {
			pred = fmt.Sprintf("%.3g", x.PredictedStepS)
		}
		fmt.Fprintf(tw, "%d×%d\t%d\t%d×%d\t%s\t%d\t%.0f\t%.3g\t%s\t%.0f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f %s\t\n",
			x.Nodes, x.NProc, x.World, x.PP, x.DP, x.Schedule, x.GlobalBatch, x.TokensPerS, x.StepS, pred,
			100*x.Efficiency, 100*x.BubbleMeasured, 100*x.BubblePredicted, 100*x.TransferShare, float64(x.PeakBytes)/(1<<20), x.PeakKind)
	}
	return tw.Flush()
}

// scalingCSVHeader names the CSV columns, in ScalingRow's JSON names.
var scalingCSVHeader = []string{"nodes", "nproc", "world", "pp", "dp", "schedule", "microbatches", "microbatch_size", "global_batch", "steps",
	"tokens_per_s", "step_s", "predicted_step_s", "efficiency", "bubble_measured", "bubble_predicted",
	"compute_s", "transfer_s", "idle_s", "transfer_share", "peak_bytes", "peak_kind"}

// WriteCSV writes one header line and one line per size.
func (r ScalingReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(scalingCSVHeader); err != nil {
		return err
	}
	i := strconv.Itoa
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, x := range r.Rows {
		rec := []string{i(x.Nodes), i(x.NProc), i(x.World), i(x.PP), i(x.DP), x.Schedule, i(x.Micro), i(x.MicroSize), i(x.GlobalBatch), i(x.Steps),
			f(x.TokensPerS), f(x.StepS), f(x.PredictedStepS), f(x.Efficiency), f(x.BubbleMeasured), f(x.BubblePredicted),
			f(x.ComputeS), f(x.TransferS), f(x.IdleS), f(x.TransferShare), strconv.FormatInt(x.PeakBytes, 10), x.PeakKind}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
