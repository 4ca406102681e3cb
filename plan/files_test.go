package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestQueryFiles: the files asked for come in the order --csv, --svg,
// --trace, each named by its flag; the picture and the trace are in
// seconds (the trace's µs are the simulator's ms × 1000).
func TestQueryFiles(t *testing.T) {
	for _, c := range []struct {
		name           string
		csv, svg, tr   string
		wantFlags      []string
		wantCSVComms   bool
		wantFirstBytes string
	}{
		{"none", "", "", "", nil, false, ""},
		{"csv", "s.csv", "", "", []string{"--csv"}, false, "0F0"},
		{"all", "s.csv", "g.svg", "t.json", []string{"--csv", "--svg", "--trace"}, false, "0F0"},
		{"pictures", "", "g.svg", "t.json", []string{"--svg", "--trace"}, false, "<svg"},
	} {
		q := defaultQuery()
		q.CSV, q.SVG, q.Trace = c.csv, c.svg, c.tr
		res, err := q.SimulateBuiltin()
		if err != nil {
			t.Fatal(err)
		}
		files, err := q.Files(res)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var flags []string
		for _, f := range files {
			flags = append(flags, f.Flag)
		}
		if !slices.Equal(flags, c.wantFlags) {
			t.Errorf("%s: files %v, want %v", c.name, flags, c.wantFlags)
		}
		if len(files) > 0 && !bytes.HasPrefix(files[0].Data, []byte(c.wantFirstBytes)) {
			t.Errorf("%s: %s starts %.40q, want %q", c.name, files[0].Path, files[0].Data, c.wantFirstBytes)
		}
		for _, f := range files {
			if f.Flag != "--trace" {
				continue
			}
			var tr struct {
				TraceEvents []struct {
					Ph      string
					Ts, Dur float64
				}
			}
			if err := json.Unmarshal(f.Data, &tr); err != nil {
				t.Fatal(err)
			}
			var last float64
			for _, e := range tr.TraceEvents {
				if e.Ph == "X" {
					last = max(last, e.Ts+e.Dur)
				}
			}
			if last != 1e3*res.Makespan {
				t.Errorf("%s: the trace ends at %v µs, want %v (the makespan %v ms)", c.name, last, 1e3*res.Makespan, res.Makespan)
			}
		}
	}
}
