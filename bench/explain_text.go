package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the roofline as a table, one row per kernel family, then
// the step's total, its MFU, what was measured, and the prediction at the
// other precisions (also).
func (r Roofline) WriteText(w io.Writer, also []Roofline) error {
	m := r.Model
	att := "fused (CUDA cores, fp32)"
	if !r.FusedAttention {
		att = "unfused (products and a softmax kernel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "roofline  %s: HBM %.1f TB/s; dense %.0f bf16, %.0f tf32, %.0f fp32 TFLOP/s\n",
		r.Peaks.Name, r.Peaks.HBM/1e12, r.Peaks.BF16/1e12, r.Peaks.TF32/1e12, r.Peaks.FP32/1e12)
	fmt.Fprintf(&b, "model     %s: layers %d, width %d, heads %d, seq %d, vocab %d (padded %d); batch %d; %s; attention %s\n",
		m.Kind, m.Layers, m.Width, m.Heads, m.Seq, m.Vocab, m.PaddedVocab(), r.Batch, r.Precision, att)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "family\tGFLOP\tGB\tpeak\tcompute ms\tmemory ms\tbound\troofline ms\t")
	for _, f := range r.Families {
		fmt.Fprintf(tw, "%s\t%.1f\t%.3f\t%s\t%.3f\t%.3f\t%s\t%.3f\t\n", f.Family, f.FLOPs/1e9, f.Bytes/1e9, f.Peak,
			f.ComputeS*1e3, f.MemoryS*1e3, f.Bound(), f.S*1e3)
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t%.3f\t\n", r.S*1e3)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "MFU       %.1f%% predicted (%.1f model GFLOP per step at the %s products' peak, %.0f TFLOP/s)\n",
		100*r.MFU, r.ModelFLOPs/1e9, r.Precision, r.GEMMPeak/1e12)
	if r.MeasuredS > 0 {
		fmt.Fprintf(&b, "measured  %.3f ms per step, %.1f%% MFU, %.2f× the roofline (%s)\n",
			r.MeasuredS*1e3, 100*r.MeasuredMFU, r.MeasuredS/r.S, r.Measured)
	} else {
		fmt.Fprintf(&b, "measured  nothing ran on a GPU: %s\n", r.Measured)
	}
	for _, o := range also {
		fmt.Fprintf(&b, "also      %s: %.3f ms, %.1f%% MFU predicted\n", o.Precision, o.S*1e3, 100*o.MFU)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
