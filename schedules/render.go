package schedules

import (
	"bufio"
	"fmt"
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
	return fmt.Sprintf("hsl(%.0f,70%%,%d%%)", microHue(a), kindLight[a.Kind])
}

func microHue(a Action) float64 { return math.Mod(float64(a.Micro)*137.508, 360) }

var kindLight = map[Kind]int{F: 72, I: 55, B: 42, W: 38}

// microInk is the label colour that reads on microColor(a): black on light
// fills, white on dark ones, by the fill's relative luminance (yellows at
// medium lightness are light, blues dark).
func microInk(a Action) string {
	hue, light := microHue(a), float64(kindLight[a.Kind])/100
	amp := 0.7 * math.Min(light, 1-light) // saturation 70%
	f := func(n float64) float64 {        // HSL to RGB, as CSS Color 3 defines it
		k := math.Mod(n+hue/30, 12)
		return light - amp*math.Max(-1, math.Min(k-3, math.Min(9-k, 1)))
	}
	lin := func(v float64) float64 {
		if v <= 0.03928 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	y := 0.2126*lin(f(0)) + 0.7152*lin(f(8)) + 0.0722*lin(f(4))
	if y > 0.179 { // where black and white text have the same contrast
		return "black"
	}
	return "white"
}
