package etcdstore

import (
	"context"
	"errors"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// transient errors are etcd's answers that it could not commit a write in
// time (a slow disk under a loaded machine, a leader change, too many
// proposals queued): the write may or may not have happened, and the same
// request may succeed a moment later.
var transient = []error{gateway.ErrTimeout, gateway.ErrTooManyRequests, gateway.ErrTimeoutDueToLeaderFail,
	gateway.ErrTimeoutDueToConnectionLost, gateway.ErrLeaderChanged, gateway.ErrNoLeader, gateway.ErrTimeoutWaitAppliedIndex}

func isTransient(err error) bool {
	for _, e := range transient {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// retryWrites is how many times a write is tried.
const retryWrites = 5

// retrying runs write until it succeeds, fails otherwise than transiently,
// or has been tried retryWrites times, pausing a little longer each time.
// Only writes whose repetition is harmless, or whose outcome the caller
// reads back, go through it; ambiguous says whether an attempt before the
// last may have happened.
func retrying(ctx context.Context, write func() error) (ambiguous bool, err error) {
	for attempt := 1; ; attempt++ {
		err = write()
		if err == nil || attempt == retryWrites || !isTransient(err) {
			return ambiguous, err
		}
		ambiguous = true
		select {
		case <-ctx.Done():
			return ambiguous, err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond): // let etcd drain its queue
		}
	}
}
