package faults

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// fcase is one fault: a job, what is done to it, and what must follow.
type fcase struct {
	name string
	fast bool // also in `go test` without -all (make test)
	// nproc ranks on one node, or per node with nodes 2 (two agents on
	// loopback); restarts is --max-restarts. direct: nproc processes under
	// --direct with the variables srun gives its tasks, no agent.
	nproc, nodes, restarts int
	direct                 bool
	args                   []string // train flags after the base model's
	node1                  []string // more train flags for node 1 only
	launcher1              []string // more launcher flags for node 1 only
	// program, if set, is what the ranks run instead of train (the launcher
	// runs it after "--"; args, ckpt and timeout do not apply).
	program        []string
	env            []string // for every process of the job
	timeout, grace time.Duration
	// setup prepares the case's directory before the job (ck is the
	// --checkpoint-dir the job gets with ckpt true).
	ckpt  bool
	setup func(t *testing.T, c *env)
	// during acts on the running job in its own goroutine and calls j.fault
	// at the moment of the fault; marker, if set, is the output line that
	// marks it instead (a test hook's).
	during func(t *testing.T, c *env, j *job)
	marker string

	code int // node 0's agent's exit code
	// orCode are other exit codes accepted: a kill's peer's, where the agent
	// can name the peer that saw the connection close the root cause (see
	// killed).
	orCode  []int
	want    []string // regular expressions the output must match (the culprit)
	notWant []string
	damaged []int // checkpoint steps the case damaged on purpose
	keep    []int // checkpoint steps that must survive complete
	// resume runs the job again with these train flags added (after a
	// preemption) and wants exit code 0.
	resume []string
	// same: the final checkpoint equals an uninterrupted run's.
	same  bool
	check func(t *testing.T, c *env, out string)
	// skip returns why the case cannot run here ("" when it can).
	skip func() string
}

// env is what a case works with.
type env struct {
	dir  string // the case's own directory
	ck   string // its checkpoint root
	rdzv string // the rendezvous endpoint (host:port) of a job on several nodes
}

// base is a model small enough for many short jobs.
var base = []string{"--layers", "4", "--width", "32", "--heads", "2", "--seq", "16", "--tied",
	"--microbatches", "4", "--microbatch-size", "2", "--eval-every", "0", "--eval-batches", "1"}

// slack is what the hang guard allows beyond --timeout plus --grace-period:
// the agent noticing an exit, relaying output and reaping, and starting the
// processes on a busy machine. Only a job that never ends fails on it (with
// its goroutine dump); how long a stop took is logged, never asserted, since a
// loaded machine would turn such a bound into a flaky test.
const slack = 20 * time.Second

// leftoverBound is how long run lets the job's processes take to go after
// its agents exited. leftovers returns as soon as they are gone, so this only
// bounds a leak: a process that stays would stay for any bound, and keepers
// that kill what an agent SIGKILLed left behind may wait seconds for a core
// on a loaded machine.
const leftoverBound = 30 * time.Second

func (c fcase) trainArgs(e *env, extra ...string) []string {
	args := append(append([]string{}, base...), "--timeout", c.timeout.String())
	if c.ckpt {
		args = append(args, "--checkpoint-dir", e.ck)
	}
	return append(append(args, c.args...), extra...)
}

func (c fcase) nodes1() int { return max(c.nodes, 1) }

func TestFaults(t *testing.T) {
	var cases []fcase
	cases = append(cases, killCases...)
	cases = append(cases, checkpointCases...)
	cases = append(cases, flagCases...)
	cases = append(cases, supervisionCases...)
	cases = append(cases, hostileCases...)
	cases = append(cases, keeperCases...)
	cases = append(cases, suspendCases...)
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		names[c.name] = true
	}
	n := 0
	for _, c := range cases {
		if !c.fast && !*all {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.skip != nil {
				if why := c.skip(); why != "" {
					t.Skip(why)
				}
			}
			runCase(t, c)
		})
	}
	t.Logf("%d of %d cases (-all for every one)", n, len(cases))
}

func runCase(t *testing.T, c fcase) {
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	if c.grace == 0 {
		c.grace = 5 * time.Second
	}
	if c.nproc == 0 {
		c.nproc = 2
	}
	e := &env{dir: t.TempDir()}
	e.ck = filepath.Join(e.dir, "ckpt")
	if c.setup != nil {
		c.setup(t, e)
	}
	o := c.run(t, e)
	c.judge(t, e, o)
	if t.Failed() || *show {
		t.Logf("output (exit %v, %v after the fault):\n%s", o.codes, o.took.Round(time.Millisecond), o.out)
	}
}

// outcome is what a case's job did: its output, the exit code of every
// agent, and the time from the fault (or the start) to the last exit.
type outcome struct {
	out   string
	codes []int
	took  time.Duration
}

// run runs the case's job with its fault and checks that nothing of it is
// left once its agents have exited.
func (c fcase) run(t *testing.T, e *env) outcome {
	slots <- struct{}{}
	defer func() { <-slots }()
	id := newID(c.name)
	j := startJob(t, id, e.dir, c.jobNodes(t, e), c.env)
	var acts sync.WaitGroup
	defer acts.Wait()
	if c.during != nil {
		acts.Add(1)
		go func() {
			defer acts.Done()
			c.during(t, e, j)
		}()
	}
	if c.marker != "" {
		acts.Add(1)
		go func() {
			defer acts.Done()
			if j.waitLine(c.marker) {
				j.fault()
			}
		}()
	}
	// Far more than the bound: a slow start is not the fault's.
	j.wait(t, c.timeout+c.grace+slack+2*time.Minute)
	if left := leftovers(id, leftoverBound); len(left) > 0 {
		t.Errorf("processes of the job left after its agents exited: %v (%s)", left, describe(left))
		killJob(id)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	from := j.faultAt
	if from.IsZero() {
		from = j.start
	}
	return outcome{out: j.outputLocked(), codes: j.codes, took: j.endAt.Sub(from)}
}

// judge checks the outcome against what the case wants, then resumes and
// compares with an uninterrupted run where it says so.
func (c fcase) judge(t *testing.T, e *env, o outcome) {
	if c.marker != "" && !strings.Contains(o.out, c.marker) {
		t.Fatalf("the fault never happened (no %q); exit %v:\n%s", c.marker, o.codes, o.out)
	}
	if o.codes[0] != c.code && !slices.Contains(c.orCode, o.codes[0]) {
		t.Errorf("exit code %d, want %d (or one of %v)", o.codes[0], c.code, c.orCode)
	}
	for i, code := range o.codes[1:] {
		if (code == 0) != (c.code == 0) {
			t.Errorf("node %d's agent exit code %d, node 0's want %d", i+1, code, c.code)
		}
	}
	for _, re := range c.want {
		if !regexp.MustCompile(re).MatchString(o.out) {
			t.Errorf("output does not match %q", re)
		}
	}
	for _, re := range c.notWant {
		if regexp.MustCompile(re).MatchString(o.out) {
			t.Errorf("output matches %q", re)
		}
	}
	out := o.out
	if c.resume != nil {
		code, rout := runPlain(t, c.name+"-resume", c.nproc, c.trainArgs(e, c.resume...))
		out += "--- resumed\n" + rout
		if code != 0 {
			t.Errorf("resumed run: exit %d\n%s", code, rout)
		}
	}
	if c.ckpt {
		checkCheckpoints(t, c, e.ck)
	}
	if c.same {
		compare(t, e.ck, reference(t, c))
	}
	if c.check != nil {
		c.check(t, e, out)
	}
}

func (c fcase) jobNodes(t *testing.T, e *env) []node {
	if c.direct {
		return c.directTasks(t, e)
	}
	launcher := []string{"--nproc", strconv.Itoa(c.nproc), "--max-restarts", strconv.Itoa(c.restarts), "--grace-period", c.grace.String()}
	if c.nodes < 2 {
		return []node{{launcher: append(launcher, "--standalone"), train: c.trainArgs(e), program: c.program}}
	}
	port := freePort(t)
	e.rdzv = "127.0.0.1:" + port
	var nodes []node
	for i := range c.nodes {
		l := append(append([]string{}, launcher...), "--nnodes", strconv.Itoa(c.nodes), "--node-rank", strconv.Itoa(i),
			"--rdzv-endpoint", "127.0.0.1:"+port, "--rdzv-id", filepath.Base(e.dir), "--rdzv-timeout", "60s")
		n := node{launcher: l, train: c.trainArgs(e), program: c.program}
		if i == 1 {
			n.train = append(n.train, c.node1...)
			n.launcher = append(n.launcher, c.launcher1...)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// directTasks are nproc rank processes as srun starts them on one node
// under --direct (rank 0 serves the store); node1 flags go to the last.
func (c fcase) directTasks(t *testing.T, e *env) []node {
	port := freePort(t)
	var nodes []node
	for i := range c.nproc {
		n := node{launcher: []string{"--direct", "--master-addr", "127.0.0.1", "--master-port", port}, train: c.trainArgs(e),
			env: []string{"SLURM_JOB_ID=" + strconv.Itoa(os.Getpid()), "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=1", "SLURM_NODEID=0",
				"SLURM_STEP_NUM_TASKS=" + strconv.Itoa(c.nproc), "SLURM_PROCID=" + strconv.Itoa(i), "SLURM_LOCALID=" + strconv.Itoa(i),
				"SLURM_STEP_NODELIST=localhost", "SLURM_STEP_TASKS_PER_NODE=" + strconv.Itoa(c.nproc)}}
		if i == c.nproc-1 {
			n.train = append(n.train, c.node1...)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// checkCheckpoints: no checkpoint lost (every step in keep is complete),
// every complete checkpoint but the damaged reads back with matching sizes
// and checksums and holds only finite values.
func checkCheckpoints(t *testing.T, c fcase, root string) {
	t.Helper()
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		if len(c.keep) > 0 {
			t.Errorf("checkpoint root %s is gone: %v", root, err)
		}
		return
	}
	steps, err := checkpoint.Complete(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range c.keep {
		if !slices.Contains(steps, k) {
			t.Errorf("checkpoint of step %d lost: complete ones %v", k, steps)
		}
	}
	for _, s := range steps {
		if slices.Contains(c.damaged, s) {
			continue
		}
		_, ts, err := checkpoint.ReadTensors(checkpoint.StepDir(root, s))
		if err != nil {
			t.Errorf("checkpoint of step %d: %v", s, err)
			continue
		}
		for _, x := range ts {
			if i := slices.IndexFunc(x.Data, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }); i >= 0 {
				t.Errorf("checkpoint of step %d: %s[%d] = %v", s, x.Name, i, x.Data[i])
				break
			}
		}
	}
}

// noTemps: no temporary file of a save is left under root.
func noTemps(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && checkpoint.IsTemp(d.Name()) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

var (
	refMu sync.Mutex
	refs  = map[string]*refRun{}
)

type refRun struct {
	once sync.Once
	dir  string
	err  error
}

// reference is the checkpoint root of an uninterrupted run of the case's
// flags (without its fault), run once per set of flags.
func reference(t *testing.T, c fcase) string {
	t.Helper()
	e := &env{}
	probe := c
	probe.ckpt = false
	key := fmt.Sprint(c.nproc, probe.trainArgs(e))
	refMu.Lock()
	r := refs[key]
	if r == nil {
		r = &refRun{}
		refs[key] = r
	}
	refMu.Unlock()
	r.once.Do(func() {
		dir, err := os.MkdirTemp("", "pplaunch-faults-ref")
		if err != nil {
			r.err = err
			return
		}
		r.dir = filepath.Join(dir, "ckpt")
		e.ck = r.dir
		// A case's --resume refuses a directory that does not exist; an
		// empty one starts from step 0, as the reference must.
		if err := os.Mkdir(r.dir, 0o755); err != nil {
			r.err = err
			return
		}
		ref := c
		ref.ckpt = true
		code, out := runPlain(t, c.name+"-reference", c.nproc, ref.trainArgs(e))
		if code != 0 {
			r.err = fmt.Errorf("uninterrupted reference run: exit %d\n%s", code, out)
		}
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.dir
}

// compare runs `pplaunch checkpoint compare` (exact) on two checkpoint roots.
func compare(t *testing.T, a, b string) {
	t.Helper()
	out, err := exec.Command(binary(t), "checkpoint", "compare", a, b).CombinedOutput()
	if err != nil {
		t.Errorf("parameters differ from an uninterrupted run's: checkpoint compare %s %s: %v\n%s", a, b, err, out)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	refMu.Lock()
	for _, r := range refs {
		if r.dir != "" {
			os.RemoveAll(filepath.Dir(r.dir))
		}
	}
	refMu.Unlock()
	if binPath != "" && os.Getenv(binEnv) == "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
