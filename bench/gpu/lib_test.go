package gpu

import (
	"archive/tar"
	"compress/gzip"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sh runs script in bash with lib.sh sourced, WORK and OUT fresh folders
// and the deadline budget seconds away; it returns the output, the exit
// status and the two folders.
func sh(t *testing.T, budget int, script string) (out string, code int, work, dst string) {
	t.Helper()
	work, dst = t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := filepath.Abs("lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `set -u; . "$LIB"; DEADLINE=$(($(date +%s) + BUDGET)); `+script)
	cmd.Env = append(os.Environ(), "LIB="+lib, "WORK="+work, "OUT="+dst, "BUDGET="+strconv.Itoa(budget), "RESERVE=5")
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), code, work, dst
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goTestLog is what a test binary run with -test.v prints for results like
// "PASS TestA" or "SKIP TestB".
func goTestLog(results ...string) string {
	var b strings.Builder
	for _, r := range results {
		kind, name, _ := strings.Cut(r, " ")
		b.WriteString("=== RUN   " + name + "\n")
		switch kind {
		case "SKIP":
			b.WriteString("    x_test.go:12: no GPU: cudaErrorNoDevice 100\n")
		case "FAIL":
			b.WriteString("    x_test.go:40: first\n    x_test.go:41: want 3, got 4\n")
		}
		b.WriteString("--- " + kind + ": " + name + " (0.00s)\n")
	}
	if strings.Contains(b.String(), "--- FAIL") {
		return b.String() + "FAIL\n"
	}
	return b.String() + "PASS\n"
}

// TestStepVerdicts: each way a step ends gives its verdict line: a command's
// success with its figure, a failure with the exit status and the line
// that says why, a hang cut by its own timeout, a test binary whose tests
// all skipped (SKIP, with the reason, not PASS), one with passes and skips,
// and a step the run's budget has no time left for.
func TestStepVerdicts(t *testing.T) {
	logs := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(logs, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	allSkip := write("skip.log", goTestLog("SKIP TestA", "SKIP TestB"))
	mixed := write("mixed.log", goTestLog("PASS TestA", "SKIP TestB", "PASS TestC"))
	failed := write("failed.log", goTestLog("PASS TestA", "FAIL TestB"))
	out, code, work, _ := sh(t, 60, `
FIGURE='loss' step fine 10 printf 'step 1 loss 2.5\nstep 2 loss 2.25\n'
step broken 10 bash -c 'echo "cuda backend: error: out of memory"; exit 3'
step hangs 1 sleep 30
step skipped 10 cat `+allSkip+`
step mixed 10 cat `+mixed+`
step failing 10 bash -c 'cat `+failed+`; exit 1'
BUDGET=60 DEADLINE=$(($(date +%s) + 7)) step late 10 true
echo "status $?"
`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The seconds a step took depend on the machine: N stands for them.
	got := regexp.MustCompile(`(exit \d+ after |; | in )\d+s`).ReplaceAllString(read(t, filepath.Join(work, "verdicts")), "${1}Ns")
	want := []string{
		"PASS fine: step 2 loss 2.25; Ns\n",
		"FAIL broken: exit 3 after Ns: cuda backend: error: out of memory (log broken.log)\n",
		"FAIL hangs: timed out after 1s (log hangs.log)\n",
		"SKIP skipped: all 2 test(s) skipped: no GPU: cudaErrorNoDevice 100\n",
		"PASS mixed: 2 passed, 1 skipped (TestB) in Ns\n",
		"FAIL failing: exit 1 after Ns: TestB: want 3, got 4 (log failing.log)\n",
		"SKIP late: no time left in the run's budget (60s)\n",
	}
	if got != strings.Join(want, "") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", got, strings.Join(want, ""))
	}
	if !strings.Contains(out, "status 1") || !strings.Contains(out, "  | cuda backend: error: out of memory") {
		t.Errorf("a skipped step returns 1 and a failed one shows its log's tail:\n%s", out)
	}
}

// TestBudget: a step's limit is its own (times SLOW), or what the deadline
// leaves less the reserve for the summary, and nothing under 10 seconds.
func TestBudget(t *testing.T) {
	out, code, _, _ := sh(t, 100, `echo "$(budget 30) $(budget 500)"; DEADLINE=$(($(date +%s) + 14)); echo "$(budget 30)"`)
	if slow, _, _, _ := sh(t, 1000, `SLOW=4; echo "$(budget 30)"`); strings.TrimSpace(slow) != "120" {
		t.Errorf("SLOW=4 budget 30: %q, want 120", slow)
	}
	f := strings.Fields(out)
	// Seconds pass between setting the deadline and asking: 95 less those.
	if n, err := strconv.Atoi(f[min(1, len(f)-1)]); code != 0 || len(f) != 3 || f[0] != "30" || err != nil || n > 95 || n < 80 || f[2] != "0" {
		t.Fatalf("exit %d, budgets %q; want 30, 95 (less the seconds passed), 0", code, out)
	}
}

// TestSummary: summary.md has the versions and every verdict with the
// counts, SKIP counted apart from PASS; every verdict is printed again;
// any FAIL makes the status 1, SKIPs alone do not; logs.tgz holds the logs
// only and stays under 5 MiB even when a log is larger.
func TestSummary(t *testing.T) {
	big := make([]byte, 12<<20) // random: gzip cannot shrink it
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	bigLog := filepath.Join(t.TempDir(), "big.log")
	if err := os.WriteFile(bigLog, big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, verdicts string
		code           int
		counts         string
	}{
		{"pass and skip", "verdict PASS a 1.5 s; verdict SKIP b 'NCCL 2.28.9 is below 2.30'", 0, "1 PASS, 0 FAIL, 1 SKIP"},
		{"only skips", "verdict SKIP a x; verdict SKIP b y", 0, "0 PASS, 0 FAIL, 2 SKIP"},
		{"a failure", "verdict PASS a; verdict FAIL b 'exit 2'; verdict SKIP c z", 1, "1 PASS, 1 FAIL, 1 SKIP"},
		{"unknown kind", "verdict MAYBE a", 1, "0 PASS, 1 FAIL, 0 SKIP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code, _, dst := sh(t, 60, `echo "driver 580" >"$WORK/versions"; `+c.verdicts+`; cp `+bigLog+` "$WORK/logs/big.log"; echo small >"$WORK/logs/small.log"; mkdir -p "$WORK/run/ck"; echo x >"$WORK/run/ck/shard"; summary "check"`)
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out)
			}
			md := read(t, filepath.Join(dst, "summary.md"))
			if !strings.HasPrefix(md, "# check\n\n"+c.counts) || !strings.Contains(md, "driver 580") {
				t.Errorf("summary.md:\n%s\nwant the counts %q and the versions", md, c.counts)
			}
			for _, l := range strings.Split(strings.TrimSpace(md[strings.Index(md, "## Verdicts"):]), "\n")[3:] {
				if l == "```" {
					break
				}
				if !strings.Contains(out[strings.Index(out, "== every verdict"):], l+"\n") {
					t.Errorf("verdict %q not printed again at the end:\n%s", l, out)
				}
			}
			checkArchive(t, filepath.Join(dst, "logs.tgz"), []string{"logs/big.log", "logs/small.log"})
		})
	}
}

// checkArchive: path is a gzipped tar under 5 MiB of exactly names.
func checkArchive(t *testing.T, path string, names []string) {
	t.Helper()
	if got := archived(t, path); strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %v, want %v", path, got, names)
	}
}

// archived lists the files of the gzipped tar at path, which must be under
// 5 MiB.
func archived(t *testing.T, path string) []string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= 5<<20 {
		t.Errorf("%s: %d bytes, want under 5 MiB", path, st.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			got = append(got, h.Name)
		}
	}
	return got
}

// TestPlans: several processes, and several NCCL ranks, on one GPU: by
// compute mode, MPS and NCCL version; below 2.30 the reason names it.
func TestPlans(t *testing.T) {
	for _, c := range []struct{ call, want string }{
		{"procs_plan Default ''", "ok"},
		{"procs_plan unknown ''", "ok"},
		{"procs_plan Exclusive_Process /usr/bin/nvidia-cuda-mps-control", "mps"},
		{"procs_plan Exclusive_Process ''", "skip compute mode Exclusive_Process: one process at a time on the GPU, and no nvidia-cuda-mps-control to share it"},
		{"procs_plan Prohibited /x", "skip compute mode Prohibited: no process may use the GPU"},
		{"nccl_plan 2.28.9 1 Default ''", "skip NCCL 2.28.9 is below 2.30: one rank per GPU (several ranks on one GPU need NCCL 2.30+ and NCCL_MULTI_RANK_GPU_ENABLE=1)"},
		{"nccl_plan 2.28.9 2 Default ''", "ok"},
		{"nccl_plan none 1 Default ''", "skip NCCL not loaded (see pplaunch devices)"},
		{"nccl_plan 2.30.1 1 Default ''", "ok"},
		{"nccl_plan 2.30.1 1 Default /usr/bin/nvidia-cuda-mps-control", "mps"},
		{"nccl_plan 2.32.3 1 Exclusive_Process ''", "skip compute mode Exclusive_Process: one process at a time on the GPU, and no nvidia-cuda-mps-control to share it"},
		{"nccl_plan 2.32.3 1 Exclusive_Process /m", "mps"},
		{"ncclcode 2.28.9", "22809"},
		{"ncclcode 2.30.10", "23010"},
		{"ncclcode ''", "0"},
	} {
		out, code, _, _ := sh(t, 60, c.call)
		if code != 0 || strings.TrimSpace(out) != c.want {
			t.Errorf("%s: exit %d, %q; want %q", c.call, code, out, c.want)
		}
	}
}

// TestSanitizerVerdicts: compute-sanitizer's report: no errors (PASS), an
// error (FAIL naming it), the tool refused (SKIP with its own message),
// tests failing under it (FAIL), and a hang.
func TestSanitizerVerdicts(t *testing.T) {
	logs := t.TempDir()
	cases := []struct{ log, rc, want string }{
		{goTestLog("PASS TestCUDALayerNorm", "PASS TestCUDAAttention") + "========= ERROR SUMMARY: 0 errors\n", "0",
			"PASS san: 0 errors over 2 test(s) in 3s"},
		{"========= COMPUTE-SANITIZER\n========= Race reported between Write access at layernorm_forward+0x1a0\n=========     and Read access at layernorm_forward+0x200 [16 hazards]\n" +
			goTestLog("PASS TestCUDALayerNorm") + "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n========= ERROR SUMMARY: 1 error\n", "99",
			"FAIL san: 1 error(s); first: Race reported between Write access at layernorm_forward+0x1a0 (log san.log)"},
		{"========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first instrumented API call\n========= Tool execution finished with errors\n", "1",
			"SKIP san: refused: Error: Target application terminated before first instrumented API call (exit 1)"},
		{goTestLog("FAIL TestCUDAAttention") + "========= ERROR SUMMARY: 0 errors\n", "1",
			"FAIL san: 0 errors, but the tests failed under the tool (exit 1): TestCUDAAttention: want 3, got 4 (log san.log)"},
		{"", "124", "FAIL san: timed out after 75s (log san.log)"},
	}
	for i, c := range cases {
		p := filepath.Join(logs, "san.log")
		if err := os.WriteFile(p, []byte(c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, _, _ := sh(t, 60, "sanitizer_verdict san "+c.rc+" "+p+" 75 3")
		if strings.TrimSpace(out) != c.want {
			t.Errorf("case %d: %q\nwant %q", i, out, c.want)
		}
	}
}

// TestKillAndLossVerdicts: a killed rank's job must end non-zero and name
// rank 1; the loss gap reads two metrics files.
func TestKillAndLossVerdicts(t *testing.T) {
	d := t.TempDir()
	log := filepath.Join(d, "kill.log")
	if err := os.WriteFile(log, []byte("pplaunch: rank 1 (node 0) killed by signal 9 at step 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(d, "a.jsonl"), filepath.Join(d, "b.jsonl")
	os.WriteFile(a, []byte(`{"step":1,"loss":5.5}`+"\n"+`{"step":2,"loss":4.25,"lr":0.1}`+"\n"), 0o644)
	os.WriteFile(b, []byte(`{"step":1,"loss":5.5}`+"\n"+`{"step":2,"loss":4.2505,"lr":0.1}`+"\n"), 0o644)
	out, _, _, _ := sh(t, 60, "kill_verdict k 1 "+log+" 90; kill_verdict k 0 "+log+" 90; kill_verdict k 124 "+log+" 90; kill_verdict k 2 /dev/null 90; loss_gap "+a+" "+b)
	want := "PASS k: exit 1, rank 1 named: pplaunch: rank 1 (node 0) killed by signal 9 at step 3\n" +
		"FAIL k: exit 0: the killed rank went unnoticed (log kill.log)\n" +
		"FAIL k: the job did not end within 90s after rank 1 was killed (log kill.log)\n" +
		"FAIL k: exit 2 without naming rank 1 (log null)\n" +
		"2 0.0005 4.25 4.2505\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}
