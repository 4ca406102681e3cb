package store

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Waiters blocked on one key are woken once, when it is stored, and not by
// the changes to other keys in between: with N agents joining while N wait,
// every join waking every waiter made the rendezvous O(N²) wake-ups.
func TestChangeWakesOnlyItsWaiters(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(m *Memory) error
	}{
		{"get", func(m *Memory) error { _, err := m.Get(context.Background(), "late"); return err }},
		{"wait", func(m *Memory) error { return m.Wait(context.Background(), "other/0", "late") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory()
			defer m.Close()
			ctx := context.Background()
			m.Set(ctx, "other/0", nil)
			const waiters, others = 8, 100
			var wg sync.WaitGroup
			errs := make([]error, waiters)
			for i := range waiters {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = tc.wait(m) }()
			}
			for m.blocked.Load() < waiters {
				runtime.Gosched() // until every waiter has blocked on "late"
			}
			for i := 1; i <= others; i++ {
				m.Set(ctx, "other/"+strconv.Itoa(i), nil)
				m.Add(ctx, "count", 1)
				m.CompareAndSet(ctx, "cas/"+strconv.Itoa(i), nil, []byte("x"))
			}
			m.Set(ctx, "late", []byte("v"))
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("waiter %d: %v", i, err)
				}
			}
			if got := m.woken.Load(); got != waiters {
				t.Errorf("%d wake-ups for %d waiters of one key across %d other changes, want %d", got, waiters, 3*others, waiters)
			}
		})
	}
}

// Close wakes every waiter with ErrClosed, whatever key it waits for.
func TestCloseWakesWaiters(t *testing.T) {
	m := NewMemory()
	errs := make(chan error, 2)
	go func() { _, err := m.Get(context.Background(), "a"); errs <- err }()
	go func() { errs <- m.Wait(context.Background(), "b", "c") }()
	for m.blocked.Load() < 2 {
		runtime.Gosched()
	}
	m.Close()
	for range 2 {
		if err := <-errs; err != ErrClosed {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	}
}
