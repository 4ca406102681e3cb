package ranks

import (
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
		p := WatchPreemption(true, 0, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
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
	p := WatchPreemption(false, 0, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
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
