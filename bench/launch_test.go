package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// launchRuns launches of each row per round; launchRounds rounds, the rows
// taking turns within each, so that a busy spell of a shared machine falls
// on every row alike.
const launchRuns, launchRounds = 3, 5

// launchLimit bounds one launch: past it the cell is given up (mpirun -np 64
// does not finish on the 2-core development machine).
const launchLimit = 30 * time.Second

// otherBuildEnv names another pplaunch binary to time beside this build
// (an older build, to compare against).
const otherBuildEnv = "PPLAUNCH_BENCH_OTHER"

// launchRanksEnv overrides the rank counts ("4,16,64").
const launchRanksEnv = "PPLAUNCH_BENCH_RANKS"

// BenchmarkLaunch prints the median wall time of `pplaunch --nproc N --
// /bin/true` (spawn N ranks, supervise them, summarise, exit) for 4, 16 and
// 64 ranks, beside the floor of starting N /bin/true directly from Go,
// another build of pplaunch when $PPLAUNCH_BENCH_OTHER names one, and mpirun
// when it is installed:
//
//	PPLAUNCH_BENCH_OTHER=/tmp/old/pplaunch go test -run '^$' -bench Launch -benchtime 1x ./bench/
func BenchmarkLaunch(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "pplaunch")
	build := exec.Command("go", "build", "-o", bin, "../cmd/pplaunch")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	counts, err := launchCounts(os.Getenv(launchRanksEnv))
	if err != nil {
		b.Fatal(err)
	}
	cols := launchColumns(bin, os.Getenv(otherBuildEnv))
	times := make([][][]time.Duration, len(counts)) // [count][column] launches; nil: given up
	cpus := make([][][]time.Duration, len(counts))  // the same launches' CPU time
	for range b.N {
		for i := range times {
			times[i], cpus[i] = make([][]time.Duration, len(cols)), make([][]time.Duration, len(cols))
		}
		failed := map[[2]int]bool{}
		for round := range launchRounds {
			for i, n := range counts {
				for c, col := range cols {
					for k := 0; k < launchRuns && !failed[[2]int{i, c}]; k++ {
						ctx, cancel := context.WithTimeout(context.Background(), launchLimit)
						t0 := time.Now()
						cpu, err := col.run(ctx, n)
						d := time.Since(t0)
						cancel()
						switch {
						case err != nil && c == 0:
							b.Fatalf("%s, %d ranks: %v", col.name, n, err)
						case err != nil:
							b.Logf("%s, %d ranks: %v: given up", col.name, n, err)
							failed[[2]int{i, c}], times[i][c], cpus[i][c] = true, nil, nil
						default:
							times[i][c] = append(times[i][c], d)
							cpus[i][c] = append(cpus[i][c], cpu)
						}
					}
				}
			}
			fmt.Fprintf(os.Stderr, "launch benchmark: round %d of %d done\n", round+1, launchRounds)
		}
	}
	fmt.Printf("\nlaunch wall time of /bin/true, ms: median of %d launches (%d alternating rounds of %d)\n",
		launchRuns*launchRounds, launchRounds, launchRuns)
	fmt.Print(launchTable(counts, cols, times))
	// On a loaded machine the CPU a launch takes is its time: every process
	// waits for a core.
	fmt.Printf("\nCPU time of the same launches (user + system of the launcher and every process it waited for), ms: median\n")
	fmt.Print(launchTable(counts, cols, cpus))
	b.ReportMetric(ms(median(times[0][0])), "ms/launch")
}

// launchColumn is one way of launching n processes of /bin/true; run returns
// the CPU time they took.
type launchColumn struct {
	name string
	run  func(ctx context.Context, n int) (time.Duration, error)
}

func launchColumns(bin, other string) []launchColumn {
	pp := func(path string) func(context.Context, int) (time.Duration, error) {
		return func(ctx context.Context, n int) (time.Duration, error) {
			return runCPU(exec.CommandContext(ctx, path, "--nproc", strconv.Itoa(n), "--", "/bin/true"))
		}
	}
	cols := []launchColumn{{"pplaunch", pp(bin)}}
	if other != "" {
		cols = append(cols, launchColumn{"other build", pp(other)})
	}
	if mpirun, err := exec.LookPath("mpirun"); err == nil {
		cols = append(cols, launchColumn{"mpirun", func(ctx context.Context, n int) (time.Duration, error) {
			args := []string{"-np", strconv.Itoa(n), "--oversubscribe"}
			if os.Geteuid() == 0 {
				args = append(args, "--allow-run-as-root")
			}
			return runCPU(exec.CommandContext(ctx, mpirun, append(args, "/bin/true")...))
		}})
	}
	return append(cols, launchColumn{"floor (Go)", startTrue})
}

// runCPU runs cmd and returns the CPU time it took, its children's that it
// waited for included (the kernel adds them to what wait4 reports).
func runCPU(cmd *exec.Cmd) (time.Duration, error) {
	if err := cmd.Run(); err != nil {
		return 0, err
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// startTrue starts n /bin/true at once from Go and waits for them: the floor.
func startTrue(_ context.Context, n int) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	cpus := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() { cpus[i], errs[i] = runCPU(exec.Command("/bin/true")) })
	}
	wg.Wait()
	var cpu time.Duration
	for i, err := range errs {
		if err != nil {
			return 0, err
		}
		cpu += cpus[i]
	}
	return cpu, nil
}

// launchCounts reads a comma-separated list of rank counts ("" for 4,16,64).
func launchCounts(s string) ([]int, error) {
	if s == "" {
		return []int{4, 16, 64}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: want rank counts such as 4,16,64", launchRanksEnv, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// launchTable is the medians, one row per rank count, with pplaunch's ratio
// to the other build where there is one.
func launchTable(counts []int, cols []launchColumn, times [][][]time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6s", "ranks")
	for _, c := range cols {
		fmt.Fprintf(&b, " %12s", c.name)
	}
	ratio := len(cols) > 1 && cols[1].name == "other build"
	if ratio {
		fmt.Fprintf(&b, " %12s", "pplaunch/other")
	}
	b.WriteString("\n")
	for i, n := range counts {
		fmt.Fprintf(&b, "  %6d", n)
		for c := range cols {
			if len(times[i][c]) == 0 {
				fmt.Fprintf(&b, " %12s", "–")
				continue
			}
			fmt.Fprintf(&b, " %12.1f", ms(median(times[i][c])))
		}
		if ratio {
			fmt.Fprintf(&b, " %14.2f", float64(median(times[i][0]))/float64(median(times[i][1])))
		}
		b.WriteString("\n")
	}
	return b.String()
}
