package launch

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// summary prints the attempt's outcome: the root cause first (with the last
// lines of its stderr), then every local rank with its result, peak RSS and
// CPU time.
func (a *agent) summary(first *failure, g *group, start time.Time, restart int) {
	var b strings.Builder
	if first != nil && first.Join {
		fmt.Fprintf(&b, "run %s stopped at a step boundary (restart %d of %d): %s: the world re-forms\n", a.c.RunID, restart, a.c.MaxRestarts, first.How)
	} else if first != nil {
		fmt.Fprintf(&b, "run %s failed (restart %d of %d): %s\n", a.c.RunID, restart, a.c.MaxRestarts, first.headline())
		fmt.Fprintf(&b, "root cause: %s\n", first.detail())
		if len(first.Stderr) > 0 {
			lines := fmt.Sprintf("last %d lines", len(first.Stderr))
			if len(first.Stderr) == 1 {
				lines = "last line"
			}
			fmt.Fprintf(&b, "%s of rank %d's stderr:\n", lines, first.Rank)
			for _, l := range first.Stderr {
				fmt.Fprintf(&b, "  | %s\n", l)
			}
		}
	}
	fmt.Fprintf(&b, "ranks on node %d (run %s, restart %d, %v):\n", a.c.NodeRank, a.c.RunID, restart, time.Since(start).Round(time.Millisecond))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  rank\tlocal\tpid\tresult\ttime\tpeak RSS\tCPU")
	for _, r := range g.ranks {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%v\t%s\t%.2fs\n", r.global, r.local, r.pid, r.how(),
			r.end.Sub(r.start).Round(time.Millisecond), mib(r.use.peakRSS), r.use.cpu.Seconds())
	}
	tw.Flush()
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		a.logf("%s", l)
	}
}

func mib(n uint64) string {
	if n == 0 {
		return "-" // ended before the first sample
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// headline is the failure in a few words.
func (f *failure) headline() string {
	if f.Rank < 0 {
		return f.How
	}
	return fmt.Sprintf("rank %d %s", f.Rank, f.How)
}

// detail is the failure with everything the summary knows of it.
func (f *failure) detail() string {
	if f.Rank < 0 {
		s := f.How
		if f.Node >= 0 && f.Pid > 0 {
			s += fmt.Sprintf(" (agent of node %d on %s, pid %d, %s after start)", f.Node, f.Host, f.Pid, f.After)
		} else if f.After != "" {
			s += fmt.Sprintf(" (%s after start)", f.After)
		}
		return s
	}
	if f.Node < 0 { // a rank of another node, named by one of ours
		return fmt.Sprintf("rank %d %s, %s after start", f.Rank, f.How, f.After)
	}
	return fmt.Sprintf("rank %d (local rank %d, node %d on %s) %s, pid %d, %s after start",
		f.Rank, f.Local, f.Node, f.Host, f.How, f.Pid, f.After)
}
