package svgdraw

import (
	"fmt"
	"strings"
)

// Doc gathers an SVG document; every number in it is printed with a fixed
// number of decimals, so equal input gives equal bytes.
type Doc struct{ b strings.Builder }

func (s *Doc) String() string { return s.b.String() }

// Printf appends to the document.
func (s *Doc) Printf(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

// Text writes str (escaped) at x, y; extra is further attributes, or "".
func (s *Doc) Text(x, y, px float64, anchor, fill, extra, str string) {
	if extra != "" {
		extra = " " + extra
	}
	s.Printf(`<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
		x, y, px, anchor, fill, extra, Escape(str))
}

// HaloText writes str over a white outline of itself, readable over lines.
func (s *Doc) HaloText(x, y, px float64, anchor, fill, str string) {
	s.Text(x, y, px, anchor, "#ffffff", `stroke="#ffffff" stroke-width="3" stroke-linejoin="round"`, str)
	s.Text(x, y, px, anchor, fill, `font-weight="bold"`, str)
}

// Series writes the values vs at xs as a line (when there are two or more)
// in col with extra attributes, and a dot on each when dots is set.
func (s *Doc) Series(xs, vs []float64, y func(float64) float64, col, extra string, dots bool) {
	if len(xs) > 1 {
		var pts []string
		for i := range xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs[i], y(vs[i])))
		}
		if extra != "" {
			extra = " " + extra
		}
		s.Printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2.2" stroke-linejoin="round"%s/>`+"\n",
			strings.Join(pts, " "), col, extra)
	}
	if !dots {
		return
	}
	for i := range xs {
		s.Printf(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="#ffffff" stroke-width="1.2"/>`+"\n", xs[i], y(vs[i]), col)
	}
}
