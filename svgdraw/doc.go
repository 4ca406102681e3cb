// Package svgdraw is the project's one place for drawing SVG pictures: a
// document builder whose numbers print with fixed decimals (equal input,
// equal bytes), text with escaping and width estimates, linear, log and
// log2 scales, round ticks for value, log and time axes with their labels,
// and labels thinned so they do not overlap. The schedule and timeline
// pictures (package schedules) and the scaling charts (package bench) draw
// with it; what each picture shows stays with its package.
//
// It imports the standard library only, and nothing of the project.
package svgdraw
