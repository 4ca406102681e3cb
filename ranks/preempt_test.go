package ranks

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

// TestPreemptionSignals: with checkpoints, the first SIGUSR1 or SIGTERM
// asks to stop, names itself and is logged on rank 0; without, SIGUSR1 is
// logged and ignored. The test signals its own process, which the watcher
// catches (without the watch the signals would end it).
func TestPreemptionSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM} {
		logged := make(chan string, 4)
		p := WatchPreemption(context.Background(), true, 0, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
		if p.Requested() || p.Signal() != nil {
			t.Fatalf("%s: a stop requested before any signal", sig)
		}
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		<-p.Got()
		if !p.Requested() || p.Signal() != sig {
			t.Errorf("%s: requested %v, signal %v", sig, p.Requested(), p.Signal())
		}
		if got, want := <-logged, fmt.Sprintf("received %s: stopping after this step with a checkpoint", contract.SignalName(sig)); got != want {
			t.Errorf("logged %q, want %q", got, want)
		}
		p.Close()
	}
	logged := make(chan string, 4)
	p := WatchPreemption(context.Background(), false, 0, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
	defer p.Close()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if got := <-logged; got != "received SIGUSR1: no --checkpoint-dir to save to, carrying on" {
		t.Errorf("without checkpoints: logged %q", got)
	}
	if p.Requested() {
		t.Error("without checkpoints SIGUSR1 asked to stop")
	}
}

// Under Run, the rank's one watcher serves both: the first SIGTERM asks a
// checkpointing job to stop, and is the rank's own signal (its exit code)
// that cancels the job's context, which such a job outlives.
func TestPreemptionUnderTheRankWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := watchSignals(cancel, false)
	defer w.close()
	logged := make(chan string, 4)
	p := WatchPreemption(withSignals(ctx, w), true, 0, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
	defer p.Close()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.Got()
	<-ctx.Done()
	if p.Signal() != syscall.SIGTERM || w.signal() != syscall.SIGTERM {
		t.Errorf("the preemption saw %v, the rank kept %v; want SIGTERM for both", p.Signal(), w.signal())
	}
	if got := <-logged; got != "received SIGTERM: stopping after this step with a checkpoint" {
		t.Errorf("logged %q", got)
	}
	if w.freeze() != syscall.SIGTERM || w.relayedOrStopped() != contract.FailStopped {
		t.Errorf("after the job: kept %v, class %s", w.signal(), w.relayedOrStopped())
	}
}
