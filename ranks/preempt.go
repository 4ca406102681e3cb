package ranks

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/pplaunch/pplaunch/contract"
)

// Preemption watches for the signals that ask a training job to stop early:
// Slurm's preemption warning (SIGUSR1, as in sbatch --signal=USR1@120,
// forwarded by the agent) and the signals that end a job (SIGTERM, SIGINT,
// SIGHUP). With checkpoints, the ranks then finish the step, write a
// checkpoint together and exit (Job.Stop is Requested): 0 after SIGUSR1,
// 128+signal after the others (the rank's code for them, so the agent
// reports them). Without, there is nothing to save: SIGUSR1 is logged and
// ignored, the others end the job at once as before.
//
// The signals come from the rank's one watcher (signals.go), which Run
// starts; a Preemption adds SIGUSR1 to what it catches.
type Preemption struct {
	checkpoints bool
	rank        int
	logf        func(string, ...any)
	w           *rankSignals

	once sync.Once
	got  chan struct{} // closed at the first signal that asks to stop
	sig  atomic.Value  // that signal
}

// WatchPreemption starts watching the signals of the rank whose job ctx is
// (Run's), or of this process when ctx is no rank job's; rank 0 logs what
// it received with logf. Close stops the watch.
func WatchPreemption(ctx context.Context, checkpoints bool, rank int, logf func(string, ...any)) *Preemption {
	p := &Preemption{checkpoints: checkpoints, rank: rank, logf: logf, got: make(chan struct{}), w: signalsFrom(ctx)}
	if p.w == nil {
		p.w = watchSignals(func() {}, true)
	}
	p.w.attach(p)
	return p
}

// receive is what the watcher hands p: s, one of the signals p watches.
func (p *Preemption) receive(s os.Signal) {
	if p == nil {
		return
	}
	if !p.checkpoints {
		if s == syscall.SIGUSR1 && p.rank == 0 {
			p.logf("received %s: no --checkpoint-dir to save to, carrying on", contract.SignalName(s))
		}
		return
	}
	p.once.Do(func() {
		p.sig.Store(s)
		close(p.got)
		if p.rank == 0 {
			p.logf("received %s: stopping after this step with a checkpoint", contract.SignalName(s))
		}
	})
}

// Requested reports whether a stop was asked for.
func (p *Preemption) Requested() bool {
	select {
	case <-p.got:
		return true
	default:
		return false
	}
}

// Got is closed at the first signal that asks to stop.
func (p *Preemption) Got() <-chan struct{} { return p.got }

// Signal is the signal received, or nil.
func (p *Preemption) Signal() os.Signal {
	s, _ := p.sig.Load().(os.Signal)
	return s
}

// Close stops watching.
func (p *Preemption) Close() { p.w.detach(p) }
