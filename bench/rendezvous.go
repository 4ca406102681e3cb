package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pplaunch/pplaunch/store"
)

// Joiner joins the store at storeAddr as agent node of nnodes with nproc
// ranks, running the agents' real rendezvous, and returns the first global
// rank it was given, the world size and how to leave. cmd/pplaunch passes
// launch.Join (bench may not import the agent).
type Joiner func(ctx context.Context, node, nnodes, nproc int, storeAddr, token string) (first, size int, leave func(), err error)

// RendezvousOptions configures Rendezvous.
type RendezvousOptions struct {
	Agents        []int // world sizes in agents, one row each
	RanksPerAgent int
	Rounds        int // worlds formed per size; the median time is reported
	Timeout       time.Duration
	Join          Joiner
}

// RendezvousRow is one size: the time from the first dial until every agent
// knows its ranks, and what the open connections cost the process.
type RendezvousRow struct {
	Agents int `json:"agents"`
	Ranks  int `json:"ranks"`
	// FormSec is the median over rounds of the time to form the world.
	FormSec float64 `json:"form_s"`
	// HeapPerConn is the heap in use (runtime.MemStats.HeapInuse after a GC)
	// with every agent connected, less before, per agent: both ends of each
	// connection live in this process, so it is the store's side plus the
	// client's.
	HeapPerConn int64 `json:"heap_per_conn_bytes"`
	// FDsPerConn is the growth of /proc/self/fd per agent (2: the store's
	// end and the client's).
	FDsPerConn float64 `json:"fds_per_conn"`
}

// Rendezvous hosts a real TCP store on loopback and, per size, starts that
// many agents as goroutines that join it at once. It raises the soft limit on
// open files (RLIMIT_NOFILE) to what the largest size needs, up to the hard
// limit, and fails clearly past that.
func Rendezvous(ctx context.Context, o RendezvousOptions) ([]RendezvousRow, error) {
	if o.RanksPerAgent < 1 || o.Rounds < 1 || len(o.Agents) == 0 || o.Join == nil {
		return nil, fmt.Errorf("bench rendezvous: need agents, --ranks-per-agent ≥ 1 and --rounds ≥ 1")
	}
	most := 0
	for _, n := range o.Agents {
		if n < 2 {
			return nil, fmt.Errorf("bench rendezvous: --agents %d: a rendezvous needs at least 2 agents", n)
		}
		most = max(most, n)
	}
	if err := raiseFileLimit(uint64(2*most + 256)); err != nil {
		return nil, err
	}
	var rows []RendezvousRow
	for _, n := range o.Agents {
		row := RendezvousRow{Agents: n, Ranks: n * o.RanksPerAgent}
		var times []float64
		for round := range o.Rounds {
			t, heap, fds, err := formOnce(ctx, o, n)
			if err != nil {
				return rows, fmt.Errorf("bench rendezvous: %d agents, round %d: %w", n, round+1, err)
			}
			times = append(times, t.Seconds())
			if round == 0 {
				row.HeapPerConn, row.FDsPerConn = heap/int64(n), float64(fds)/float64(n)
			}
		}
		row.FormSec = median(times)
		rows = append(rows, row)
	}
	return rows, nil
}

// formOnce forms one world of n agents and checks it: every rank numbered
// exactly once, every agent agreeing on the size.
func formOnce(ctx context.Context, o RendezvousOptions, n int) (time.Duration, int64, int, error) {
	heap0, fd0 := heapInUse(), openFiles()
	const token = "bench-rendezvous"
	srv, err := store.Listen("127.0.0.1:0", token, func(string, ...any) {})
	if err != nil {
		return 0, 0, 0, err
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	addr := srv.Addr().String()
	firsts, sizes, leaves, errs := make([]int, n), make([]int, n), make([]func(), n), make([]error, n)
	ended := make([]time.Time, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			firsts[i], sizes[i], leaves[i], errs[i] = o.Join(ctx, i, n, o.RanksPerAgent, addr, token)
			ended[i] = time.Now()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	heap, fds := heapInUse()-heap0, openFiles()-fd0
	defer func() {
		var lw sync.WaitGroup
		for _, l := range leaves {
			if l != nil {
				lw.Add(1)
				go func() { defer lw.Done(); l() }()
			}
		}
		lw.Wait()
	}()
	// The agent that failed first is the cause; the others may only have
	// waited for it.
	failed := -1
	for i, err := range errs {
		if err != nil && (failed < 0 || ended[i].Before(ended[failed])) {
			failed = i
		}
	}
	if failed >= 0 {
		return 0, 0, 0, fmt.Errorf("agent %d (the first of the agents that failed): %w", failed, errs[failed])
	}
	if err := CheckNumbering(firsts, sizes, o.RanksPerAgent); err != nil {
		return 0, 0, 0, err
	}
	return took, int64(heap), fds, nil
}

// CheckNumbering checks a formed world: agent i was given ranks firsts[i] ..
// firsts[i]+perAgent-1, every agent saw the same size, and together they
// number 0 .. size-1 each exactly once.
func CheckNumbering(firsts, sizes []int, perAgent int) error {
	want := len(firsts) * perAgent
	seen := make([]int, want)
	for i, f := range firsts {
		if sizes[i] != want {
			return fmt.Errorf("agent %d saw a world of %d ranks, want %d", i, sizes[i], want)
		}
		for r := f; r < f+perAgent; r++ {
			if r < 0 || r >= want {
				return fmt.Errorf("agent %d was given rank %d, outside 0..%d", i, r, want-1)
			}
			if seen[r]++; seen[r] > 1 {
				return fmt.Errorf("rank %d was given twice (agent %d among them)", r, i)
			}
		}
	}
	return nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func openFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to need (at most the hard
// limit): every agent here holds two descriptors, its end and the store's.
func raiseFileLimit(need uint64) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("bench rendezvous: read the open-files limit: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("bench rendezvous: needs %d open files, the hard limit is %d: raise it (ulimit -Hn, limits.conf) or run fewer --agents", need, lim.Max)
	}
	lim.Cur = need
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("bench rendezvous: raise the open-files limit to %d: %w", need, err)
	}
	return nil
}

// WriteRendezvousText prints rows as a table.
func WriteRendezvousText(w io.Writer, rows []RendezvousRow, perAgent, rounds int) error {
	fmt.Fprintf(w, "rendezvous on loopback: agents as goroutines, %d ranks each, one TCP store; median of %d rounds\n", perAgent, rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "agents\tranks\tform world\theap per connection\tfds per connection\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%.0f ms\t%.1f KiB\t%.1f\t\n", r.Agents, r.Ranks, r.FormSec*1e3, float64(r.HeapPerConn)/1024, r.FDsPerConn)
	}
	return tw.Flush()
}

// WriteRendezvousJSON prints one JSON object per row.
func WriteRendezvousJSON(w io.Writer, rows []RendezvousRow) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
