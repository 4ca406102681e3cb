package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/store"
)

// storeLatency is one rank's result: median and 99th percentile per operation.
type storeLatency struct {
	Rank int
	P50  map[string]time.Duration
	P99  map[string]time.Duration
}

var storeOps = []string{"set", "get", "add", "barrier"}

// StoreJob is `pplaunch bench store` on one rank: every rank meets the
// others at a barrier and times iters round trips of each operation on the
// job's store (a tenth of them for barriers, which involve every rank);
// rank 0 checks the counter every rank added to and writes one row per
// rank to stdout.
func StoreJob(iters int, stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	return func(ctx context.Context, r *ranks.Rank) error {
		if iters < 1 {
			return fmt.Errorf("bench store: --iters %d: must be at least 1", iters)
		}
		s := r.Store
		if err := store.Barrier(ctx, s, "bench/start", r.WorldSize); err != nil {
			return err
		}
		// Barriers involve every rank; fewer of them keep the run short.
		barriers := max(1, iters/10)
		res := storeLatency{Rank: r.Rank, P50: map[string]time.Duration{}, P99: map[string]time.Duration{}}
		for _, op := range storeOps {
			n := iters
			if op == "barrier" {
				n = barriers
			}
			times, err := timeStoreOp(ctx, s, op, r.Rank, r.WorldSize, n)
			if err != nil {
				return err
			}
			slices.Sort(times)
			res.P50[op], res.P99[op] = times[n/2], times[min(n-1, n*99/100)]
		}
		b, _ := json.Marshal(res)
		if err := s.Set(ctx, "bench/result/"+strconv.Itoa(r.Rank), b); err != nil {
			return err
		}
		if r.Rank != 0 {
			return nil
		}
		results, err := gatherStoreLatency(ctx, s, r.WorldSize)
		if err != nil {
			return err
		}
		// Every rank published its result after its adds, so all have landed;
		// each exactly once, or the store is wrong.
		total, err := s.Add(ctx, "bench/counter", 0)
		if err != nil {
			return err
		}
		if want := int64(r.WorldSize * iters); total != want {
			return fmt.Errorf("bench store: counter is %d after %d adds", total, want)
		}
		fmt.Fprintf(stdout, "store round trips: %d ranks, store at %s, %d set/get/add and %d barriers per rank (p50 / p99)\n",
			r.WorldSize, r.StoreAddr, iters, barriers)
		return printStoreLatency(stdout, results)
	}
}

// timeStoreOp times n round trips of op (one of storeOps) by rank of world.
func timeStoreOp(ctx context.Context, s store.Store, op string, rank, world, n int) ([]time.Duration, error) {
	key := "bench/key/" + strconv.Itoa(rank)
	val := make([]byte, 64)
	times := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		var err error
		switch op {
		case "set":
			err = s.Set(ctx, key, val)
		case "get":
			_, err = s.Get(ctx, key)
		case "add":
			_, err = s.Add(ctx, "bench/counter", 1)
		case "barrier":
			err = store.Barrier(ctx, s, "bench/b/"+strconv.Itoa(i), world)
		}
		if err != nil {
			return nil, fmt.Errorf("bench store: %s %d of %d: %w", op, i+1, n, err)
		}
		times[i] = time.Since(t0)
	}
	return times, nil
}

// gatherStoreLatency reads every rank's published result.
func gatherStoreLatency(ctx context.Context, s store.Store, world int) ([]storeLatency, error) {
	results := make([]storeLatency, world)
	for i := range results {
		v, err := s.Get(ctx, "bench/result/"+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("bench store: result of rank %d: %w", i, err)
		}
		if err := json.Unmarshal(v, &results[i]); err != nil {
			return nil, fmt.Errorf("bench store: result of rank %d: %w", i, err)
		}
	}
	return results, nil
}

// printStoreLatency writes one row per rank, one column per operation.
func printStoreLatency(stdout io.Writer, results []storeLatency) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "rank\t")
	for _, op := range storeOps {
		fmt.Fprintf(tw, "%s\t", op)
	}
	fmt.Fprintln(tw)
	for _, res := range results {
		fmt.Fprintf(tw, "%d\t", res.Rank)
		for _, op := range storeOps {
			fmt.Fprintf(tw, "%s / %s\t", us(res.P50[op]), us(res.P99[op]))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}
