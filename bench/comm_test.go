package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexflint/go-arg"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/store"
)

func TestSizeParse(t *testing.T) {
	cases := []struct {
		in   string
		want Size
		str  string
	}{
		{"8", 8, "8B"}, {"64K", 64 << 10, "64KiB"}, {"16M", 16 << 20, "16MiB"}, {"256MiB", 256 << 20, "256MiB"},
		{"1g", 1 << 30, "1GiB"}, {"3KB", 3 << 10, "3KiB"}, {"1000", 1000, "1000B"},
	}
	for _, tc := range cases {
		var s Size
		if err := s.UnmarshalText([]byte(tc.in)); err != nil || s != tc.want || s.String() != tc.str {
			t.Errorf("%q: %v (%v), %v; want %v (%s)", tc.in, int64(s), s, err, int64(tc.want), tc.str)
		}
	}
	for _, bad := range []string{"", "x", "-1", "12T", "M", "5i", "1KiBB", "99999999999999G"} {
		var s Size
		if err := s.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q parsed as %v", bad, s)
		}
	}
}

// tcpWorld starts n TCP ranks in goroutines over loopback sockets.
func tcpWorld(tb testing.TB, n int) []collective.Comm {
	tb.Helper()
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			cs[r], errs[r] = collective.NewTCP(ctx, st, r, n, collective.TCPOptions{Token: "bench"})
		})
	}
	wg.Wait()
	tb.Cleanup(func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return cs
}

// runAll calls f on every rank and returns what rank 0 wrote.
func runAll(t *testing.T, cs []collective.Comm, f func(c collective.Comm, w *bytes.Buffer) error) string {
	t.Helper()
	outs := make([]bytes.Buffer, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = f(c, &outs[r]) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := 1; r < len(cs); r++ {
		if outs[r].Len() != 0 {
			t.Errorf("rank %d wrote %q; only rank 0 reports", r, outs[r].String())
		}
	}
	return outs[0].String()
}

func TestRunP2PTable(t *testing.T) {
	cs := tcpWorld(t, 3)
	ctx := context.Background()
	out := runAll(t, cs, func(c collective.Comm, w *bytes.Buffer) error {
		return RunP2P(ctx, c, Host, P2POptions{Min: 8, Max: 64, Iters: 3, Reps: 1}, w)
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3+4 || !strings.Contains(lines[0], "p2p") || !strings.Contains(lines[2], "algbw(GB/s)") {
		t.Fatalf("table:\n%s", out)
	}
	for i, size := range []string{"8", "16", "32", "64"} {
		f := strings.Fields(lines[3+i])
		if len(f) != 9 || f[0] != size || f[4] == "-" || f[6] == "-" {
			t.Errorf("row %q: want size %s with ceiling and latency", lines[3+i], size)
		}
	}
}

func TestRunJSON(t *testing.T) {
	for _, name := range []string{"p2p", "allreduce"} {
		t.Run(name, func(t *testing.T) {
			cs := tcpWorld(t, 3)
			ctx := context.Background()
			out := runAll(t, cs, func(c collective.Comm, w *bytes.Buffer) error {
				if name == "p2p" {
					return RunP2P(ctx, c, Host, P2POptions{Min: 1 << 10, Max: 4 << 10, Iters: 2, Reps: 1, JSON: true}, w)
				}
				return RunAllReduce(ctx, c, Host, AllReduceOptions{Min: 8, Max: 256 << 10, Iters: 2, Reps: 1, JSON: true}, w)
			})
			sc := bufio.NewScanner(strings.NewReader(out))
			var rows []Result
			for sc.Scan() {
				var r Result
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				rows = append(rows, r)
			}
			want := map[string]int{"p2p": 3, "allreduce": 16}[name]
			if len(rows) != want {
				t.Fatalf("%d JSON rows, want %d:\n%s", len(rows), want, out)
			}
			for _, r := range rows {
				if r.Seconds <= 0 || r.AlgBW <= 0 || r.BusBW <= 0 || r.CeilingBW <= 0 || r.Wrong != 0 {
					t.Errorf("row %+v: want positive times and bandwidths, a ceiling and nothing wrong", r)
				}
			}
			if name == "allreduce" && rows[0].Bytes != 8 {
				t.Errorf("first all-reduce row is %d bytes, want 8", rows[0].Bytes)
			}
		})
	}
}

// corrupting is a communicator whose float32 all-reduces get one element
// wrong.
type corrupting struct{ collective.Comm }

func (c corrupting) AllReduce(ctx context.Context, buf collective.Buffer, op collective.ReduceOp) error {
	err := c.Comm.AllReduce(ctx, buf, op)
	if buf.DType == collective.Float32 {
		buf.F32[len(buf.F32)-1]++
	}
	return err
}

// The benchmark checks its all-reduces: a wrong element on any rank shows in
// rank 0's rows and fails the run on every rank.
func TestRunAllReduceCountsWrongResults(t *testing.T) {
	cs, err := collective.NewMemoryWorld(2, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	ctx := context.Background()
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, c := range []collective.Comm{cs[0], corrupting{cs[1]}} {
		wg.Go(func() {
			errs[r] = RunAllReduce(ctx, c, Host, AllReduceOptions{Min: 8, Max: 16, Iters: 1, Reps: 1, NoPlain: true, JSON: true}, &outs[r])
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "bench allreduce: 2 wrong elements") {
			t.Errorf("rank %d: %v, want the count of rank 1's wrong elements (one per size)", r, err)
		}
	}
	var rows []Result
	for _, line := range strings.Split(strings.TrimSpace(outs[0].String()), "\n") {
		var row Result
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("rank 0 line %q: %v", line, err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 2 || rows[0].Wrong != 1 || rows[1].Wrong != 1 {
		t.Errorf("rank 0's rows %+v, want 2 sizes with 1 wrong element each", rows)
	}
}

func TestRunAllReduceMemoryBackendNoCeiling(t *testing.T) {
	cs, err := collective.NewMemoryWorld(4, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := runAll(t, cs, func(c collective.Comm, w *bytes.Buffer) error {
		return RunAllReduce(ctx, c, Host, AllReduceOptions{Min: 1 << 10, Max: 1 << 20, Iters: 2, Reps: 1, NoPlain: true}, w)
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3+11 {
		t.Fatalf("table:\n%s", out)
	}
	if f := strings.Fields(lines[len(lines)-1]); f[0] != "1048576" || f[1] != "262144" || f[6] != "-" || f[8] != "0" {
		t.Errorf("last row %q", lines[len(lines)-1])
	}
}

// Bad options are errors that name the flag, found before any transfer.
func TestCommBenchBadOptions(t *testing.T) {
	one, _ := collective.NewMemoryWorld(1, collective.Options{})
	two, _ := collective.NewMemoryWorld(2, collective.Options{})
	t.Cleanup(func() {
		for _, c := range append(one, two...) {
			c.Close()
		}
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"one rank", func() error { return RunP2P(ctx, one[0], Host, P2POptions{}, io.Discard) }, "at least 2 ranks"},
		{"min > max", func() error { return RunP2P(ctx, two[0], Host, P2POptions{Min: 64, Max: 8}, io.Discard) }, "--min 64B is larger than --max 8B"},
		{"negative min", func() error { return RunP2P(ctx, two[0], Host, P2POptions{Min: -8}, io.Discard) }, "--min -8: a size must not be negative"},
		{"negative lat-max", func() error { return RunP2P(ctx, two[0], Host, P2POptions{LatMax: -1}, io.Discard) }, "--lat-max -1"},
		{"negative iters", func() error { return RunP2P(ctx, two[0], Host, P2POptions{Iters: -1}, io.Discard) }, "--iters -1"},
		{"negative reps", func() error { return RunAllReduce(ctx, two[0], Host, AllReduceOptions{Reps: -2}, io.Discard) }, "bench allreduce: --reps -2"},
		{"negative max", func() error { return RunAllReduce(ctx, two[0], Host, AllReduceOptions{Max: -1}, io.Discard) }, "--max -1"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// FuzzSizeParse: the size parser never panics, and what it accepts prints
// back to a string that parses to the same size.
func FuzzSizeParse(f *testing.F) {
	for _, s := range []string{"8", "64K", "16MiB", "256M", "1G", "3kb", "x", "", "99999999999999999999G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s Size
		if err := s.UnmarshalText([]byte(in)); err != nil {
			return
		}
		var back Size
		if s < 0 || back.UnmarshalText([]byte(s.String())) != nil || back != s {
			t.Fatalf("%q parsed as %d, printed %q, re-parsed as %d", in, int64(s), s.String(), int64(back))
		}
	})
}

// The option structs are the flags of `pplaunch bench p2p|allreduce`.
func TestOptionsParseAsFlags(t *testing.T) {
	var p P2POptions
	parser, err := arg.NewParser(arg.Config{Program: "p2p"}, &p)
	if err != nil {
		t.Fatal(err)
	}
	if err := parser.Parse([]string{"--max", "16M", "--json"}); err != nil {
		t.Fatal(err)
	}
	if p.Min != 8 || p.Max != 16<<20 || !p.JSON || p.Reps != 3 || p.LatMax != 64<<10 {
		t.Errorf("parsed %+v", p)
	}
	var a AllReduceOptions
	parser, err = arg.NewParser(arg.Config{Program: "allreduce"}, &a)
	if err != nil {
		t.Fatal(err)
	}
	if err := parser.Parse([]string{"--min", "1KiB", "--iters", "5", "--no-ceiling"}); err != nil {
		t.Fatal(err)
	}
	if a.Min != 1<<10 || a.Max != 256<<20 || a.Iters != 5 || !a.NoPlain {
		t.Errorf("parsed %+v", a)
	}
	if err := parser.Parse([]string{"--max", "lots"}); err == nil || !strings.Contains(err.Error(), "lots") {
		t.Errorf("bad size: %v", err)
	}
}
