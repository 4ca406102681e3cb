package store

import (
	"context"
	"fmt"
	"time"
)

// Barrier blocks until n parties have called it with the same name, or ctx
// ends. A name serves once: use a fresh name (say, with a step number) for
// each barrier. On a timeout the error says how many parties arrived.
func Barrier(ctx context.Context, s Store, name string, n int) error {
	if n < 1 {
		return fmt.Errorf("barrier %q: %d parties, want at least 1", name, n)
	}
	arrived, open := "barrier/"+name+"/arrived", "barrier/"+name+"/open"
	k, err := s.Add(ctx, arrived, 1)
	if err != nil {
		return fmt.Errorf("barrier %q: %w", name, err)
	}
	if k > int64(n) {
		return fmt.Errorf("barrier %q: %d arrivals for %d parties (name used twice?)", name, k, n)
	}
	if k == int64(n) {
		if err := s.Set(ctx, open, nil); err != nil {
			return fmt.Errorf("barrier %q: %w", name, err)
		}
		return nil
	}
	if err := s.Wait(ctx, open); err != nil {
		// Say how far it got; ctx is over, so ask with a short one of our own.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if now, qerr := s.Add(qctx, arrived, 0); qerr == nil {
			return fmt.Errorf("barrier %q: %d of %d parties arrived: %w", name, now, n, err)
		}
		return fmt.Errorf("barrier %q: %w", name, err)
	}
	return nil
}
