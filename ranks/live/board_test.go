package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

var update = flag.Bool("update", false, "rewrite the goldens under testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code gives now (go test -update rewrites it):\n%s", path, got)
	}
}

// records reads a real 2-rank run's --metrics (pplaunch --nproc 2 train
// --steps 4 --eval-every 2 --metrics testdata/metrics.jsonl) and gives each
// step the timeline the simulator draws for its schedule (the metrics leave
// timelines out).
func records(t *testing.T, sched *schedules.Schedule) []ranks.StepRecord {
	t.Helper()
	f, err := os.Open("testdata/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl, err := schedules.Simulate(sched, schedules.Costs{Default: schedules.StageCost{F: 0.01, B: 0.02, I: 0.01, W: 0.01}, Comm: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	var recs []ranks.StepRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r ranks.StepRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		r.Timeline = tl
		recs = append(recs, r)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	return recs
}

// The state of a board fed a real run's records and three rank reports,
// at a fixed clock: as JSON (what the page and top read) and as top's text.
func TestBoardState(t *testing.T) {
	sched, err := schedules.Generate("1f1b", 2, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := NewBoard(Run{Title: "gpt-tiny on 2 ranks", Config: `{"steps":4}`, World: 3, PP: 2, DP: 1, Schedule: "1f1b", Steps: 4, Started: now.Add(-time.Minute)}, sched)
	for _, r := range records(t, sched) {
		b.Observe(r)
	}
	b.SetReports(map[int]Report{
		0: {Step: 4, Doing: "RECV_B mb 7 from rank 1", Peer: 1, Since: now.Add(-30 * time.Second), At: now.Add(-500 * time.Millisecond)},
		1: {Step: 4, Doing: "B mb 7 of stage 1", Peer: -1, Since: now.Add(-31 * time.Second), At: now.Add(-20 * time.Second)},
	})
	st := b.Snapshot(now)
	if len(st.Series) != 4 || st.Series[0].Step != 1 || st.Series[3].Step != 4 || st.Series[1].ValLoss == nil || st.Series[3].ValLoss == nil {
		t.Errorf("series %+v: want steps 1..4 with validation at 2 and 4", st.Series)
	}
	wantStatus := []string{"stuck", "silent", "waiting"}
	for i, r := range st.Ranks {
		if r.Status != wantStatus[i] {
			t.Errorf("rank %d: %s (%s), want %s", i, r.Status, r.Why, wantStatus[i])
		}
	}
	if !strings.Contains(st.Ranks[0].Why, "waiting on rank 1") || st.Ranks[0].Peer == nil || *st.Ranks[0].Peer != 1 {
		t.Errorf("rank 0: %+v, want it waiting on rank 1, named", st.Ranks[0])
	}
	// A rank stuck where it waits on every other (a reduction) names the
	// silent one.
	b.SetReports(map[int]Report{
		0: {Step: 4, Doing: "W mb 7 of stage 0", Peer: -1, Since: now.Add(-30 * time.Second), At: now.Add(-500 * time.Millisecond)},
		1: {Step: 4, Doing: "B mb 7 of stage 1", Peer: -1, Since: now.Add(-31 * time.Second), At: now.Add(-20 * time.Second)},
		2: {Step: 4, Doing: "B mb 7 of stage 1", Peer: -1, Since: now.Add(-31 * time.Second), At: now.Add(-20 * time.Second)},
	})
	if r := b.Snapshot(now).Ranks[0]; r.Status != "stuck" || !strings.HasSuffix(r.Why, "waiting, it seems, on rank 1, rank 2 (silent)") {
		t.Errorf("rank 0 in a reduction, ranks 1 and 2 silent: %s %q", r.Status, r.Why)
	}
	b.SetReports(map[int]Report{
		0: {Step: 4, Doing: "RECV_B mb 7 from rank 1", Peer: 1, Since: now.Add(-30 * time.Second), At: now.Add(-500 * time.Millisecond)},
		1: {Step: 4, Doing: "B mb 7 of stage 1", Peer: -1, Since: now.Add(-31 * time.Second), At: now.Add(-20 * time.Second)},
	})
	st = b.Snapshot(now)
	if tl := st.Timeline; tl == nil || len(tl.Measured) != 2 || len(tl.Expected) != 2 || len(tl.Measured[0]) != 16 || tl.Span <= 0 {
		t.Errorf("timeline %+v: want 16 compute spans on each of 2 ranks, measured and expected", tl)
	}
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "state.json", append(js, '\n'))
	golden(t, "top.txt", []byte(Text(st, 0, Style{})))
	golden(t, "top_narrow.txt", []byte(Text(st, 60, Style{})))

	b.End("finished: steps 1..4 in 3.0 s", true)
	st = b.Snapshot(now)
	if !st.Run.Done || st.Ranks[0].Status != "done" || !strings.HasPrefix(Text(st, 0, Style{}), "gpt-tiny on 2 ranks\nfinished: steps 1..4") {
		t.Errorf("after Finish: %+v\n%s", st.Run, Text(st, 0, Style{}))
	}
}

// A long run keeps a bounded curve that still starts at step 1 and ends at
// the last step.
func TestBoardThinsLongCurves(t *testing.T) {
	b := NewBoard(Run{World: 1, Steps: 100000}, nil)
	for s := range 3 * maxPoints {
		b.Observe(ranks.StepRecord{Step: s + 1, Loss: 1})
	}
	st := b.Snapshot(time.Now())
	if n := len(st.Series); n > maxPoints || n < maxPoints/2 || st.Series[0].Step != 1 || st.Series[n-1].Step != 3*maxPoints {
		t.Errorf("%d points from step %d to %d; want at most %d from 1 to %d", n, st.Series[0].Step, st.Series[n-1].Step, maxPoints, 3*maxPoints)
	}
	for i := 1; i < len(st.Series); i++ {
		if st.Series[i].Step <= st.Series[i-1].Step {
			t.Fatalf("points out of order at %d: %d after %d", i, st.Series[i].Step, st.Series[i-1].Step)
		}
	}
}

// A restarted attempt's board starts from the points its first attempt kept;
// the steps it repeats (after its checkpoint) replace them.
func TestBoardSeed(t *testing.T) {
	b := NewBoard(Run{World: 1, Steps: 10}, nil)
	var kept []Point
	for s := 1; s <= 6; s++ {
		kept = append(kept, Point{Step: s, Loss: float64(s)})
	}
	b.Seed(kept)
	b.Observe(ranks.StepRecord{Step: 5, Loss: 50}) // resumed from the checkpoint of step 4
	st := b.Snapshot(time.Now())
	var steps []int
	for _, p := range st.Series {
		steps = append(steps, p.Step)
	}
	if fmt.Sprint(steps) != "[1 2 3 4 5]" || st.Series[4].Loss != 50 || st.Series[3].Loss != 4 {
		t.Errorf("series %+v, want steps 1-4 kept and step 5 the new attempt's", st.Series)
	}
}
