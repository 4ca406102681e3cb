package checkpoint

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Write prints the report as pplaunch checkpoint compare shows it: the
// match rule tol states, one line per tensor (its shape, largest absolute
// and relative difference, and whether it matches), and the count of those
// that match and differ.
func (r Report) Write(w io.Writer, tol Tolerance) error {
	fmt.Fprintf(w, "match: |a-b| <= %g + %g*|b|\n\n", tol.ATol, tol.RTol)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tensor\tshape\tmax |a-b|\tmax |a-b|/|b|\tresult")
	for _, d := range r.Diffs {
		shape := fmt.Sprint(d.ShapeA)
		if d.ShapeA == nil {
			shape = fmt.Sprint(d.ShapeB)
		}
		abs, rel := fmt.Sprintf("%.3g", d.MaxAbs), fmt.Sprintf("%.3g", d.MaxRel)
		result := "ok"
		switch {
		case d.Problem != "":
			abs, rel, result = "-", "-", "DIFFERS: "+d.Problem
		case d.Outside > 0:
			result = fmt.Sprintf("DIFFERS: %d elements outside tolerance", d.Outside)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, shape, abs, rel, result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	bad := r.Mismatches()
	_, err := fmt.Fprintf(w, "\n%d tensors: %d match, %d differ\n", len(r.Diffs), len(r.Diffs)-bad, bad)
	return err
}
