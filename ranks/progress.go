package ranks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"golang.org/x/sys/unix"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// Progress publishes what this rank is doing, for the agent on its node: the
// action it is about to run (overwritten in place before every action) and,
// at the end, its account of its own failure. It is a small file the agent
// created in its run directory, mapped into memory, so publishing an action
// is a copy of a few bytes: no system call, no allocation, 200-400 ns on a
// loaded 2-core machine (go test -run '^$' -bench ProgressBefore ./ranks/).
// A nil *Progress (no agent, or a program other than pplaunch) publishes
// nothing.
//
// The file's layout is package contract's (the agent reads it with
// contract.ReadProgress): the action payload is "UNIXNANO PID TEXT", the
// failure payload a contract.Failure as JSON.
type Progress struct {
	mu  sync.Mutex
	mem []byte
	seq uint32
	pid string
}

// OpenProgress maps the progress file at path; "" gives nil (nothing to publish).
func OpenProgress(path string) (*Progress, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("progress file: %w", err)
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, contract.ProgressSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("progress file %s: %w", path, err)
	}
	return &Progress{mem: mem, pid: strconv.Itoa(os.Getpid())}, nil
}

// Before returns a hook for Job.Stall: it publishes each action, then runs next.
func (p *Progress) Before(next func(int, schedules.Action)) func(int, schedules.Action) {
	if p == nil {
		return next
	}
	return func(step int, a schedules.Action) {
		var b [64]byte
		t := append(strconv.AppendInt(append(b[:0], "step "...), int64(step), 10), ' ')
		t = strconv.AppendInt(t, int64(a.Stage), 10) // a.String(), without its allocation
		t = strconv.AppendInt(append(t, a.Kind.String()...), int64(a.Micro), 10)
		p.publish(t)
		if next != nil {
			next(step, a)
		}
	}
}

// Phase publishes a phase outside the schedule's actions ("connecting").
func (p *Progress) Phase(text string) {
	if p != nil {
		p.publish([]byte(text))
	}
}

func (p *Progress) publish(text []byte) {
	var b [contract.ProgressActionSize - 12]byte
	payload := strconv.AppendInt(b[:0], time.Now().UnixNano(), 10)
	payload = append(append(append(payload, ' '), p.pid...), ' ')
	payload = append(payload, text[:min(len(text), cap(b)-len(payload))]...)
	p.write(p.mem[:contract.ProgressActionSize], payload)
}

// Failed writes this rank's account of its failure: err, classified by
// class (Classify, unless the caller knows better).
func (p *Progress) Failed(err error, class string, peer int) {
	if p == nil {
		return
	}
	text := err.Error()
	if max := contract.ProgressSize - contract.ProgressActionSize - 200; len(text) > max {
		text = text[:max] + "..."
	}
	b, _ := json.Marshal(contract.Failure{Class: class, Peer: peer, Text: text, At: time.Now()})
	p.write(p.mem[contract.ProgressActionSize:], b)
}

// write stores payload as the record rec (see contract.WriteRecord).
func (p *Progress) write(rec, payload []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	contract.WriteRecord(rec, payload, p.seq)
}

// Classify says whose failure err is: a timeout waiting for a peer, a peer
// that vanished (a consequence of the peer's own failure), or the rank's own.
// peer is the rank on the other end, -1 when none is known.
func Classify(err error) (class string, peer int) {
	peer = -1
	var ae *stageloop.ActionError
	var pe *collective.PeerError
	var oe *collective.OpError
	var refused *store.RefusedError
	atStart := false
	switch {
	case errors.As(err, &ae):
		peer = ae.Peer
	case errors.As(err, &pe):
		// A wait for one rank at the start (connecting, rank 0's flags,
		// clocks, checkpoint choice).
		peer, atStart = pe.Peer, true
	case errors.As(err, &oe) && !errors.Is(err, collective.ErrClosed) && !errors.Is(err, collective.ErrAborted):
		// A send or receive outside the schedule's actions (a piece of the
		// step's all-reduce, an evaluation's loss) that timed out or lost
		// its peer: the rank on its other end. A communicator this rank
		// closed or aborted names no one.
		peer = oe.Peer
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) && peer >= 0:
		return contract.FailTimeout, peer
	case atStart && !errors.As(err, &refused):
		// The peer's end went away (refused to connect, closed mid-handshake):
		// it failed, this rank saw it. A refusal (the wrong token) is this
		// rank's own.
		return contract.FailPeerGone, peer
	case errors.Is(err, collective.ErrClosed), errors.Is(err, collective.ErrAborted),
		strings.Contains(msg, "is gone: connection closed"), strings.Contains(msg, "connection to rank"),
		strings.Contains(msg, "closed its communicator"): // a peer that failed and left (collective's tcprecv, mem)
		return contract.FailPeerGone, peer
	}
	return contract.FailError, peer
}

type progressKey struct{}

// WithProgress gives ctx the rank's Progress, for the job to hook into its
// stage loop (ProgressFrom).
func WithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressFrom is the Progress WithProgress gave ctx, or nil.
func ProgressFrom(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}
