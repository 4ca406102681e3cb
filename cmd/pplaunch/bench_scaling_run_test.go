package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/launch/netns"
)

// scalingModel is a model small enough for several sizes in seconds.
var scalingModel = []string{"--layers", "4", "--width", "32", "--heads", "2", "--seq", "16", "--microbatch-size", "2", "--microbatches", "2",
	"--eval-batches", "1", "--timeout", "60s"}

// runScaling runs `pplaunch bench scaling ARGS -- scalingModel` and returns
// its JSON report, checking the CSV and SVG it wrote beside.
func runScaling(t *testing.T, args ...string) bench.ScalingReport {
	t.Helper()
	bin := binary(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "scaling.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	argv := append([]string{"bench", "scaling", "--json", "--csv", csvPath, "--svg", svgPath, "--out", filepath.Join(dir, "runs")}, args...)
	cmd := exec.CommandContext(ctx, bin, append(append(argv, "--"), scalingModel...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench scaling %v: %v\n%s%s", args, err, stdout.Bytes(), stderr.Bytes())
	}
	var rep bench.ScalingReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.Bytes())
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil || len(lines) != len(rep.Rows)+1 || lines[0][0] != "nodes" {
		t.Errorf("CSV: %v, %d lines for %d rows: %q", err, len(lines), len(rep.Rows), lines)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG: %v", err)
		}
	}
	return rep
}

// checkRows checks what every scaling report must say: sizes in order of
// world with their layout, the first efficiency 1, the parts of each step
// adding up to it.
func checkRows(t *testing.T, rep bench.ScalingReport, worlds ...int) {
	t.Helper()
	if len(rep.Rows) != len(worlds) {
		t.Fatalf("%d rows, want worlds %v: %+v", len(rep.Rows), worlds, rep.Rows)
	}
	for i, r := range rep.Rows {
		if r.World != worlds[i] || r.PP*r.DP != r.World || r.Steps != 1 {
			t.Errorf("row %d: world %d = pp %d × dp %d over %d steps, want world %d over 1 step", i, r.World, r.PP, r.DP, r.Steps, worlds[i])
		}
		if r.TokensPerS <= 0 || r.StepS <= 0 || r.PredictedStepS <= 0 || r.PeakBytes <= 0 {
			t.Errorf("row %d: %+v: want positive throughput, step, predicted step and peak", i, r)
		}
		if sum := r.ComputeS + r.TransferS + r.IdleS; !near(sum, r.StepS) {
			t.Errorf("row %d: parts sum to %v, step %v", i, sum, r.StepS)
		}
	}
	if rep.Rows[0].Efficiency != 1 {
		t.Errorf("efficiency of the smallest size %v, want 1", rep.Rows[0].Efficiency)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// Sizes on this machine: weak scaling of a pipeline of 1 and 2 ranks.
func TestBenchScalingLocal(t *testing.T) {
	rep := runScaling(t, "--nproc", "1,2", "--steps", "1", "--warmup-steps", "1")
	checkRows(t, rep, 1, 2)
	if rep.Rows[1].GlobalBatch != 2*rep.Rows[0].GlobalBatch || rep.Rows[1].PP != 2 {
		t.Errorf("weak scaling: rows %+v, want the batch doubled over pp 2", rep.Rows)
	}
	// One rank sends nothing, so its transfer time is zero by construction
	// (never a measured number compared with a threshold); two ranks exchange
	// activations and reduce their scalars, which takes some time.
	if rep.Rows[0].TransferS != 0 || rep.Rows[1].TransferS <= 0 {
		t.Errorf("transfer time %v on one rank, %v on two: want none, then some", rep.Rows[0].TransferS, rep.Rows[1].TransferS)
	}
}

// Two simulated hosts with a limited link: one agent per host, as on two
// machines; the network and every process are gone afterwards.
func TestBenchScalingNetns(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip("netns: " + err.Error())
	}
	rep := runScaling(t, "--netns", "2", "--nproc", "1", "--link-rate", "1gbit", "--steps", "1", "--warmup-steps", "1", "--mode", "strong")
	checkRows(t, rep, 1, 2)
	if rep.Rows[1].Nodes != 2 || rep.Rows[1].GlobalBatch != rep.Rows[0].GlobalBatch {
		t.Errorf("strong scaling over 2 hosts: rows %+v", rep.Rows)
	}
	if !strings.Contains(rep.Hosts, "2 simulated hosts") || !strings.Contains(rep.Hosts, "1gbit") {
		t.Errorf("hosts %q: want the simulated hosts and their rate", rep.Hosts)
	}
	left, err := filepath.Glob("/run/netns/pp*-ppscale*")
	if err != nil || len(left) > 0 {
		t.Errorf("namespaces left: %v %v", left, err)
	}
	hosts, err := os.ReadFile(netns.HostsFile)
	if err != nil || bytes.Contains(hosts, []byte("ppscale")) {
		t.Errorf("%s keeps the simulated hosts (%v):\n%s", netns.HostsFile, err, hosts)
	}
}

// A size that fails stops the run: the rows before it are printed, the
// error names the size and ends with its log, which is kept.
func TestBenchScalingFailingSize(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"bench", "scaling", "--nproc", "1,2", "--steps", "1", "--warmup-steps", "0", "--"}, scalingModel...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PPLAUNCH_TEST_KILL=1:1", "TMPDIR="+dir) // rank 1 exists at world 2 only
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	if !strings.Contains(stdout.String(), "1×1") || strings.Contains(stdout.String(), "1×2") {
		t.Errorf("want the row of world 1 only:\n%s", stdout.Bytes())
	}
	for _, want := range []string{"world 2 (1 node × 2 ranks)", "node0.log ends:", "rank 1", "logs, metrics and profiles in " + dir} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.Bytes())
		}
	}
}

// Ctrl-C stops the size running: its agents and ranks end, the exit code
// is 1, the error says so, and nothing of the run is left.
func TestBenchScalingInterrupted(t *testing.T) {
	bin := binary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"bench", "scaling", "--nproc", "1,2", "--steps", "100000", "--out", out, "--"}, scalingModel...)
	cmd := exec.CommandContext(ctx, bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "size 1/2") {
			cmd.Process.Signal(os.Interrupt)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(log.String(), "interrupted") {
		t.Fatalf("exit %v, want 1 and the word interrupted:\n%s", err, log.Bytes())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(out)) {
			t.Errorf("left running: %s: %q", p, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}
