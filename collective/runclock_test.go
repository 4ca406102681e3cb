package collective

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A gap between two observations counts in full up to the largest gap a
// running process leaves; past it the process was stopped, and only that
// much counts.
func TestAdvance(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ran, gap, max time.Duration
		want          time.Duration
	}{
		{"a tick", time.Second, 100 * time.Millisecond, 400 * time.Millisecond, 1100 * time.Millisecond},
		{"a late tick", time.Second, 400 * time.Millisecond, 400 * time.Millisecond, 1400 * time.Millisecond},
		{"stopped for a minute", time.Second, time.Minute, 400 * time.Millisecond, 1400 * time.Millisecond},
		{"readers racing", time.Second, -time.Millisecond, 400 * time.Millisecond, time.Second},
		{"no gap", 0, 0, 400 * time.Millisecond, 0},
	} {
		if got := advance(tc.ran, tc.gap, tc.max); got != tc.want {
			t.Errorf("%s: advance(%v, %v, %v) = %v, want %v", tc.name, tc.ran, tc.gap, tc.max, got, tc.want)
		}
	}
}

// Observations a tick apart add up to the wall time; a stop of 20 s between
// two of them (Ctrl-Z, then fg) adds no more than runMaxGap, so a wait of
// 5 s begun just before it has not expired after it.
func TestRunClockLeavesOutAStop(t *testing.T) {
	var c runClock
	t0 := time.Unix(1000, 0)
	c.observe(t0)
	start := c.observe(t0.Add(runTick))
	c.observe(t0.Add(2 * runTick))
	after := c.observe(t0.Add(2*runTick + 20*time.Second)) // stopped here
	if got, want := after-start, runTick+runMaxGap; got != want {
		t.Fatalf("run time across a 20 s stop = %v, want %v", got, want)
	}
	if after-start >= 5*time.Second {
		t.Errorf("a 5 s wait begun before a 20 s stop expired on the run clock: %v", after-start)
	}
	for i := 1; i <= 50; i++ { // 5 s of ticks after the stop
		after = c.observe(t0.Add(2*runTick + 20*time.Second + time.Duration(i)*runTick))
	}
	if got, want := after-start, 51*runTick+runMaxGap; got != want {
		t.Errorf("run time after 5 s of ticks = %v, want %v", got, want)
	}
}

// RunTimeout's context ends on its own with context.DeadlineExceeded, as
// context.WithTimeout's does, so errors.Is and the ranks' failure classes
// read it as a timeout; it states no wall-clock deadline.
func TestRunTimeoutExpires(t *testing.T) {
	ctx, cancel := RunTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a run-clock deadline states a wall-clock deadline")
	}
	<-ctx.Done()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want context.DeadlineExceeded", err)
	}
}

// Cancelling it, or its parent, ends it with context.Canceled.
func TestRunTimeoutCancel(t *testing.T) {
	ctx, cancel := RunTimeout(context.Background(), time.Hour)
	cancel()
	<-ctx.Done()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: Err() = %v, want context.Canceled", err)
	}
	parent, pcancel := context.WithCancel(context.Background())
	ctx, cancel = RunTimeout(parent, time.Hour)
	defer cancel()
	pcancel()
	<-ctx.Done()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("after the parent's cancel: Err() = %v, want context.Canceled", err)
	}
}

// What a wait's deadline costs to arm and disarm, on the run clock and on
// the wall clock: go test -run X -bench Timeout ./collective/
func BenchmarkRunTimeout(b *testing.B) {
	for b.Loop() {
		_, cancel := RunTimeout(context.Background(), time.Minute)
		cancel()
	}
}

func BenchmarkWithTimeout(b *testing.B) {
	for b.Loop() {
		_, cancel := context.WithTimeout(context.Background(), time.Minute)
		cancel()
	}
}
