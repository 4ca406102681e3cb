package live

import (
	"fmt"
	"strconv"
	"strings"
)

// Style colours parts of the text view; the zero Style leaves them plain.
type Style struct {
	Bad, Head, Dim func(string) string
}

func (s Style) apply(f func(string) string, text string) string {
	if f == nil {
		return text
	}
	return f(text)
}

// Text is the state as `pplaunch top` prints it, width columns wide at
// most: the run in a few lines, then one row per rank with a bar of its
// busy share of the last step.
func Text(st State, width int, s Style) string {
	var b strings.Builder
	run := st.Run
	state := "running"
	switch {
	case run.Done:
		state = run.Outcome
	case run.Ended:
		state = run.Outcome + "; waiting for the group to restart"
	case run.Restart > 0:
		state = fmt.Sprintf("running (restart %d)", run.Restart)
	}
	fmt.Fprintln(&b, clip(run.Title, width))
	line := fmt.Sprintf("%s; step %d/%d", state, lastStep(st), run.Steps)
	if n := len(st.Series); n > 0 {
		p := st.Series[n-1]
		line += fmt.Sprintf("  loss %.4f  %.0f tok/s  %.3f s/step  bubble %.1f%% (sim %.1f%%)", p.Loss, p.TokensPerS, p.StepS, 100*p.Bubble, 100*p.SimBubble)
		for i := n - 1; i >= 0; i-- {
			if v := st.Series[i].ValLoss; v != nil {
				line += fmt.Sprintf("  val %.4f", *v)
				break
			}
		}
	}
	fmt.Fprintln(&b, clip(line, width))
	fmt.Fprintln(&b)
	const barW = 10
	head := fmt.Sprintf("%-5s %-7s %-5s %-26s %7s %-8s %-*s %10s", "rank", "stages", "step", "doing", "for", "status", barW+5, "busy", "memory")
	fmt.Fprintln(&b, s.apply(s.Head, clip(head, width)))
	for _, r := range st.Ranks {
		busy := int(r.Busy*barW + 0.5)
		bar := strings.Repeat("█", busy) + strings.Repeat("·", barW-busy) + fmt.Sprintf(" %3.0f%%", 100*r.Busy)
		mem := mibText(r.RSS)
		if r.PeakDevice > 0 {
			mem = mibText(r.PeakDevice) + " dev"
		}
		row := fmt.Sprintf("%-5d %-7s %-5s %-26s %6.1fs %-8s %s %10s", r.Rank, ints(r.Stages), stepText(r.Step), clip(r.Doing, 26), r.ForS, r.Status, bar, mem)
		if r.Why != "" {
			row += "  " + r.Why
		}
		row = clip(row, width)
		if r.Status == "stuck" || r.Status == "silent" {
			row = s.apply(s.Bad, row)
		}
		fmt.Fprintln(&b, row)
	}
	return b.String()
}

func lastStep(st State) int {
	if n := len(st.Series); n > 0 {
		return st.Series[n-1].Step
	}
	return 0
}

func stepText(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func mibText(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// clip cuts s to width runes (no limit when width <= 0).
func clip(s string, width int) string {
	r := []rune(s)
	if width <= 0 || len(r) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	return string(r[:width-1]) + "…"
}
