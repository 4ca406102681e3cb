package svgdraw

import (
	"encoding/xml"
	"strings"
)

// TextWidth estimates the width of s in a sans-serif font of size px.
func TextWidth(s string, px float64) float64 {
	return 0.55 * px * float64(len([]rune(s)))
}

// Escape escapes s for text or an attribute value.
func Escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
