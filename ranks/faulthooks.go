package ranks

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/schedules"
)

// Test-only fault hooks, read only inside a rank of pplaunch train:
//
//	PPLAUNCH_TEST_STALL=RANK:STEP:ACTION (e.g. 1:2:1F3) makes that rank hang
//	before that action of that step, as a wedged peer would, until the agent
//	ends it.
//	PPLAUNCH_TEST_KILL=RANK:STEP makes that rank SIGKILL itself before that
//	step, on the first attempt only (restarts run normally).
//	PPLAUNCH_TEST_HOLD=RANK:STEP makes that rank wait before that step until
//	it receives a preemption signal, so that a test's signal lands mid-run;
//	on the first attempt, or on attempt RESTART with RANK:STEP:RESTART, and
//	several holds separated by commas (an elastic job's tests hold its
//	first world, then a re-formed one).
//	PPLAUNCH_TEST_STOP=RANK makes that rank stop itself (SIGSTOP) once it has
//	joined the store, before it connects to its peers, on the first attempt
//	only: a test then acts while that rank is known not to have connected,
//	and continues it with SIGCONT.
const (
	StallEnv = "PPLAUNCH_TEST_STALL"
	KillEnv  = "PPLAUNCH_TEST_KILL"
	HoldEnv  = "PPLAUNCH_TEST_HOLD"
	StopEnv  = "PPLAUNCH_TEST_STOP"
)

// stopAtJoin is PPLAUNCH_TEST_STOP (spec) for this rank.
func stopAtJoin(spec string, rank, restart int) {
	if spec == "" || spec != strconv.Itoa(rank) || restart != 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "rank %d: %s: stopping before connecting to its peers\n", rank, StopEnv)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

// FaultHooksFromEnv reads the hooks from the environment (see FaultHooks).
func FaultHooksFromEnv(getenv func(string) string, rank, restart int, signalled <-chan struct{}) (func(int, schedules.Action), error) {
	return FaultHooks(getenv(StallEnv), getenv(KillEnv), getenv(HoldEnv), rank, restart, signalled)
}

// FaultHooks parses the test-only hooks for this rank into one callback run
// before every action (Job.Stall), nil when none applies to it; signalled is
// closed when a preemption signal arrives.
func FaultHooks(stall, kill, hold string, rank, restart int, signalled <-chan struct{}) (func(int, schedules.Action), error) {
	var hooks []func(int, schedules.Action)
	for _, build := range []func() (func(int, schedules.Action), error){
		func() (func(int, schedules.Action), error) { return stallHook(stall, rank) },
		func() (func(int, schedules.Action), error) { return killHook(kill, rank, restart) },
		func() (func(int, schedules.Action), error) { return holdHook(hold, rank, restart, signalled) },
	} {
		h, err := build()
		if err != nil {
			return nil, err
		}
		if h != nil {
			hooks = append(hooks, h)
		}
	}
	if len(hooks) == 0 {
		return nil, nil
	}
	return func(s int, a schedules.Action) {
		for _, h := range hooks {
			h(s, a)
		}
	}, nil
}

func stallHook(spec string, rank int) (func(int, schedules.Action), error) {
	if spec == "" {
		return nil, nil
	}
	f, err := parseFault(spec, 3)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StallEnv, err)
	}
	sched, err := schedules.Parse(f.action)
	if err != nil || len(sched.Ranks) != 1 || len(sched.Ranks[0]) != 1 {
		return nil, fmt.Errorf("%s=%q: %q is not one action in the text form", StallEnv, spec, f.action)
	}
	want := sched.Ranks[0][0]
	if f.rank != rank {
		return nil, nil
	}
	return func(s int, a schedules.Action) {
		if s == f.step && a == want {
			fmt.Fprintf(os.Stderr, "rank %d: %s: stalling before %s of step %d\n", rank, StallEnv, a, s)
			for {
				time.Sleep(time.Hour) // until the agent ends this process
			}
		}
	}, nil
}

func killHook(spec string, rank, restart int) (func(int, schedules.Action), error) {
	if spec == "" {
		return nil, nil
	}
	f, err := parseFault(spec, 2)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KillEnv, err)
	}
	if f.rank != rank || restart != 0 {
		return nil, nil
	}
	return func(s int, _ schedules.Action) {
		if s == f.step {
			fmt.Fprintf(os.Stderr, "rank %d: %s: SIGKILL before step %d\n", rank, KillEnv, s)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}, nil
}

func holdHook(spec string, rank, restart int, signalled <-chan struct{}) (func(int, schedules.Action), error) {
	if spec == "" {
		return nil, nil
	}
	holds := map[int]bool{} // the steps this rank holds before on this attempt
	for _, one := range strings.Split(spec, ",") {
		at := 0
		if strings.Count(one, ":") == 2 {
			i := strings.LastIndex(one, ":")
			n, err := strconv.Atoi(one[i+1:])
			if err != nil {
				return nil, fmt.Errorf("%s=%q: restart %q is not a number", HoldEnv, spec, one[i+1:])
			}
			one, at = one[:i], n
		}
		f, err := parseFault(one, 2)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", HoldEnv, err)
		}
		if f.rank == rank && at == restart {
			holds[f.step] = true
		}
	}
	if len(holds) == 0 {
		return nil, nil
	}
	return func(s int, _ schedules.Action) {
		if holds[s] {
			delete(holds, s)
			fmt.Fprintf(os.Stderr, "rank %d: %s: waiting for a preemption signal before step %d\n", rank, HoldEnv, s)
			<-signalled
		}
	}, nil
}

type fault struct {
	rank, step int
	action     string
}

// parseFault reads "RANK:STEP" (n=2) or "RANK:STEP:ACTION" (n=3).
func parseFault(spec string, n int) (fault, error) {
	parts := strings.SplitN(spec, ":", n)
	if len(parts) != n {
		return fault{}, fmt.Errorf("%q: want RANK:STEP%s", spec, strings.Repeat(":ACTION", n-2))
	}
	r, err1 := strconv.Atoi(parts[0])
	step, err2 := strconv.Atoi(parts[1])
	if err := errors.Join(err1, err2); err != nil {
		return fault{}, fmt.Errorf("%q: %w", spec, err)
	}
	f := fault{rank: r, step: step}
	if n == 3 {
		f.action = parts[2]
	}
	return f, nil
}
