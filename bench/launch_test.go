package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// launchRuns is how many launches each row's median is taken over.
const launchRuns = 31

// BenchmarkLaunch prints the median wall time of `pplaunch --nproc 4 --
// /bin/true` (spawn 4 ranks, supervise them, summarise, exit), beside the floor
// of starting 4 /bin/true directly from Go, and mpirun when it is installed.
//
//	go test -run '^$' -bench Launch -benchtime 1x ./bench/
func BenchmarkLaunch(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "pplaunch")
	build := exec.Command("go", "build", "-o", bin, "../cmd/pplaunch")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	type row struct {
		name string
		run  func() error
	}
	rows := []row{
		{"pplaunch --nproc 4 -- /bin/true", func() error { return exec.Command(bin, "--nproc", "4", "--", "/bin/true").Run() }},
		{"4 × /bin/true started from Go (floor)", func() error {
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range 4 {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = exec.Command("/bin/true").Run() }()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	if mpirun, err := exec.LookPath("mpirun"); err == nil {
		args := []string{"-np", "4", "--oversubscribe"}
		if os.Geteuid() == 0 {
			args = append(args, "--allow-run-as-root")
		}
		rows = append(rows, row{"mpirun -np 4 /bin/true", func() error { return exec.Command(mpirun, append(args, "/bin/true")...).Run() }})
	}
	medians := make([]time.Duration, len(rows))
	for range b.N {
		for i, r := range rows {
			times := make([]time.Duration, launchRuns)
			for k := range times {
				t0 := time.Now()
				if err := r.run(); err != nil {
					b.Fatalf("%s: %v", r.name, err)
				}
				times[k] = time.Since(t0)
			}
			slices.Sort(times)
			medians[i] = times[len(times)/2]
		}
	}
	fmt.Printf("\nlaunch wall time, median of %d runs\n", launchRuns)
	for i, r := range rows {
		fmt.Printf("  %-42s %7.1f ms\n", r.name, float64(medians[i])/float64(time.Millisecond))
	}
	b.ReportMetric(float64(medians[0])/float64(time.Millisecond), "ms/launch")
}
