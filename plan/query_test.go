package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// defaultQuery is a Query with the defaults its flags give.
func defaultQuery() Query {
	return Query{Schedule: "1f1b", Stages: 4, Microbatches: 8, TF: 1, TB: 2, TW: 1, Top: 5}
}

// TestQueryCheck: each refused combination of flags, with the message that
// says which flags to drop or give; the defaults, a file with --csv, a
// search and a comparison pass.
func TestQueryCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(q *Query)
		want string // "" passes
	}{
		{"defaults", func(q *Query) {}, ""},
		{"from with csv", func(q *Query) { q.From, q.CSV, q.CSVComms = "s.txt", "s.csv", true }, ""},
		{"search", func(q *Query) { q.Profile, q.World, q.MemoryBudget = "p.json", 8, "1MiB" }, ""},
		{"compare json", func(q *Query) { q.Compare, q.JSON = true, true }, ""},
		{"negative tf", func(q *Query) { q.TF = -1 }, "plan: --tf -1: times must be >= 0"},
		{"negative tcomm", func(q *Query) { q.TComm = -0.5 }, "plan: --tcomm -0.5: times must be >= 0"},
		{"tw over tb", func(q *Query) { q.TW = 3 }, "plan: --tw 3 is more than --tb 2: the weight gradient is part of the backward"},
		{"negative act bytes", func(q *Query) { q.ActBytes = -1 }, "plan: --act-bytes -1: must be >= 0"},
		{"compare svg", func(q *Query) { q.Compare, q.SVG = true, "x.svg" }, "plan: --compare prints a table of the built-in schedules; --svg, --trace, --text and --from take one schedule"},
		{"compare csv", func(q *Query) { q.Compare, q.CSV = true, "x.csv" }, "plan: --compare prints a table of the built-in schedules; --csv takes one schedule"},
		{"text json", func(q *Query) { q.Text, q.JSON = true, true }, "plan: --text prints only the schedule; drop --json, --svg and --trace"},
		{"profile from", func(q *Query) { q.Profile, q.From = "p.json", "s.txt" }, "plan: --profile predicts from measured costs; --compare, --from, --text, --svg, --trace and --csv take a schedule"},
		{"world without profile", func(q *Query) { q.World = 8 }, "plan: --world, --memory-budget and --global-batch search layouts with the costs of --profile FILE (from train --profile)"},
		{"csv comms alone", func(q *Query) { q.CSVComms = true }, "plan: --csv-comms says what --csv writes: give --csv FILE"},
		{"virtual from", func(q *Query) { q.From, q.Virtual = "s.txt", 2 }, "plan: --virtual 2 with --from: v comes from the file"},
	} {
		q := defaultQuery()
		c.edit(&q)
		err := q.Check()
		if got := errText(err); got != c.want {
			t.Errorf("%s: Check() = %q, want %q", c.name, got, c.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestQueryWriteSchedule: --text prints the schedule's text form, --json one
// JSON object, and else the report, each of the same simulation.
func TestQueryWriteSchedule(t *testing.T) {
	for _, c := range []struct {
		name       string
		text, json bool
		want       string
	}{
		{"report", false, false, "1f1b: P=4 ranks, v=1, M=8 micro-batches\ncosts per micro-batch per rank: tF=1 tB=2 (I=1 W=1) tcomm=0 ms\nmakespan  33 ms\n"},
		{"json", false, true, `{"schedule":"1f1b","p":4,"v":1,"m":8,"makespan":33,"ideal":24,`},
		{"text", true, false, "# pplaunch schedule: 4 ranks, 4 stages, 8 micro-batches\n0F0, 0SEND_F0,"},
	} {
		q := defaultQuery()
		q.Text, q.JSON = c.text, c.json
		res, err := q.SimulateBuiltin()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := q.WriteSchedule(&b, res); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("%s: got\n%s\nwant it to start with\n%s", c.name, b.String(), c.want)
		}
	}
}

// TestQuerySimulateFile: a file's schedule is simulated under its own name
// with the notes of what a PyTorch CSV held that pplaunch drops; a file
// that does not parse is refused with its line and column.
func TestQuerySimulateFile(t *testing.T) {
	q := defaultQuery()
	q.From = "good.sched"
	res, err := q.SimulateFile("0F0, 0F1, 0B0, 0B1\n1F0, 1B0, 1F1, 1B1\n")
	if err != nil || res.P != 2 || res.M != 2 || res.Notes != nil {
		t.Errorf("a text schedule: %+v, %v", res, err)
	}
	q.From = filepath.Join("..", "schedules", "testdata", "torch", "torch215_gpipe_p2_m4.csv")
	text, err := os.ReadFile(q.From)
	if err != nil {
		t.Fatal(err)
	}
	res, err = q.SimulateFile(string(text))
	if err != nil || len(res.Notes) == 0 || !strings.HasPrefix(res.Notes[0], "REDUCE_GRAD, WAIT_REDUCE_GRAD (4 actions)") {
		t.Errorf("torch's GPipe with REDUCE_GRAD: %v, notes %q", err, res.Notes)
	}
	q.From = "syntax.sched"
	if _, err := q.SimulateFile("0F0, 0B0\n1F0, 1Q0\n"); err == nil || !strings.Contains(err.Error(), `line 2 col 7: unknown kind "Q"`) {
		t.Errorf("a bad kind: %v", err)
	}
}

// TestQueryWriteCompare: --compare's JSON holds every built-in schedule for
// P and M; a bad P is plan's error.
func TestQueryWriteCompare(t *testing.T) {
	q := defaultQuery()
	q.Compare, q.JSON = true, true
	var b bytes.Buffer
	if err := q.WriteCompare(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		P, M      int
		Schedules []Result
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.P != 4 || got.M != 8 || len(got.Schedules) < 8 {
		t.Errorf("%v: %s", err, b.String())
	}
	q.Stages = 0
	if err := q.WriteCompare(&b); err == nil || !strings.HasPrefix(err.Error(), "plan: ") {
		t.Errorf("P=0: %v", err)
	}
}
