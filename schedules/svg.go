package schedules

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/svgdraw"
)

// SVGOptions say what a Gantt picture shows beside the timeline.
type SVGOptions struct {
	Title string
	// V is the virtual stages per rank: above 1, each label says its stage
	// too (F3·s5: micro-batch 3 of stage 5).
	V int
	// Expected, when set, is laid over the timeline (Expected's output for
	// it): a strip above each lane, and the actions that made their rank
	// late (Late) outlined red.
	Expected *Timeline
	// Steps mark where steps begin (a dashed line and the step's name).
	Steps []StepMark
	// AxisFrom says what the axis counts from: its zero is the first
	// step's start where Steps are given, else the first compute start.
	AxisFrom string
}

// StepMark is the start of a step on the timeline's clock.
type StepMark struct {
	At    float64
	Label string
}

// Picture geometry, in pixels.
const (
	svgLeft     = 70.0
	svgLane     = 30.0
	svgMinPlot  = 1000.0
	svgMaxPlot  = 4000.0
	svgCharW    = 7.0 // monospace at 11 px
	svgTitleW   = 8.4 // monospace at 14 px
	svgTickRoom = 110 // pixels per axis tick at least
)

// WriteSVG draws tl as a Gantt picture: one lane per rank, time to the
// right on an axis with round ticks, a box per compute action coloured by
// micro-batch (forwards light, backwards dark, W hatched) and labelled with
// its kind and micro-batch, transfers as thin bars under the lane, and a
// legend saying so.
func WriteSVG(w io.Writer, tl *Timeline, title string) error {
	return WriteSVGWith(w, tl, SVGOptions{Title: title})
}

// WriteSVGCompared is WriteSVG with the expected timeline laid over the
// measured one (SVGOptions.Expected).
func WriteSVGCompared(w io.Writer, measured, expected *Timeline, title string) error {
	return WriteSVGWith(w, measured, SVGOptions{Title: title, Expected: expected})
}

// svgLayout is where things go in one picture.
type svgLayout struct {
	t0, t1, scale float64
	plotW, width  float64
	title         []string
	top, laneGap  float64
	height        float64
}

func (l svgLayout) x(t float64) float64 { return svgLeft + (t-l.t0)*l.scale }

// layoutSVG sizes the picture so that the shortest compute box can hold its
// label (within svgMinPlot..svgMaxPlot pixels of plot) and the title wraps
// to the width.
func layoutSVG(tl *Timeline, o SVGOptions, legendLines int) svgLayout {
	t0, t1, _ := bounds(tl)
	short := shortSpan(tl)
	if len(o.Steps) > 0 {
		t0 = math.Min(t0, o.Steps[0].At) // the axis starts with the first step
	}
	l := svgLayout{t0: t0, t1: t1, plotW: svgMinPlot, laneGap: 12}
	if o.Expected != nil {
		l.laneGap = 20 // room for the expected strip
	}
	if span := t1 - t0; span > 0 {
		if short > 0 {
			need := float64(maxLabel(tl, o.V)+1) * svgCharW
			l.plotW = math.Min(svgMaxPlot, math.Max(svgMinPlot, math.Ceil(span/short*need)))
		}
		l.scale = l.plotW / span
	}
	l.width = svgLeft + l.plotW + 20
	l.title = wrap(o.Title, int((l.width-svgLeft)/svgTitleW))
	l.top = 14 + 18*float64(len(l.title)) + 16*float64(legendLines) + 22
	if len(o.Steps) > 0 {
		l.top += 14 // the steps' names
	}
	l.height = l.top + float64(len(tl.Ranks))*(svgLane+l.laneGap) + 36
	return l
}

// shortSpan is the duration below which a fifth of the compute actions
// fall: the width is chosen for it to hold a label, so that a few very
// short actions (a measured step's odd one) do not make the picture huge;
// in a simulated schedule, where durations repeat, it is the shortest.
func shortSpan(tl *Timeline) float64 {
	var d []float64
	for _, spans := range tl.Ranks {
		for _, sp := range spans {
			if sp.Action.Kind.IsCompute() && sp.End > sp.Start {
				d = append(d, sp.End-sp.Start)
			}
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/5]
}

// maxLabel is the longest label of a compute action.
func maxLabel(tl *Timeline, v int) int {
	n := 0
	for _, spans := range tl.Ranks {
		for _, sp := range spans {
			if sp.Action.Kind.IsCompute() {
				n = max(n, len([]rune(svgLabel(sp.Action, v))))
			}
		}
	}
	return n
}

// svgLabel is a compute box's label: kind and micro-batch, and the stage
// where a rank holds several.
func svgLabel(a Action, v int) string {
	if v > 1 {
		return fmt.Sprintf("%s%d·s%d", a.Kind, a.Micro, a.Stage)
	}
	return fmt.Sprintf("%s%d", a.Kind, a.Micro)
}

// wrap cuts text into lines of at most n characters at spaces.
func wrap(text string, n int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(text) {
		if cur != "" && len([]rune(cur))+1+len([]rune(word)) > n {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += word
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// WriteSVGWith draws tl as WriteSVG does, with what o adds.
func WriteSVGWith(w io.Writer, tl *Timeline, o SVGOptions) error {
	legend := svgLegend(tl, o)
	l := layoutSVG(tl, o, len(legend))
	var late map[[2]int]Lateness
	if o.Expected != nil {
		late = Late(tl, o.Expected, lateShare, lateFloor*(l.t1-l.t0))
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="monospace" font-size="11">`+"\n", l.width, l.height)
	bw.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="white" stroke-width="2" stroke-opacity="0.45"/></pattern></defs>` + "\n")
	fmt.Fprintf(bw, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", l.width, l.height)
	for i, line := range l.title {
		fmt.Fprintf(bw, `<text x="%.0f" y="%.0f" font-size="14">%s</text>`+"\n", svgLeft, 20+18*float64(i), svgdraw.Escape(line))
	}
	writeLegend(bw, legend, 14+18*float64(len(l.title))+8)
	writeGrid(bw, l, len(tl.Ranks), o.AxisFrom)
	writeSteps(bw, l, o.Steps, len(tl.Ranks))
	for r, spans := range tl.Ranks {
		y := l.top + float64(r)*(svgLane+l.laneGap)
		fmt.Fprintf(bw, `<text x="5" y="%.1f">rank %d</text>`+"\n", y+svgLane/2+4, r)
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e6e6e6" fill-opacity="0.8"><title>idle</title></rect>`+"\n", svgLeft, y, l.plotW, svgLane)
		if o.Expected != nil && r < len(o.Expected.Ranks) {
			writeExpected(bw, o.Expected.Ranks[r], l, y-7)
		}
		for i, sp := range spans {
			lt, isLate := late[[2]int{r, i}]
			writeSpan(bw, l, r, sp, o.V, y, lt, isLate)
		}
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// writeSpan draws one action of rank r's lane at y.
func writeSpan(bw *bufio.Writer, l svgLayout, r int, sp Span, v int, y float64, lt Lateness, late bool) {
	a := sp.Action
	x0, wd := l.x(sp.Start), (sp.End-sp.Start)*l.scale
	tip := fmt.Sprintf("rank %d %v: %s, at %s", r, a, svgdraw.Duration(sp.End-sp.Start), svgdraw.Duration(sp.Start-l.t0))
	if !a.Kind.IsCompute() {
		fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="3" fill="#555"><title>%s</title></rect>`+"\n", x0, y+svgLane+2, max(wd, 1), tip)
		return
	}
	stroke := `stroke="white" stroke-width="0.5"`
	if late {
		stroke = `stroke="red" stroke-width="2" class="late"`
		tip += fmt.Sprintf("; ran %s longer than expected (%s), ended %s after its expected end", svgdraw.Duration(lt.Over), svgdraw.Duration(lt.Expected), svgdraw.Duration(lt.By))
	}
	fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" %s><title>%s</title></rect>`+"\n", x0, y, wd, svgLane, microColor(a), stroke, tip)
	if a.Kind == W {
		fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="url(#hatch)"/>`+"\n", x0, y, wd, svgLane)
	}
	lbl := svgLabel(a, v)
	if wd < float64(len([]rune(lbl)))*svgCharW {
		return
	}
	ink := `fill="` + microInk(a) + `"`
	if a.Kind == W { // on the hatching: white with a dark halo
		ink = `fill="white" stroke="#222" stroke-width="2.5" paint-order="stroke"`
	}
	fmt.Fprintf(bw, `<text x="%.2f" y="%.1f" text-anchor="middle" %s>%s</text>`+"\n", x0+wd/2, y+svgLane/2+4, ink, lbl)
}

// writeGrid draws the time axis under the lanes, with round ticks in one
// unit and a faint line across the lanes at each.
func writeGrid(bw *bufio.Writer, l svgLayout, ranks int, from string) {
	span := l.t1 - l.t0
	tk := svgdraw.NewTimeTicks(span, max(2, int(l.plotW/svgTickRoom)))
	bottom := l.top + float64(ranks)*(svgLane+l.laneGap)
	for _, v := range tk.At(span) {
		x := svgLeft + v*l.scale
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" stroke-width="0.5"/>`+"\n", x, l.top-4, x, bottom)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+12, tk.Label(v))
	}
	if from == "" {
		from = "the first compute"
	}
	fmt.Fprintf(bw, `<text x="%.0f" y="%.1f" fill="#555">time since %s</text>`+"\n", svgLeft, bottom+28, svgdraw.Escape(from))
}

// writeSteps draws a dashed line and the step's name where each step begins.
func writeSteps(bw *bufio.Writer, l svgLayout, steps []StepMark, ranks int) {
	bottom := l.top + float64(ranks)*(svgLane+l.laneGap)
	for _, s := range steps {
		x := l.x(s.At)
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-width="1" stroke-dasharray="4,3" class="step"/>`+"\n", x, l.top-16, x, bottom)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" fill="#333">%s</text>`+"\n", x+3, l.top-8, svgdraw.Escape(s.Label))
	}
}

// writeExpected draws one rank's expected compute actions as a strip of
// height 5 at y, in the measured boxes' colours.
func writeExpected(bw *bufio.Writer, spans []Span, l svgLayout, y float64) {
	for _, sp := range spans {
		if !sp.Action.Kind.IsCompute() {
			continue
		}
		fmt.Fprintf(bw, `<rect x="%.2f" y="%.1f" width="%.2f" height="5" fill="%s" fill-opacity="0.7" class="expected"><title>expected %v: %s, at %s</title></rect>`+"\n",
			l.x(sp.Start), y, (sp.End-sp.Start)*l.scale, microColor(sp.Action), sp.Action, svgdraw.Duration(sp.End-sp.Start), svgdraw.Duration(sp.Start-l.t0))
	}
}
