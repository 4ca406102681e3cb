package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// moduleRoot is the repository root: examples/ and cmd/ live there.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %q, %v", out, err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// buildPplaunch builds the real binary where every node can run it.
func buildPplaunch(t *testing.T, root, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "pplaunch")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pplaunch")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/pplaunch: %v\n%s", err, out)
	}
	return bin
}

func readReports(t *testing.T, dir string) []Rank {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.rank"))
	if err != nil {
		t.Fatal(err)
	}
	var ranks []Rank
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseReport(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ranks = append(ranks, r)
	}
	return ranks
}

// summary says where each rank ran, for the test log.
func summary(ranks []Rank) string {
	byHost := map[string][]int{}
	for _, r := range ranks {
		n, _ := strconv.Atoi(r.Env["RANK"])
		byHost[r.Host] = append(byHost[r.Host], n)
	}
	var parts []string
	for _, h := range slices.Sorted(func(yield func(string) bool) {
		for h := range byHost {
			if !yield(h) {
				return
			}
		}
	}) {
		slices.Sort(byHost[h])
		parts = append(parts, fmt.Sprintf("%s: RANK %v", h, byHost[h]))
	}
	return strings.Join(parts, "; ")
}

// TestSlurmTwoNodes submits examples/slurm's two sbatch scripts to a real
// two-node cluster, each node its own network namespace and host name, with a
// program that reports each rank's host and environment, and checks that the
// ranks form one 8-rank world across the two nodes.
func TestSlurmTwoNodes(t *testing.T) {
	began := time.Now()
	c := Start(t, Options{Nodes: []string{"n1", "n2"}})
	root := moduleRoot(t)
	bin := buildPplaunch(t, root, c.Dir)
	names := []string{c.Nodes[0].Name, c.Nodes[1].Name}
	masters := []string{c.Nodes[0].Name, c.Nodes[0].Addr.String()}
	const perNode = 4

	for _, mode := range []struct {
		name   string
		script string
		env    []string
	}{
		// srun --ntasks-per-node=1 pplaunch --nproc 4: one agent per node.
		{"agent-per-node", "agent-per-node.sbatch", []string{"NPROC=" + strconv.Itoa(perNode)}},
		// srun --ntasks-per-node=4 pplaunch --direct: every task is a rank.
		{"rank-per-task", "rank-per-task.sbatch", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			reports := filepath.Join(c.Dir, "reports-"+mode.name)
			if err := os.Mkdir(reports, 0o755); err != nil {
				t.Fatal(err)
			}
			job := Job{
				Script: filepath.Join(root, "examples", "slurm", mode.script),
				Args:   []string{"--", "sh", "-c", ReportScript, "sh", reports},
				Env:    append([]string{"PPLAUNCH=" + bin}, mode.env...),
			}
			if err := c.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r, err := c.Run(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			ranks := readReports(t, reports)
			if err := CheckWorld(ranks, names, perNode, masters); err != nil {
				t.Errorf("job %d (%s): the ranks do not form the right world:\n%v\njob output:\n%s", r.ID, mode.script, err, r.Output)
			}
			// Every rank ran inside this job, and agrees with the others on the run id.
			runIDs := map[string]bool{}
			for _, rk := range ranks {
				if got := rk.Env["SLURM_JOB_ID"]; got != strconv.Itoa(r.ID) {
					t.Errorf("rank %s on %s: SLURM_JOB_ID=%q, want %d", rk.Env["RANK"], rk.Host, got, r.ID)
				}
				runIDs[rk.Env["PPLAUNCH_RUN_ID"]] = true
			}
			if len(runIDs) != 1 || runIDs[""] {
				t.Errorf("job %d: PPLAUNCH_RUN_ID over the ranks: %v, want one non-empty id", r.ID, runIDs)
			}
			var any Rank
			if len(ranks) > 0 {
				any = ranks[0]
			}
			t.Logf("ran: %s=%s %s sbatch %s %s\n  job %d %s (exit %s) on %s in %v; %d ranks: %s; MASTER_ADDR=%s MASTER_PORT=%s PPLAUNCH_RUN_ID=%s",
				"PPLAUNCH", bin, strings.Join(mode.env, " "), job.Script, strings.Join(job.Args[:3], " ")+" REPORT sh "+reports,
				r.ID, r.State, r.ExitCode, r.Nodes, time.Since(start).Round(time.Millisecond), len(ranks), summary(ranks),
				any.Env["MASTER_ADDR"], any.Env["MASTER_PORT"], any.Env["PPLAUNCH_RUN_ID"])
		})
	}
	t.Logf("slurm test: %v in all (cluster start, build, two jobs)", time.Since(began).Round(time.Millisecond))
}
