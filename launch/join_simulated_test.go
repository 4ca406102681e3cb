package launch

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// Three simulated agents of two ranks each form one world of six on a
// store of their own, each given a distinct first rank.
func TestSimulatedJoin(t *testing.T) {
	const token = "simulated-join"
	srv, err := store.Listen("127.0.0.1:0", token, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	join := SimulatedJoin(time.Minute, "")
	firsts, sizes, errs := make([]int, 3), make([]int, 3), make([]error, 3)
	leaves := make([]func(), 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			firsts[i], sizes[i], leaves[i], errs[i] = join(context.Background(), i, 3, 2, srv.Addr().String(), token)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		defer leaves[i]()
	}
	slices.Sort(firsts)
	if !slices.Equal(firsts, []int{0, 2, 4}) || !slices.Equal(sizes, []int{6, 6, 6}) {
		t.Fatalf("first ranks %v, sizes %v; want 0, 2, 4 of 6", firsts, sizes)
	}
}
