package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
	var s svgDoc
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		svgW, svgH, svgW, svgH)
	s.printf(`<defs><pattern id="scaling-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="` + colPredicted + `" stroke-width="1.5"/></pattern></defs>` + "\n")
	s.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgW, svgH)
	// A long title gets a smaller font rather than being clipped.
	size := 17.0
	if n := utf8.RuneCountInString(title); n > 90 {
		size = max(9, 17*90/float64(n))
	}
	s.text(svgW/2, 28, size, "middle", "#000000", `font-weight="bold"`, title)
	s.text(svgW/2, 48, 12, "middle", colMuted, "", sub)
	drawScalingCurve(&s, rs)
	drawScalingBars(&s, rs)
	s.printf("</svg>\n")
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
func drawScalingCurve(s *svgDoc, rs []ScalingRow) {
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
	ticks := logTicks(bottom/1.1, top*1.1)
	yTok := logScale(ticks[0], ticks[len(ticks)-1], plotBottom, plotTop)
	effTicks := []float64{0, 0.2, 0.4, 0.6, 0.8, 1}
	if effTop > 1 {
		effTicks = niceTicks(effTop, 5)
	}
	yEff := linearScale(0, effTicks[len(effTicks)-1], plotBottom, plotTop)
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = log2Pos(r.World, base.World, rs[len(rs)-1].World, curveLeft+xPad, curveRight-xPad)
	}
	s.text((curveLeft+curveRight)/2, 74, 13, "middle", "#000000", `font-weight="bold"`, "Throughput")
	legend := []legendItem{{"line", colMeasured, "measured"}, {"dashed", colIdeal, "ideal (linear in world)"}}
	if len(rs) == 1 {
		legend = legend[:1] // one size has no ideal to draw beyond itself
	}
	s.legend(curveLeft, 90, append(legend, legendItem{"line", colEfficiency, "efficiency →"}))
	s.yAxis(curveLeft, curveRight, ticks, yTok, compactNum, "tokens/s (log scale)", true)
	s.rightAxis(curveRight, effTicks, yEff)
	s.worldLabels(rs, xs)
	s.series(xs, ideal, yTok, colIdeal, `stroke-dasharray="6 4"`, false)
	tok := column(rs, func(r ScalingRow) float64 { return r.TokensPerS })
	s.series(xs, tok, yTok, colMeasured, "", true)
	eff := column(rs, func(r ScalingRow) float64 { return r.Efficiency })
	s.series(xs, eff, yEff, colEfficiency, "", true)
	shown := thinLabels(xs, 32)
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
		s.haloText(xs[i], effY, 11, "middle", colEfficiency, fmt.Sprintf("%.0f%%", 100*eff[i]))
		s.haloText(xs[i], tokY, 10, "middle", colMeasured, compactNum(tok[i]))
	}
}

// drawScalingBars draws the right panel: each size's measured step split
// into compute, transfer and idle, beside its predicted step.
func drawScalingBars(s *svgDoc, rs []ScalingRow) {
	top := 0.0
	for _, r := range rs {
		top = max(top, r.StepS, r.ComputeS+r.TransferS+r.IdleS, r.PredictedStepS)
	}
	secs := niceTicks(top, 5)
	scale, unit := timeUnit(secs[len(secs)-1])
	ticks := make([]float64, len(secs))
	for i, t := range secs {
		ticks[i] = t * scale
	}
	y := linearScale(0, secs[len(secs)-1], plotBottom, plotTop)
	s.text((barsLeft+barsRight)/2, 74, 13, "middle", "#000000", `font-weight="bold"`, "Step time")
	s.legend(barsLeft, 90, []legendItem{
		{"box", colCompute, "compute"}, {"box", colTransfer, "transfer"}, {"box", colIdle, "idle"},
		{"hatch", colPredicted, "predicted"},
	})
	s.yAxis(barsLeft, barsRight, ticks, linearScale(0, ticks[len(ticks)-1], plotBottom, plotTop), compactNum, unit+" per step", false)
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
			s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, base-h, bw, h, part.col)
			base -= h
		}
		if group >= 44 {
			s.text(left+bw/2, base-4, 10, "middle", colAxis, "", compactNum(r.StepS*scale))
		}
		if r.PredictedStepS > 0 {
			h := float64(plotBottom) - y(r.PredictedStepS)
			s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#scaling-hatch)" stroke="%s" stroke-width="1.2"/>`+"\n",
				left+bw+3, float64(plotBottom)-h, pw, h, colPredicted)
		}
	}
	s.worldLabels(rs, xs)
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

// niceTicks returns about n+1 evenly spaced round values from 0 up to the
// first one at or above top (steps of 1, 2, 2.5 or 5 times a power of ten).
// A top of 0 or less gives 0 and 1.
func niceTicks(top float64, n int) []float64 {
	if top <= 0 || n < 1 {
		return []float64{0, 1}
	}
	raw := top / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if raw <= m*mag*(1+1e-9) {
			step = m * mag
			break
		}
	}
	k := int(math.Ceil(top/step - 1e-9))
	ticks := make([]float64, k+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks
}

// compactNum formats v in at most three significant digits with a k, M or G
// suffix for thousands, millions and billions: 0, 0.25, 950, 1.2k, 35k, 1.1M.
func compactNum(v float64) string {
	if v == 0 {
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	suffix, div := "", 1.0
	switch {
	case r >= 1e9:
		suffix, div = "G", 1e9
	case r >= 1e6:
		suffix, div = "M", 1e6
	case r >= 1e3:
		suffix, div = "k", 1e3
	}
	return sign + strconv.FormatFloat(r/div, 'f', -1, 64) + suffix
}

// log2Pos places world on a log2 axis that puts lo at x0 and hi at x1; when
// lo and hi are the same it puts every world in the middle.
func log2Pos(world, lo, hi int, x0, x1 float64) float64 {
	if lo == hi {
		return (x0 + x1) / 2
	}
	a, b := math.Log2(float64(lo)), math.Log2(float64(hi))
	return x0 + (math.Log2(float64(world))-a)/(b-a)*(x1-x0)
}

// logTicks are round values (1, 2 and 5 times a power of ten; every digit
// where those give fewer than three) for a log axis from the first at or
// below lo to the first at or above hi.
func logTicks(lo, hi float64) []float64 {
	if !(lo > 0) || hi <= lo {
		return []float64{math.Max(lo, 1), math.Max(lo, 1) * 2}
	}
	ticks := logTicksOf(lo, hi, []float64{1, 2, 5})
	if len(ticks) < 3 {
		ticks = logTicksOf(lo, hi, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9})
	}
	return ticks
}

// logTicksOf is logTicks with the multiples mults of each power of ten.
func logTicksOf(lo, hi float64, mults []float64) []float64 {
	var ticks []float64
	for p := math.Pow(10, math.Floor(math.Log10(lo))); ; p *= 10 {
		for _, m := range mults {
			v := m * p
			if v < lo*(1-1e-9) {
				ticks = []float64{v} // the last one below lo
				continue
			}
			ticks = append(ticks, v)
			if v >= hi*(1-1e-9) {
				return ticks
			}
		}
	}
}

// logScale maps [v0, v1] onto [p0, p1] on a log axis.
func logScale(v0, v1, p0, p1 float64) func(float64) float64 {
	a, b := math.Log(v0), math.Log(v1)
	return func(v float64) float64 { return p0 + (math.Log(v)-a)/(b-a)*(p1-p0) }
}

// linearScale maps [v0, v1] onto [p0, p1].
func linearScale(v0, v1, p0, p1 float64) func(float64) float64 {
	return func(v float64) float64 { return p0 + (v-v0)/(v1-v0)*(p1-p0) }
}

// thinLabels says which of the positions xs (ascending) keep a label so that
// labels stand at least gap apart, the first and the last always kept.
func thinLabels(xs []float64, gap float64) []bool {
	shown := make([]bool, len(xs))
	last := math.Inf(-1)
	for i, x := range xs {
		if x-last >= gap {
			shown[i], last = true, x
		}
	}
	if n := len(xs); n > 1 && !shown[n-1] {
		shown[n-1] = true
		for i := n - 2; i > 0 && xs[n-1]-xs[i] < gap; i-- {
			shown[i] = false
		}
	}
	return shown
}

// textWidth estimates the width of s in a sans-serif font of size px.
func textWidth(s string, px float64) float64 {
	return 0.55 * px * float64(len([]rune(s)))
}

// escapeXML escapes s for text or an attribute value.
func escapeXML(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// svgDoc gathers an SVG document; every number in it is printed with a fixed
// number of decimals, so equal input gives equal bytes.
type svgDoc struct{ b strings.Builder }

func (s *svgDoc) String() string { return s.b.String() }

func (s *svgDoc) printf(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

// text writes str (escaped) at x, y; extra is further attributes, or "".
func (s *svgDoc) text(x, y, px float64, anchor, fill, extra, str string) {
	if extra != "" {
		extra = " " + extra
	}
	s.printf(`<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
		x, y, px, anchor, fill, extra, escapeXML(str))
}

// haloText writes str over a white outline of itself, readable over lines.
func (s *svgDoc) haloText(x, y, px float64, anchor, fill, str string) {
	s.text(x, y, px, anchor, "#ffffff", `stroke="#ffffff" stroke-width="3" stroke-linejoin="round"`, str)
	s.text(x, y, px, anchor, fill, `font-weight="bold"`, str)
}

// legendItem is one legend entry: a swatch kind ("line", "dashed", "box" or
// "hatch"), its colour and its label.
type legendItem struct{ kind, col, label string }

// legend writes items in one row from x, centred vertically on y.
func (s *svgDoc) legend(x, y float64, items []legendItem) {
	for _, it := range items {
		switch it.kind {
		case "line", "dashed":
			dash := ""
			if it.kind == "dashed" {
				dash = ` stroke-dasharray="6 4"`
			}
			s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", x, y, x+20, y, it.col, dash)
		case "box":
			s.printf(`<rect x="%.1f" y="%.1f" width="14" height="11" fill="%s"/>`+"\n", x+3, y-5.5, it.col)
		case "hatch":
			s.printf(`<rect x="%.1f" y="%.1f" width="14" height="11" fill="url(#scaling-hatch)" stroke="%s" stroke-width="1.2"/>`+"\n", x+3, y-5.5, it.col)
		}
		s.text(x+25, y+4, 11, "start", colAxis, "", it.label)
		x += 25 + textWidth(it.label, 11) + 16
	}
}

// yAxis writes a left value axis from x0 with ticks (placed by y, labelled by
// format), its title, and a grid across to x1 when grid is set.
func (s *svgDoc) yAxis(x0, x1 float64, ticks []float64, y func(float64) float64, format func(float64) string, title string, grid bool) {
	for _, t := range ticks {
		p := y(t)
		if grid && t > 0 {
			s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, p, x1, p, colGrid)
		}
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0-4, p, x0, p, colAxis)
		s.text(x0-7, p+4, 11, "end", colAxis, "", format(t))
	}
	s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x0, plotTop, x0, plotBottom, colAxis)
	s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x0, plotBottom, x1, plotBottom, colAxis)
	mid := (plotTop + plotBottom) / 2.0
	s.text(x0-50, mid, 12, "middle", colAxis, fmt.Sprintf(`transform="rotate(-90 %.1f %.1f)"`, x0-50, mid), title)
}

// rightAxis writes the efficiency axis (fractions shown as percentages) at x.
func (s *svgDoc) rightAxis(x float64, ticks []float64, y func(float64) float64) {
	s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, plotTop, x, plotBottom, colEfficiency)
	for _, t := range ticks {
		p := y(t)
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, p, x+4, p, colEfficiency)
		s.text(x+7, p+4, 11, "start", colEfficiency, "", fmt.Sprintf("%.0f%%", 100*t))
	}
	mid := (plotTop + plotBottom) / 2.0
	s.text(x+50, mid, 12, "middle", colEfficiency, fmt.Sprintf(`transform="rotate(90 %.1f %.1f)"`, x+50, mid), "efficiency")
}

// worldLabels writes under the plot, at xs, each row's world and below it its
// pp×dp layout, leaving out labels that would overlap, and the axis title
// centred under the ticks.
func (s *svgDoc) worldLabels(rs []ScalingRow, xs []float64) {
	gap := 8.0
	for _, r := range rs {
		gap = max(gap, textWidth(strconv.Itoa(r.World), 11)+8, textWidth(layoutLabel(r), 9)+6)
	}
	shown := thinLabels(xs, gap)
	for i, r := range rs {
		s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", xs[i], plotBottom, xs[i], plotBottom+4, colAxis)
		if shown[i] {
			s.text(xs[i], plotBottom+17, 11, "middle", colAxis, "", strconv.Itoa(r.World))
			s.text(xs[i], plotBottom+30, 9, "middle", colMuted, "", layoutLabel(r))
		}
	}
	mid := (xs[0] + xs[len(xs)-1]) / 2
	s.text(mid, plotBottom+50, 12, "middle", colAxis, "", "world size in ranks (pp×dp layout below)")
}

// layoutLabel is a row's pipeline × data-parallel layout, such as 4×2.
func layoutLabel(r ScalingRow) string { return fmt.Sprintf("%d×%d", r.PP, r.DP) }

// series writes the values vs at xs as a line (when there are two or more)
// in col with extra attributes, and a dot on each when dots is set.
func (s *svgDoc) series(xs, vs []float64, y func(float64) float64, col, extra string, dots bool) {
	if len(xs) > 1 {
		var pts []string
		for i := range xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs[i], y(vs[i])))
		}
		if extra != "" {
			extra = " " + extra
		}
		s.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2.2" stroke-linejoin="round"%s/>`+"\n",
			strings.Join(pts, " "), col, extra)
	}
	if !dots {
		return
	}
	for i := range xs {
		s.printf(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="#ffffff" stroke-width="1.2"/>`+"\n", xs[i], y(vs[i]), col)
	}
}
