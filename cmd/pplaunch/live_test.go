package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var liveShot = flag.String("live-screenshot", "", "with TestLiveView, save a screenshot of the page (mid-run, a rank stopped) to this PNG file")

// liveJob is a 2-rank training run with --metrics-addr, long enough to be
// watched; the test ends it with SIGTERM (a preemption: rank 0 finishes its
// step, checkpoints and reports the run finished).
type liveJob struct {
	cmd    *exec.Cmd
	addr   string // host:port of the live view
	marker string // in the ranks' environment, to find their processes
	token  string
	stderr chan string
}

func startLiveJob(t *testing.T, ctx context.Context) *liveJob {
	t.Helper()
	j := &liveJob{marker: fmt.Sprintf("livetest-%d", time.Now().UnixNano()), token: "a1b2c3d4e5f6-live-view-token", stderr: make(chan string, 1)}
	// A short grace period: a rank caught in a checkpoint when its peer is
	// killed waits for it, and is then killed at the end of the grace.
	args := append([]string{"--nproc", "2", "--standalone", "--grace-period", "5s", "--max-restarts", "1", "train"}, tinyModel...)
	args = append(args, "--steps", "100000", "--eval-every", "20", "--checkpoint-dir", t.TempDir(), "--checkpoint-every", "2",
		"--metrics-addr", "127.0.0.1:0", "--sample-tokens", "0")
	j.cmd = exec.CommandContext(ctx, binary(t), args...)
	j.cmd.Env = append(os.Environ(), "PPLAUNCH_LIVE_TEST="+j.marker, "PPLAUNCH_TOKEN="+j.token)
	stdout, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := j.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.cmd.Process.Kill(); j.cmd.Wait() })
	go func() {
		b, _ := io.ReadAll(stderr)
		j.stderr <- string(b)
	}()
	serving := regexp.MustCompile(`^\[rank 0\] live: the job's view at http://(\S+)/ `)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	a, ok := <-addr
	if !ok {
		j.cmd.Process.Kill()
		t.Fatalf("no live view line; stderr:\n%s", <-j.stderr)
	}
	j.addr = a
	return j
}

// rankPid finds the process of rank among the job's (by the marker in its
// environment; a keeper, which carries it too, is left out).
func (j *liveJob) rankPid(t *testing.T, rank int) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		has := func(kv string) bool {
			for _, v := range vars {
				if v == kv {
					return true
				}
			}
			return false
		}
		if has("PPLAUNCH_LIVE_TEST="+j.marker) && has("RANK="+strconv.Itoa(rank)) && !has("PPLAUNCH_KEEPER=1") {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no process of rank %d", rank)
	return 0
}

func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine (Debian's chromium package; .ci/run installs it)")
	return ""
}

// TestLiveView opens the live page in a real headless browser during a
// 2-rank run: the curves gain points, the timeline has both ranks, a rank
// stopped with SIGSTOP turns red (silent) and its peer red (stuck, waiting on
// it, named); a rank killed restarts the group (--max-restarts 1) and the
// page follows it with one curve; after the run ends the page keeps its
// final state. The
// token is nowhere in the page or its state. Meanwhile `pplaunch top` runs
// in a real terminal (tmux), shows both ranks and quits on q.
func TestLiveView(t *testing.T) {
	chrome := chromium(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a hang guard
	defer cancel()
	j := startLiveJob(t, ctx)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 1400))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	until := func(what, expr string) {
		t.Helper()
		var ok bool
		if err := chromedp.Run(bctx, chromedp.Poll(expr, &ok, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second))); err != nil {
			var seen string
			chromedp.Run(bctx, chromedp.Evaluate(`JSON.stringify(document.body.dataset) + " " + document.getElementById("status").textContent + ": " + document.getElementById("note").textContent`, &seen))
			t.Fatalf("the page never showed %s (%s): %v\nit shows: %s", what, expr, err, seen)
		}
	}
	points := func() int {
		var n int
		if err := chromedp.Run(bctx, chromedp.Evaluate(`+(document.body.dataset.points || 0)`, &n)); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := chromedp.Run(bctx, chromedp.Navigate("http://"+j.addr+"/")); err != nil {
		t.Fatal(err)
	}
	until("three steps", `+(document.body.dataset.points || 0) >= 3`)
	n := points()
	until("more steps", fmt.Sprintf(`+(document.body.dataset.points || 0) > %d`, n))
	until("both ranks in the timeline", `[...document.querySelectorAll("#timeline text")].filter(e => /^rank [01]$/.test(e.textContent)).length == 2`)
	until("both ranks in the table, well", `document.querySelectorAll('#ranks tr[data-status="ok"]').length == 2`)

	t.Run("top in a terminal", func(t *testing.T) { topInTmux(t, j.addr) })

	pid := j.rankPid(t, 1)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	until("rank 1 silent", `document.querySelector('#ranks tr[data-rank="1"]').dataset.status == "silent"`)
	until("rank 0 stuck on rank 1", `(r => r.dataset.status == "stuck" && r.className == "bad" && /waiting(, it seems,)? on rank 1/.test(r.textContent))(document.querySelector('#ranks tr[data-rank="0"]'))`)
	if *liveShot != "" {
		var png []byte
		if err := chromedp.Run(bctx, chromedp.FullScreenshot(&png, 100)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*liveShot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	until("rank 1 going again", `document.querySelectorAll('#ranks tr[data-status="ok"]').length == 2`)

	// A rank killed: the group restarts from the newest checkpoint, rank 0
	// listens where it did and reads back the curve the first attempt kept,
	// the page reconnects, and its curve has every step once from 1 (but
	// for the one a kill may cut between its checkpoint and its record:
	// that step's record never existed).
	killedAt := points()
	if err := syscall.Kill(j.rankPid(t, 1), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	until("the restarted group", fmt.Sprintf(`document.body.dataset.restart == "1" && +document.body.dataset.last > %d`, killedAt+2))
	until("one curve from step 1", `(d => +d.first == 1 && +d.last - +d.first + 1 - +d.points <= 1)(document.body.dataset)`)

	resp, err := http.Get("http://" + j.addr + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	state, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var html string
	if err := chromedp.Run(bctx, chromedp.OuterHTML("html", &html)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), j.token) || strings.Contains(html, j.token) {
		t.Error("the job's token is in the live view")
	}

	// The end: a preemption signal; the page keeps the final state.
	before := points()
	if err := j.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if j.cmd.Wait(); j.cmd.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("the job after SIGTERM: %v, want exit code 143\n%s", j.cmd.ProcessState, <-j.stderr)
	}
	until("the final state", `document.body.dataset.done == "1" && document.getElementById("status").textContent == "finished" &&
		/stopped after step \d+ of 100000 \(preempted\)/.test(document.getElementById("note").textContent)`)
	if got := points(); got < before {
		t.Errorf("after the run the page has %d points, %d before: the final state is lost", got, before)
	}
}

// topInTmux runs pplaunch top ADDR in a real terminal: it draws both ranks'
// rows, and q quits it.
func topInTmux(t *testing.T, addr string) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux on this machine (Debian's tmux package)")
	}
	session := fmt.Sprintf("pptop%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "30", binary(t)+" top "+addr); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer tmux("kill-session", "-t", session)
	rows := regexp.MustCompile(`(?m)^0 .* ok .*\n1 .* ok `)
	var screen string
	for deadline := time.Now().Add(time.Minute); ; { // a hang guard
		screen, _ = tmux("capture-pane", "-p", "-t", session)
		if rows.MatchString(screen) && strings.Contains(screen, "q quits") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top never drew both ranks:\n%s", screen)
		}
		time.Sleep(50 * time.Millisecond) // polling the pane: nothing to wait on
	}
	if _, err := tmux("send-keys", "-t", session, "q"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := tmux("has-session", "-t", session); err != nil {
			return // top quit, and its session with it
		}
		if time.Now().After(deadline) {
			screen, _ = tmux("capture-pane", "-p", "-t", session)
			t.Fatalf("top did not quit on q:\n%s", screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
