package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

func TestRetrying(t *testing.T) {
	other := errors.New("etcdserver: permission denied")
	for _, tc := range []struct {
		name    string
		answers []error // one per attempt; nil: success
		tries   int
		amb     bool
		err     error
	}{
		{"at once", []error{nil}, 1, false, nil},
		{"after a timeout", []error{gateway.ErrTimeout, nil}, 2, true, nil},
		{"after a queue full", []error{gateway.ErrTooManyRequests, gateway.ErrLeaderChanged, nil}, 3, true, nil},
		{"not transient", []error{other}, 1, false, other},
		{"wrapped timeout then other", []error{fmt.Errorf("put: %w", gateway.ErrTimeout), other}, 2, true, other},
		{"gives up", []error{gateway.ErrTimeout, gateway.ErrTimeout, gateway.ErrTimeout, gateway.ErrTimeout, gateway.ErrTimeout}, retryWrites, true, gateway.ErrTimeout},
	} {
		n := 0
		amb, err := retrying(context.Background(), func() error { n++; return tc.answers[n-1] })
		if n != tc.tries || amb != tc.amb || !errors.Is(err, tc.err) && err != tc.err {
			t.Errorf("%s: %d tries, ambiguous %v, %v; want %d, %v, %v", tc.name, n, amb, err, tc.tries, tc.amb, tc.err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	if _, err := retrying(ctx, func() error { n++; return gateway.ErrTimeout }); n != 1 || !errors.Is(err, gateway.ErrTimeout) {
		t.Errorf("ended context: %d tries, %v; want 1 and the timeout", n, err)
	}
}
