package ranks

import (
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// TestTransfers: 1F1B over two stages and M micro-batches, in two replicas:
// each rank sends M messages to its pipeline peer and receives M, every
// transfer action's time counts toward that peer, and the replicas do not mix.
func TestTransfers(t *testing.T) {
	const pp, dp, m = 2, 2, 3
	sched, err := schedules.Generate("1f1b", pp, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	tl := &schedules.Timeline{Ranks: make([][]schedules.Span, pp*dp)}
	for r := range pp * dp {
		for i, a := range sched.Ranks[r%pp] {
			// Each action takes 1 s; rank r's take r+1 s, to tell them apart.
			tl.Ranks[r] = append(tl.Ranks[r], schedules.Span{Action: a, Start: float64(i), End: float64(i + r + 1)})
		}
	}
	got := transfers(sched, pp, tl, 100)
	var want []PeerTraffic
	for r := range pp * dp {
		peer := r ^ 1 // the other stage of the same replica
		want = append(want, PeerTraffic{Rank: r, Peer: peer, SentBytes: m * 100, RecvBytes: m * 100, Seconds: float64(2 * m * (r + 1))})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transfers\n%+v\nwant\n%+v", got, want)
	}
	one, _ := schedules.Generate("1f1b", 1, m, 1)
	if got := transfers(one, 1, &schedules.Timeline{Ranks: make([][]schedules.Span, 1)}, 100); len(got) != 0 {
		t.Fatalf("one stage: %+v, want none", got)
	}
}

// TestTransferWaits: on the simulator's timeline of 1F1B over two stages,
// one micro-batch, each rank waits once for a message of Comm seconds (the
// last stage for its activation, the first for its gradient); the time
// spent waiting for the peer's compute is not counted. Receives posted at
// the start of the step, as the executor posts them, change nothing.
func TestTransferWaits(t *testing.T) {
	const pp, dp = 2, 2
	sched, err := schedules.Generate("1f1b", pp, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, comm := range []float64{0, 0.5} {
		sim, err := schedules.Simulate(sched, schedules.Costs{Default: schedules.StageCost{F: 1, B: 2, I: 1, W: 1}, Comm: comm})
		if err != nil {
			t.Fatal(err)
		}
		tl := &schedules.Timeline{Ranks: make([][]schedules.Span, pp*dp)}
		for r := range pp * dp {
			for _, sp := range sim.Ranks[r%pp] {
				if sp.Action.Kind == schedules.RecvF || sp.Action.Kind == schedules.RecvB {
					sp.Start = 0 // posted early
				}
				tl.Ranks[r] = append(tl.Ranks[r], sp)
			}
		}
		waits, latency := waitTimes(sched, pp, tl)
		if !slices.Equal(waits, []float64{comm, comm, comm, comm}) || latency != comm {
			t.Errorf("comm %v: waits %v, latency %v; want %v each", comm, waits, latency, comm)
		}
	}
}
