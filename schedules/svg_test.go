package schedules

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/internal/svgtest"
)

// simulated is a schedule simulated at plan's default costs, in seconds.
func simulated(t *testing.T, name string, p, m int) (*Schedule, *Timeline) {
	t.Helper()
	s, err := Generate(name, p, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Simulate(s, Costs{Default: StageCost{F: 0.001, B: 0.002, W: 0.001}, Comm: 0.0001})
	if err != nil {
		t.Fatal(err)
	}
	return s, tl
}

// TestSVGPictures pins the pictures plan and train draw (goldens), renders
// each to PNG, and checks what makes them readable: a legend naming what
// the picture holds, round axis ticks with a unit, the stage in the labels
// of interleaved and V schedules, a width that grows with the schedule so
// that its labels fit, W labels with a halo over the hatching, and, for a
// measured run, step boundaries and the late marks.
func TestSVGPictures(t *testing.T) {
	type pic struct {
		name string
		svg  []byte
		want []string
	}
	var pics []pic
	draw := func(name string, tl *Timeline, o SVGOptions, want ...string) {
		var b bytes.Buffer
		if err := WriteSVGWith(&b, tl, o); err != nil {
			t.Fatal(err)
		}
		pics = append(pics, pic{name, b.Bytes(), want})
	}
	s, tl := simulated(t, "interleaved", 4, 8)
	draw("svg_interleaved_p4_m8.svg", tl, SVGOptions{Title: "interleaved P=4 v=2 M=8", V: s.V, AxisFrom: "the step's start"},
		"F0·s4", "F3·s5: micro-batch 3 on stage 5", ">forward<", ">backward<", "colour: micro-batch (F light, B dark)",
		"under a lane: a transfer, from posted to done", ">0 ms<", ">5 ms<", "time since the step&#39;s start")
	_, tl = simulated(t, "zb-h1", 8, 32)
	draw("svg_zbh1_p8_m32.svg", tl, SVGOptions{Title: "zb-h1 P=8 M=32"},
		">W31<", `paint-order="stroke"`, "weight gradient (hatched)", "input gradient")
	s, tl = simulated(t, "1f1b", 2, 4)
	measured := twoSteps(t, s, Costs{Default: StageCost{F: 0.010, B: 0.020}}, 1)
	measured.Ranks[1][len(s.Ranks[1])+1].End += 0.030 // a slow action in the second step
	exp, err := Expected(s, measured)
	if err != nil {
		t.Fatal(err)
	}
	draw("svg_measured_1f1b_p2_m4.svg", measured, SVGOptions{Title: "measured: 1f1b, pp 2 × dp 1, 4 micro-batches · steps 1..2 of 2", Expected: exp,
		Steps: []StepMark{{measured.Ranks[0][0].Start, "step 1"}, {measured.Ranks[0][len(s.Ranks[0])].Start, "step 2"}}, AxisFrom: "step 1's start"},
		">step 1<", ">step 2<", `class="step"`, `class="late"`, "late: ran over 50% longer than expected", ">0.0 s<", ">1.0 s<", "time since step 1&#39;s start")
	for _, p := range pics {
		golden(t, p.name, string(p.svg))
		if err := xml.Unmarshal(p.svg, new(struct{})); err != nil {
			t.Errorf("%s: not XML: %v", p.name, err)
		}
		for _, w := range p.want {
			if !bytes.Contains(p.svg, []byte(w)) {
				t.Errorf("%s does not hold %q", p.name, w)
			}
		}
		svgtest.Render(t, p.name, p.svg)
	}
	// Width: the 8-rank, 32-micro-batch schedule grows past the least
	// width so that every label fits; the small one keeps it.
	width := func(svg []byte) int {
		m := regexp.MustCompile(`width="(\d+)"`).FindSubmatch(svg)
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if w := width(pics[1].svg); w <= int(svgMinPlot+svgLeft+20) {
		t.Errorf("zb-h1 P=8 M=32 is %d px wide: no room for its labels", w)
	}
	if got, want := strings.Count(string(pics[1].svg), `text-anchor="middle" fill=`)+strings.Count(string(pics[1].svg), `paint-order`), 0; got == want {
		t.Error("no labels drawn")
	}
}

// TestSVGTitleWraps: a title longer than the picture is wide goes on
// several lines, none longer than the width holds.
func TestSVGTitleWraps(t *testing.T) {
	long := strings.Repeat("a long title word ", 30)
	lines := wrap(long, 50)
	if len(lines) < 5 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if len(l) > 50 {
			t.Errorf("line of %d characters: %q", len(l), l)
		}
	}
	_, tl := simulated(t, "1f1b", 2, 2)
	var b bytes.Buffer
	if err := WriteSVGWith(&b, tl, SVGOptions{Title: long}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `font-size="14"`); n < 2 {
		t.Errorf("the title is %d line(s)", n)
	}
}
