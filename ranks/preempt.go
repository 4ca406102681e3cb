package ranks

import (
	"os"
	"os/signal"
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
type Preemption struct {
	sigs chan os.Signal
	once sync.Once
	got  chan struct{} // closed at the first signal
	sig  atomic.Value  // that signal
	quit chan struct{}
}

// WatchPreemption starts watching; rank 0 logs what it received with logf.
// Close stops the watch.
func WatchPreemption(checkpoints bool, rank int, logf func(string, ...any)) *Preemption {
	p := &Preemption{sigs: make(chan os.Signal, 4), got: make(chan struct{}), quit: make(chan struct{})}
	if checkpoints {
		signal.Notify(p.sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	} else {
		signal.Notify(p.sigs, syscall.SIGUSR1)
	}
	go p.watch(checkpoints, rank, logf)
	return p
}

func (p *Preemption) watch(checkpoints bool, rank int, logf func(string, ...any)) {
	for {
		select {
		case s := <-p.sigs:
			if !checkpoints {
				if rank == 0 {
					logf("received %s: no --checkpoint-dir to save to, carrying on", contract.SignalName(s))
				}
				continue
			}
			p.once.Do(func() {
				p.sig.Store(s)
				close(p.got)
				if rank == 0 {
					logf("received %s: stopping after this step with a checkpoint", contract.SignalName(s))
				}
			})
		case <-p.quit:
			return
		}
	}
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
func (p *Preemption) Close() {
	signal.Stop(p.sigs)
	close(p.quit)
}
