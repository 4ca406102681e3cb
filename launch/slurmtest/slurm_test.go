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
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// leakCheck notes what the cluster is made of, and returns a function that
// lists what of it still exists: processes in its namespaces (found by the
// namespaces' inode numbers, which outlive their names), the bridge, the
// /etc/hosts lines, the directory.
func leakCheck(t *testing.T, c *Cluster) func() []string {
	var inodes []uint64
	for _, h := range c.Nodes {
		var st syscall.Stat_t
		if err := syscall.Stat(h.NetNS, &st); err != nil {
			t.Fatal(err)
		}
		inodes = append(inodes, st.Ino)
	}
	return func() []string {
		var left []string
		procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
		for _, p := range procs {
			var st syscall.Stat_t
			if syscall.Stat(p, &st) == nil && slices.Contains(inodes, st.Ino) {
				pid := strings.Split(p, "/")[2]
				if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
					left = append(left, "process "+pid+": "+string(stat))
				}
			}
		}
		if _, err := os.Stat("/sys/class/net/" + c.Net.Bridge); err == nil {
			left = append(left, "bridge "+c.Net.Bridge)
		}
		hosts, _ := os.ReadFile(netns.HostsFile)
		for _, line := range strings.Split(string(hosts), "\n") {
			for _, h := range c.Nodes {
				if f := strings.Fields(line); len(f) > 1 && f[0] == h.Addr.String() {
					left = append(left, netns.HostsFile+": "+line)
				}
			}
		}
		if _, err := os.Stat(c.Dir); err == nil {
			left = append(left, c.Dir)
		}
		return left
	}
}

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

// command is the shell command that submits job, for the test log; an
// argument equal to the report script shows as abbrev.
func command(job Job, abbrev string) string {
	var words []string
	for _, kv := range job.Env {
		k, v, _ := strings.Cut(kv, "=")
		words = append(words, k+"="+quote(v))
	}
	words = append(words, "sbatch")
	for _, a := range append(append(slices.Clone(job.Sbatch), job.Script), job.Args...) {
		if a == ReportScript && abbrev != "" {
			words = append(words, abbrev)
			continue
		}
		words = append(words, quote(a))
	}
	return strings.Join(words, " ")
}

func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	var leaks func() []string
	// Registered first, so it runs after every teardown: nothing may be left.
	t.Cleanup(func() {
		if leaks != nil {
			if left := leaks(); len(left) > 0 {
				t.Errorf("left behind after teardown: %q", left)
			}
		}
	})
	c := Start(t, Options{Nodes: []string{"n1", "n2"}, GPUs: 3})
	leaks = leakCheck(t, c)
	root := moduleRoot(t)
	bin := buildPplaunch(t, root, c.Dir)
	names := []string{c.Nodes[0].Name, c.Nodes[1].Name}
	masters := []string{c.Nodes[0].Name, c.Nodes[0].Addr.String()}
	const perNode = 4

	for _, mode := range []struct {
		name    string
		script  string
		env     []string
		sbatch  []string
		perNode int
	}{
		// srun --ntasks-per-node=1 pplaunch --nproc 4: one agent per node.
		{"agent-per-node", "agent-per-node.sbatch", []string{"NPROC=" + strconv.Itoa(perNode)}, nil, perNode},
		// srun --ntasks-per-node=4 pplaunch --direct: every task is a rank.
		{"rank-per-task", "rank-per-task.sbatch", nil, nil, perNode},
		// --nproc auto: one rank per GPU that Slurm gives the step (3 a node
		// here, so neither the CPU count nor the default).
		{"agent-per-node-gpus", "agent-per-node.sbatch", []string{"NPROC=auto"}, []string{"--gpus-per-node=3"}, 3},
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
				Sbatch: mode.sbatch,
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
			if err := CheckWorld(ranks, names, mode.perNode, masters); err != nil {
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
			t.Logf("ran: %s\n  (REPORT: %s)\n  job %d %s (exit %s) on %s in %v; %d ranks: %s; MASTER_ADDR=%s MASTER_PORT=%s PPLAUNCH_RUN_ID=%s CUDA_VISIBLE_DEVICES=%q",
				command(job, "REPORT"), ReportScript, r.ID, r.State, r.ExitCode, r.Nodes, time.Since(start).Round(time.Millisecond), len(ranks), summary(ranks),
				any.Env["MASTER_ADDR"], any.Env["MASTER_PORT"], any.Env["PPLAUNCH_RUN_ID"], any.Env["CUDA_VISIBLE_DEVICES"])
		})
	}

	// bench scaling in the batch script: one srun step per size, on 1 and
	// then 2 of the allocation's nodes, a row each.
	t.Run("bench scaling", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := c.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		csvPath := filepath.Join(c.Dir, "scaling.csv")
		job := Job{
			Script: filepath.Join(root, "examples", "slurm", "scaling.sbatch"),
			Args: []string{"--steps", "1", "--warmup-steps", "0", "--", "--layers", "2", "--width", "32", "--heads", "2", "--seq", "16",
				"--microbatch-size", "1", "--microbatches", "2", "--eval-batches", "1", "--timeout", "30s"},
			Env:    []string{"PPLAUNCH=" + bin, "NPROC=1", "CSV=" + csvPath, "SVG=" + filepath.Join(c.Dir, "scaling.svg")},
			Sbatch: []string{"--nodes=2"},
		}
		r, err := c.Run(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(csvPath)
		if err != nil {
			t.Fatalf("job %d wrote no rows: %v\n%s", r.ID, err, r.Output)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[1], "1,1,1,1,1,") || !strings.HasPrefix(lines[2], "2,1,2,2,1,") {
			t.Errorf("job %d: rows\n%s\nwant world 1 on one node, then world 2 (pp 2) on two; output:\n%s", r.ID, b, r.Output)
		}
		if !strings.Contains(r.Output, "the Slurm allocation's 2 nodes") {
			t.Errorf("job %d: the table does not say where it ran:\n%s", r.ID, r.Output)
		}
		t.Logf("ran: %s\n  job %d %s in the allocation %s:\n%s", command(job, ""), r.ID, r.State, r.Nodes, r.Output)
	})

	// A rank on the second node fails: both agents stop their ranks (the
	// others would sleep for a minute) and the job fails with the rank's exit
	// code, the root cause named in the output.
	t.Run("agent-per-node rank fails", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if err := c.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		job := Job{
			Script: filepath.Join(root, "examples", "slurm", "agent-per-node.sbatch"),
			Args:   []string{"--", "sh", "-c", `if [ "$RANK" = 5 ]; then echo "rank 5 gives up" >&2; exit 3; fi; exec sleep 60`},
			Env:    []string{"PPLAUNCH=" + bin, "NPROC=4"},
		}
		start := time.Now()
		r, err := c.Run(ctx, job)
		if err == nil || r.State != "FAILED" || r.ExitCode != "3:0" {
			t.Fatalf("job %d: %s, exit code %q (%v); want FAILED with 3:0 from rank 5", r.ID, r.State, r.ExitCode, err)
		}
		var cause string
		for _, line := range strings.Split(r.Output, "\n") {
			if strings.Contains(line, "root cause") {
				cause = line
				break
			}
		}
		if !strings.Contains(cause, "rank 5 ") || !strings.Contains(cause, c.Nodes[1].Name) || !strings.Contains(cause, "3") {
			t.Errorf("job %d: root cause line %q does not name rank 5 on %s and its exit code 3; output:\n%s", r.ID, cause, c.Nodes[1].Name, r.Output)
		}
		t.Logf("ran: %s\n  job %d %s (exit %s) in %v; %s",
			command(job, ""), r.ID, r.State, r.ExitCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(cause))
	})
	t.Logf("slurm test: %v in all (install check, cluster start, build, five jobs)", time.Since(began).Round(time.Millisecond))
}
