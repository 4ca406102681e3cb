package schedules

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// ganttMaxCols bounds the width of the ASCII chart.
const ganttMaxCols = 240

// WriteGantt draws the compute spans of tl as text, one row per rank. One
// cell is quantum seconds (0 picks the shortest compute span, widened so that
// the chart stays under 240 cells). Each action is its label (kind and
// micro-batch; with v > 1 the stage first, as in the text form) padded to its
// length and closed by '|'; idle time is '.'.
func WriteGantt(w io.Writer, tl *Timeline, v int, quantum float64) error {
	t0, t1, shortest := bounds(tl)
	span := t1 - t0
	if quantum <= 0 {
		quantum = shortest
	}
	label := func(a Action) string {
		if v > 1 {
			return a.String()
		}
		return fmt.Sprintf("%s%d", a.Kind, a.Micro)
	}
	width := 1
	for _, spans := range tl.Ranks {
		for _, sp := range spans {
			if sp.Action.Kind.IsCompute() {
				width = max(width, len(label(sp.Action))+1)
			}
		}
	}
	if quantum <= 0 || span/quantum*float64(width) > ganttMaxCols {
		quantum = span * float64(width) / ganttMaxCols
	}
	if quantum <= 0 {
		quantum = 1 // no compute spans, or all of zero length
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "each character is %.4g time units; '.' is idle\n", quantum/float64(width))
	col := func(t float64) int { return int(math.Round((t - t0) / quantum * float64(width))) }
	for r, spans := range tl.Ranks {
		fmt.Fprintf(bw, "rank %-2d |", r)
		at := 0
		for _, sp := range spans {
			if !sp.Action.Kind.IsCompute() {
				continue
			}
			s, e := col(sp.Start), col(sp.End)
			if s > at {
				bw.WriteString(strings.Repeat(".", s-at))
				at = s
			}
			n := max(e-at, len(label(sp.Action))+1)
			cell := label(sp.Action)
			bw.WriteString(cell + strings.Repeat(" ", n-len(cell)-1) + "|")
			at += n
		}
		if end := col(t1); end > at {
			bw.WriteString(strings.Repeat(".", end-at))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// bounds returns the first compute start, the last compute end and the
// shortest positive compute duration.
func bounds(tl *Timeline) (t0, t1, shortest float64) {
	first := true
	for _, spans := range tl.Ranks {
		for _, sp := range spans {
			if !sp.Action.Kind.IsCompute() {
				continue
			}
			if first || sp.Start < t0 {
				t0 = sp.Start
			}
			if first || sp.End > t1 {
				t1 = sp.End
			}
			if d := sp.End - sp.Start; d > 0 && (shortest == 0 || d < shortest) {
				shortest = d
			}
			first = false
		}
	}
	return t0, t1, shortest
}

// microColor gives each micro-batch its own hue; the kind sets the lightness
// (F light, I medium, B and W dark).
func microColor(a Action) string {
	hue := math.Mod(float64(a.Micro)*137.508, 360)
	light := map[Kind]int{F: 72, I: 55, B: 42, W: 38}[a.Kind]
	return fmt.Sprintf("hsl(%.0f,70%%,%d%%)", hue, light)
}

// WriteSVG draws tl as a Gantt picture: one lane per rank, time to the
// right, a box per compute action coloured by micro-batch (forwards light,
// backwards dark, W hatched), labelled with its kind and micro-batch, idle
// time as the grey lane behind; transfers are thin bars under the lane.
func WriteSVG(w io.Writer, tl *Timeline, title string) error {
	return writeSVG(w, tl, nil, title)
}

// WriteSVGCompared is WriteSVG with the expected timeline (Expected) laid
// over the measured one: a thin strip above each lane holds the expected
// actions, and a measured action that ended more than lateSlack of the
// picture's span after its expected end is outlined red, its tooltip saying
// by how much.
func WriteSVGCompared(w io.Writer, measured, expected *Timeline, title string) error {
	return writeSVG(w, measured, expected, title)
}

// lateSlack is the share of the picture's time span by which an action must
// end after its expected end to be marked late: below it the difference is
// not visible at the picture's scale anyway.
const lateSlack = 0.005

func writeSVG(w io.Writer, tl, exp *Timeline, title string) error {
	const (
		left, top, lane, plotW = 70.0, 40.0, 30.0, 1000.0
	)
	laneGap := 12.0
	if exp != nil {
		laneGap = 20 // room for the expected strip
	}
	t0, t1, _ := bounds(tl)
	var late map[[2]int]float64
	if exp != nil {
		late = LateBy(tl, exp, lateSlack*(t1-t0))
	}
	scale := 0.0
	if t1 > t0 {
		scale = plotW / (t1 - t0)
	}
	x := func(t float64) float64 { return left + (t-t0)*scale }
	height := top + float64(len(tl.Ranks))*(lane+laneGap) + 30
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="monospace" font-size="11">`+"\n", left+plotW+20, height)
	bw.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="white" stroke-width="2" stroke-opacity="0.6"/></pattern></defs>` + "\n")
	fmt.Fprintf(bw, `<text x="%.0f" y="20" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	for r, spans := range tl.Ranks {
		y := top + float64(r)*(lane+laneGap)
		fmt.Fprintf(bw, `<text x="5" y="%.1f">rank %d</text>`+"\n", y+lane/2+4, r)
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e6e6e6"><title>idle</title></rect>`+"\n", left, y, plotW, lane)
		if exp != nil && r < len(exp.Ranks) {
			writeExpected(bw, exp.Ranks[r], x, scale, y-7)
		}
		for i, sp := range spans {
			a := sp.Action
			x0, wd := x(sp.Start), (sp.End-sp.Start)*scale
			tip := fmt.Sprintf("rank %d %v: %.6g..%.6g", r, a, sp.Start, sp.End)
			if !a.Kind.IsCompute() {
				fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="3" fill="#555"><title>%s</title></rect>`+"\n", x0, y+lane+2, max(wd, 1), tip)
				continue
			}
			stroke := `stroke="white" stroke-width="0.5"`
			if d, ok := late[[2]int{r, i}]; ok {
				stroke = `stroke="red" stroke-width="1.5" class="late"`
				tip += fmt.Sprintf(", ended %.3g s after its expected end", d)
			}
			fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" %s><title>%s</title></rect>`+"\n", x0, y, wd, lane, microColor(a), stroke, tip)
			if a.Kind == W {
				fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="url(#hatch)"/>`+"\n", x0, y, wd, lane)
			}
			lbl := fmt.Sprintf("%s%d", a.Kind, a.Micro)
			if wd >= float64(len(lbl))*7 {
				ink := "black"
				if a.Kind != F {
					ink = "white"
				}
				fmt.Fprintf(bw, `<text x="%.2f" y="%.1f" text-anchor="middle" fill="%s">%s</text>`+"\n", x0+wd/2, y+lane/2+4, ink, lbl)
			}
		}
	}
	axisY := top + float64(len(tl.Ranks))*(lane+laneGap) + 10
	fmt.Fprintf(bw, `<text x="%.0f" y="%.1f">%.6g s</text><text x="%.0f" y="%.1f" text-anchor="end">%.6g s</text>`+"\n", left, axisY, t0, left+plotW, axisY, t1)
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// writeExpected draws one rank's expected compute actions as a strip of
// height 5 at y, in the measured boxes' colours.
func writeExpected(bw *bufio.Writer, spans []Span, x func(float64) float64, scale, y float64) {
	for _, sp := range spans {
		if !sp.Action.Kind.IsCompute() {
			continue
		}
		fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="5" fill="%s" fill-opacity="0.7" class="expected"><title>expected %v: %.6g..%.6g</title></rect>`+"\n",
			x(sp.Start), y, (sp.End-sp.Start)*scale, microColor(sp.Action), sp.Action, sp.Start, sp.End)
	}
}
