package ranks

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/pplaunch/pplaunch/contract"
)

// endSignals end a rank's job: Run keeps the first, for the exit code.
var endSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// rankSignals is a rank's one signal watcher: one goroutine reads every
// signal the rank catches and decides what it does. Under Run, the first of
// endSignals is kept (the rank's exit code, 128+signal) and cancels the
// job's context. While a Preemption watches (WatchPreemption), SIGUSR1 is
// caught too, and each signal is handed to the Preemption before the job's
// context is cancelled. Without Run (own), it catches only what its
// Preemption needs.
type rankSignals struct {
	ends   chan os.Signal // endSignals
	usr1   chan os.Signal // SIGUSR1, while a Preemption watches
	cancel context.CancelFunc
	own    bool // started by WatchPreemption: no job to end
	quit   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	got    os.Signal   // the first of endSignals (under Run)
	frozen bool        // the job is over: no signal is kept any more
	pre    *Preemption // the Preemption watching, or nil
}

// watchSignals starts a rank's watcher: cancel ends its job; own (no job)
// catches endSignals only while a checkpointing Preemption watches.
func watchSignals(cancel context.CancelFunc, own bool) *rankSignals {
	w := &rankSignals{ends: make(chan os.Signal, 4), usr1: make(chan os.Signal, 4), cancel: cancel, own: own,
		quit: make(chan struct{}), done: make(chan struct{})}
	if !own {
		signal.Notify(w.ends, endSignals...)
	}
	go w.watch()
	return w
}

func (w *rankSignals) watch() {
	defer close(w.done)
	for {
		select {
		case s := <-w.ends:
			w.preemption().receive(s)
			w.mu.Lock()
			first := w.got == nil && !w.frozen && !w.own
			if first {
				w.got = s
			}
			w.mu.Unlock()
			if first {
				w.cancel()
			}
		case s := <-w.usr1:
			w.preemption().receive(s)
		case <-w.quit:
			return
		}
	}
}

func (w *rankSignals) preemption() *Preemption {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pre
}

// attach hands the signals to p from now on.
func (w *rankSignals) attach(p *Preemption) {
	w.mu.Lock()
	w.pre = p
	w.mu.Unlock()
	signal.Notify(w.usr1, syscall.SIGUSR1)
	if w.own && p.checkpoints {
		signal.Notify(w.ends, endSignals...)
	}
}

// detach ends p's watch: SIGUSR1 is no longer caught.
func (w *rankSignals) detach(p *Preemption) {
	signal.Stop(w.usr1)
	w.mu.Lock()
	if w.pre == p {
		w.pre = nil
	}
	w.mu.Unlock()
	if w.own {
		w.close()
	}
}

// signal is the first of endSignals received, or nil.
func (w *rankSignals) signal() os.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got
}

// freeze ends the keeping: the job is over, and a signal from now on does
// not change the rank's exit code. It returns the signal kept, or nil.
func (w *rankSignals) freeze() os.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frozen = true
	return w.got
}

// relayedOrStopped is the class of a failure that is not the job's own:
// stopped by a signal, else relayed from another rank.
func (w *rankSignals) relayedOrStopped() string {
	if w.signal() != nil {
		return contract.FailStopped
	}
	return contract.FailRelayed
}

// close stops the watch.
func (w *rankSignals) close() {
	signal.Stop(w.ends)
	signal.Stop(w.usr1)
	close(w.quit)
	<-w.done
}

type signalsKey struct{}

func withSignals(ctx context.Context, w *rankSignals) context.Context {
	return context.WithValue(ctx, signalsKey{}, w)
}

func signalsFrom(ctx context.Context) *rankSignals {
	w, _ := ctx.Value(signalsKey{}).(*rankSignals)
	return w
}
