package schedules

import (
	"bufio"
	"fmt"

	"github.com/pplaunch/pplaunch/svgdraw"
)

// legendItem is a swatch and what it means. The swatches: a compute kind
// ("F", "I", "B", "W", in micro-batch 0's colour), "xfer", "expected",
// "late", "step", or "" for text alone.
type legendItem struct{ swatch, text string }

// svgLegend is the legend of a picture of tl with o, a line per slice.
func svgLegend(tl *Timeline, o SVGOptions) [][]legendItem {
	has := map[Kind]bool{}
	for _, spans := range tl.Ranks {
		for _, sp := range spans {
			has[sp.Action.Kind] = true
		}
	}
	var kinds []legendItem
	for _, k := range []struct {
		kind Kind
		text string
	}{{F, "forward"}, {I, "input gradient"}, {B, "backward"}, {W, "weight gradient (hatched)"}} {
		if has[k.kind] {
			kinds = append(kinds, legendItem{k.kind.String(), k.text})
		}
	}
	kinds = append(kinds, legendItem{"", "colour: micro-batch (F light, B dark)"})
	lines := [][]legendItem{kinds}
	second := []legendItem{{"xfer", "under a lane: a transfer, from posted to done"}}
	if o.V > 1 {
		second = append(second, legendItem{"", "F3·s5: micro-batch 3 on stage 5"})
	}
	if len(o.Steps) > 0 {
		second = append(second, legendItem{"step", "a step begins"})
	}
	lines = append(lines, second)
	if o.Expected != nil {
		lines = append(lines, []legendItem{
			{"expected", "expected: the step simulated from its mean action times"},
			{"late", fmt.Sprintf("late: ran over %.0f%% longer than expected", 100*lateShare)},
		})
	}
	return lines
}

// writeLegend draws the legend's lines from y down, 16 px apart.
func writeLegend(bw *bufio.Writer, lines [][]legendItem, y float64) {
	for i, items := range lines {
		x, ly := svgLeft, y+16*float64(i)
		for _, it := range items {
			x += legendSwatch(bw, it.swatch, x, ly)
			fmt.Fprintf(bw, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x, ly, svgdraw.Escape(it.text))
			x += float64(len([]rune(it.text)))*svgCharW + 18
		}
	}
}

// legendSwatch draws swatch kind at x on the text line at y and returns
// the room it took.
func legendSwatch(bw *bufio.Writer, kind string, x, y float64) float64 {
	box := func(fill, extra string) {
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="22" height="12" fill="%s" %s/>`+"\n", x, y-10, fill, extra)
	}
	switch kind {
	case "":
		return 0
	case "xfer":
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="22" height="3" fill="#555"/>`+"\n", x, y-4)
	case "expected":
		fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="22" height="5" fill="%s" fill-opacity="0.7"/>`+"\n", x, y-7, microColor(Action{Kind: F}))
	case "late":
		box(microColor(Action{Kind: B}), `stroke="red" stroke-width="2"`)
	case "step":
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="4,3"/>`+"\n", x+11, y-12, x+11, y+2)
	default:
		k := map[string]Kind{"F": F, "I": I, "B": B, "W": W}[kind]
		box(microColor(Action{Kind: k}), "")
		if k == W {
			box("url(#hatch)", "")
		}
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%s</text>`+"\n", x+11, y, microInk(Action{Kind: k}), kind)
	}
	return 28
}
