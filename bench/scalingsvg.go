package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pplaunch/pplaunch/svgdraw"
)

// The picture's frame, in SVG user units (pixels).
const (
	svgW, svgH = 960, 456

	plotTop, plotBottom = 112, 384 // both panels' plot areas, vertically

	curveLeft, curveRight = 74, 428  // the scaling curve's plot area
	barsLeft, barsRight   = 584, 940 // the step-time bars' plot area

	xPad = 26 // space between a plot's edge and its outermost world
)

// Colours: one per series, readable on white and told apart without hue
// alone (the ideal line is dashed, the predicted bar hatched).
const (
	colMeasured   = "#1f4e8c"
	colIdeal      = "#7a7a7a"
	colEfficiency = "#2a8a3e"
	colCompute    = "#4a7fc1"
	colTransfer   = "#e08a3c"
	colIdle       = "#c4c4c4"
	colPredicted  = "#444444"
	colAxis       = "#333333"
	colGrid       = "#e6e6e6"
	colMuted      = "#555555"
)

// WriteScalingSVG draws a scaling run's rows as one SVG 1.1 picture: on the
// left tokens/s against the world size (log2 axis) beside the ideal linear
// growth from the smallest size, with the efficiency on a right-hand axis; on
// the right each size's measured step split into compute, transfer and idle,
// beside the predicted step.
//
// The rows may come in any order: they are drawn sorted by world (a copy;
// rows is left as it is). It writes nothing and returns an error for an empty
// rows, two rows of one world, a world below 1, a mode other than Weak or
// Strong, or a NaN, infinite or negative measurement (naming the row's world
// and the field). The output depends only on its arguments, so it can be
// compared byte for byte.
func WriteScalingSVG(w io.Writer, rows []ScalingRow, title string, mode ScalingMode) error {
	rs, err := sortedScalingRows(rows)
	if err != nil {
		return err
	}
	sub, err := scalingSubtitle(rs, mode)
	if err != nil {
		return err
	}
	var s svgdraw.Doc
	s.Printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		svgW, svgH, svgW, svgH)
	s.Printf(`<defs><pattern id="scaling-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="` + colPredicted + `" stroke-width="1.5"/></pattern></defs>` + "\n")
	s.Printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgW, svgH)
	// A long title gets a smaller font rather than being clipped.
	size := 17.0
	if n := utf8.RuneCountInString(title); n > 90 {
		size = max(9, 17*90/float64(n))
	}
	s.Text(svgW/2, 28, size, "middle", "#000000", `font-weight="bold"`, title)
	s.Text(svgW/2, 48, 12, "middle", colMuted, "", sub)
	drawScalingCurve(&s, rs)
	drawScalingBars(&s, rs)
	s.Printf("</svg>\n")
	_, err = io.WriteString(w, s.String())
	return err
}

// sortedScalingRows checks rows and returns a copy sorted by world.
func sortedScalingRows(rows []ScalingRow) ([]ScalingRow, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("bench scaling svg: no rows to draw")
	}
	for _, r := range rows {
		if err := checkScalingRow(r); err != nil {
			return nil, err
		}
	}
	rs := slices.Clone(rows)
	slices.SortStableFunc(rs, func(a, b ScalingRow) int { return a.World - b.World })
	for i := 1; i < len(rs); i++ {
		if rs[i].World == rs[i-1].World {
			return nil, fmt.Errorf("bench scaling svg: two rows have world %d", rs[i].World)
		}
	}
	return rs, nil
}

// checkScalingRow refuses a row that cannot be drawn.
func checkScalingRow(r ScalingRow) error {
	if r.World < 1 {
		return fmt.Errorf("bench scaling svg: row with world %d: world must be at least 1", r.World)
	}
	fields := []struct {
		name string
		v    float64
	}{
		{"tokens_per_s", r.TokensPerS}, {"step_s", r.StepS}, {"predicted_step_s", r.PredictedStepS},
		{"efficiency", r.Efficiency}, {"bubble_measured", r.BubbleMeasured}, {"bubble_predicted", r.BubblePredicted},
		{"compute_s", r.ComputeS}, {"transfer_s", r.TransferS}, {"idle_s", r.IdleS}, {"transfer_share", r.TransferShare},
	}
	for _, f := range fields {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("bench scaling svg: row with world %d: %s is %v, want a finite value of at least 0", r.World, f.name, f.v)
		}
	}
	return nil
}

// scalingSubtitle names the mode and the schedules the rows ran.
func scalingSubtitle(rs []ScalingRow, mode ScalingMode) (string, error) {
	var sub string
	switch mode {
	case Weak:
		sub = "weak scaling: global batch grows with the world"
	case Strong:
		sub = "strong scaling: fixed global batch"
	default:
		return "", fmt.Errorf("bench scaling svg: mode %q: want %q or %q", mode, Weak, Strong)
	}
	var scheds []string
	for _, r := range rs {
		if r.Schedule != "" && !slices.Contains(scheds, r.Schedule) {
			scheds = append(scheds, r.Schedule)
		}
	}
	switch len(scheds) {
	case 0:
	case 1:
		sub += " · schedule " + scheds[0]
	default:
		sub += " · schedules " + strings.Join(scheds, ", ")
	}
	return sub, nil
}

// drawScalingCurve draws the left panel: tokens/s and efficiency against the
// world size.
func drawScalingCurve(s *svgdraw.Doc, rs []ScalingRow) {
	base := rs[0]
	ideal := make([]float64, len(rs))
	top, effTop := 0.0, 1.0
	for i, r := range rs {
		ideal[i] = base.TokensPerS * float64(r.World) / float64(base.World)
		top = max(top, r.TokensPerS, ideal[i])
		effTop = max(effTop, r.Efficiency)
	}
	bottom := top
	for i, r := range rs {
		bottom = min(bottom, r.TokensPerS, ideal[i])
	}
	if len(rs) == 1 {
		top *= 1.25 // keep the lone point clear of the efficiency dot at 100%
	}
	// Tokens/s on a log axis as the worlds are: the ideal, linear in the
	// world, is then a straight line (of slope one), and the measured
	// curve's distance below it is the efficiency at every size alike.
	ticks := svgdraw.LogTicks(bottom/1.1, top*1.1)
	yTok := svgdraw.LogScale(ticks[0], ticks[len(ticks)-1], plotBottom, plotTop)
	effTicks := []float64{0, 0.2, 0.4, 0.6, 0.8, 1}
	if effTop > 1 {
		effTicks = svgdraw.NiceTicks(effTop, 5)
	}
	yEff := svgdraw.LinearScale(0, effTicks[len(effTicks)-1], plotBottom, plotTop)
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = svgdraw.Log2Pos(r.World, base.World, rs[len(rs)-1].World, curveLeft+xPad, curveRight-xPad)
	}
	s.Text((curveLeft+curveRight)/2, 74, 13, "middle", "#000000", `font-weight="bold"`, "Throughput")
	legend := []legendItem{{"line", colMeasured, "measured"}, {"dashed", colIdeal, "ideal (linear in world)"}}
	if len(rs) == 1 {
		legend = legend[:1] // one size has no ideal to draw beyond itself
	}
	drawLegend(s, curveLeft, 90, append(legend, legendItem{"line", colEfficiency, "efficiency →"}))
	yAxis(s, curveLeft, curveRight, ticks, yTok, svgdraw.CompactNum, "tokens/s (log scale)", true)
	rightAxis(s, curveRight, effTicks, yEff)
	worldLabels(s, rs, xs)
	s.Series(xs, ideal, yTok, colIdeal, `stroke-dasharray="6 4"`, false)
	tok := column(rs, func(r ScalingRow) float64 { return r.TokensPerS })
	s.Series(xs, tok, yTok, colMeasured, "", true)
	eff := column(rs, func(r ScalingRow) float64 { return r.Efficiency })
	s.Series(xs, eff, yEff, colEfficiency, "", true)
	shown := svgdraw.ThinLabels(xs, 32)
	for i := range rs {
		if !shown[i] {
			continue
		}
		ye, yt := yEff(eff[i]), yTok(tok[i])
		// Each label on the side of its dot away from the other dot, so
		// that they never cover each other; near the plot's edge, inside.
		effAbove := ye <= yt
		if effAbove && ye-9 < plotTop+4 || !effAbove && yt+18 > plotBottom-4 {
			effAbove = !effAbove
		}
		effY, tokY := ye+18, yt-9
		if effAbove {
			effY, tokY = ye-9, yt+18
		}
		s.HaloText(xs[i], effY, 11, "middle", colEfficiency, fmt.Sprintf("%.0f%%", 100*eff[i]))
		s.HaloText(xs[i], tokY, 10, "middle", colMeasured, svgdraw.CompactNum(tok[i]))
	}
}

// drawScalingBars draws the right panel: each size's measured step split
// into compute, transfer and idle, beside its predicted step.
func drawScalingBars(s *svgdraw.Doc, rs []ScalingRow) {
	top := 0.0
	for _, r := range rs {
		top = max(top, r.StepS, r.ComputeS+r.TransferS+r.IdleS, r.PredictedStepS)
	}
	secs := svgdraw.NiceTicks(top, 5)
	scale, unit := timeUnit(secs[len(secs)-1])
	ticks := make([]float64, len(secs))
	for i, t := range secs {
		ticks[i] = t * scale
	}
	y := svgdraw.LinearScale(0, secs[len(secs)-1], plotBottom, plotTop)
	s.Text((barsLeft+barsRight)/2, 74, 13, "middle", "#000000", `font-weight="bold"`, "Step time")
	drawLegend(s, barsLeft, 90, []legendItem{
		{"box", colCompute, "compute"}, {"box", colTransfer, "transfer"}, {"box", colIdle, "idle"},
		{"hatch", colPredicted, "predicted"},
	})
	yAxis(s, barsLeft, barsRight, ticks, svgdraw.LinearScale(0, ticks[len(ticks)-1], plotBottom, plotTop), svgdraw.CompactNum, unit+" per step", false)
	group := float64(barsRight-barsLeft) / float64(len(rs))
	bw, pw := min(0.42*group, 46), min(0.22*group, 22)
	xs := make([]float64, len(rs))
	for i, r := range rs {
		c := barsLeft + (float64(i)+0.5)*group
		xs[i] = c
		left := c - (bw+3+pw)/2
		base := float64(plotBottom)
		for _, part := range []struct {
			v   float64
			col string
		}{{r.ComputeS, colCompute}, {r.TransferS, colTransfer}, {r.IdleS, colIdle}} {
			if part.v <= 0 {
				continue
			}
			h := float64(plotBottom) - y(part.v)
			s.Printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, base-h, bw, h, part.col)
			base -= h
		}
		if group >= 44 {
			s.Text(left+bw/2, base-4, 10, "middle", colAxis, "", svgdraw.CompactNum(r.StepS*scale))
		}
		if r.PredictedStepS > 0 {
			h := float64(plotBottom) - y(r.PredictedStepS)
			s.Printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#scaling-hatch)" stroke="%s" stroke-width="1.2"/>`+"\n",
				left+bw+3, float64(plotBottom)-h, pw, h, colPredicted)
		}
	}
	worldLabels(s, rs, xs)
}

// column picks one value of every row.
func column(rs []ScalingRow, f func(ScalingRow) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

// timeUnit picks the unit for a time axis whose top tick is top seconds, and
// the factor from seconds to it.
func timeUnit(top float64) (float64, string) {
	switch {
	case top >= 1:
		return 1, "seconds"
	case top >= 1e-3:
		return 1e3, "ms"
	default:
		return 1e6, "µs"
	}
}

// legendItem is one legend entry: a swatch kind ("line", "dashed", "box" or
// "hatch"), its colour and its label.
type legendItem struct{ kind, col, label string }

// drawLegend writes items in one row from x, centred vertically on y.
func drawLegend(s *svgdraw.Doc, x, y float64, items []legendItem) {
	for _, it := range items {
		switch it.kind {
		case "line", "dashed":
			dash := ""
			if it.kind == "dashed" {
				dash = ` stroke-dasharray="6 4"`
			}
			s.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", x, y, x+20, y, it.col, dash)
		case "box":
			s.Printf(`<rect x="%.1f" y="%.1f" width="14" height="11" fill="%s"/>`+"\n", x+3, y-5.5, it.col)
		case "hatch":
			s.Printf(`<rect x="%.1f" y="%.1f" width="14" height="11" fill="url(#scaling-hatch)" stroke="%s" stroke-width="1.2"/>`+"\n", x+3, y-5.5, it.col)
		}
		s.Text(x+25, y+4, 11, "start", colAxis, "", it.label)
		x += 25 + svgdraw.TextWidth(it.label, 11) + 16
	}
}

// yAxis writes a left value axis from x0 with ticks (placed by y, labelled by
// format), its title, and a grid across to x1 when grid is set.
func yAxis(s *svgdraw.Doc, x0, x1 float64, ticks []float64, y func(float64) float64, format func(float64) string, title string, grid bool) {
	for _, t := range ticks {
		p := y(t)
		if grid && t > 0 {
			s.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, p, x1, p, colGrid)
		}
		s.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0-4, p, x0, p, colAxis)
		s.Text(x0-7, p+4, 11, "end", colAxis, "", format(t))
	}
	s.Printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x0, plotTop, x0, plotBottom, colAxis)
	s.Printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x0, plotBottom, x1, plotBottom, colAxis)
	mid := (plotTop + plotBottom) / 2.0
	s.Text(x0-50, mid, 12, "middle", colAxis, fmt.Sprintf(`transform="rotate(-90 %.1f %.1f)"`, x0-50, mid), title)
}

// rightAxis writes the efficiency axis (fractions shown as percentages) at x.
func rightAxis(s *svgdraw.Doc, x float64, ticks []float64, y func(float64) float64) {
	s.Printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, plotTop, x, plotBottom, colEfficiency)
	for _, t := range ticks {
		p := y(t)
		s.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, p, x+4, p, colEfficiency)
		s.Text(x+7, p+4, 11, "start", colEfficiency, "", fmt.Sprintf("%.0f%%", 100*t))
	}
	mid := (plotTop + plotBottom) / 2.0
	s.Text(x+50, mid, 12, "middle", colEfficiency, fmt.Sprintf(`transform="rotate(90 %.1f %.1f)"`, x+50, mid), "efficiency")
}

// worldLabels writes under the plot, at xs, each row's world and below it its
// pp×dp layout, leaving out labels that would overlap, and the axis title
// centred under the ticks.
func worldLabels(s *svgdraw.Doc, rs []ScalingRow, xs []float64) {
	gap := 8.0
	for _, r := range rs {
		gap = max(gap, svgdraw.TextWidth(strconv.Itoa(r.World), 11)+8, svgdraw.TextWidth(layoutLabel(r), 9)+6)
	}
	shown := svgdraw.ThinLabels(xs, gap)
	for i, r := range rs {
		s.Printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", xs[i], plotBottom, xs[i], plotBottom+4, colAxis)
		if shown[i] {
			s.Text(xs[i], plotBottom+17, 11, "middle", colAxis, "", strconv.Itoa(r.World))
			s.Text(xs[i], plotBottom+30, 9, "middle", colMuted, "", layoutLabel(r))
		}
	}
	mid := (xs[0] + xs[len(xs)-1]) / 2
	s.Text(mid, plotBottom+50, 12, "middle", colAxis, "", "world size in ranks (pp×dp layout below)")
}

// layoutLabel is a row's pipeline × data-parallel layout, such as 4×2.
func layoutLabel(r ScalingRow) string { return fmt.Sprintf("%d×%d", r.PP, r.DP) }
