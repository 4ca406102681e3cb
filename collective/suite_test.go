package collective

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// The same suite runs against every backend: each test asks for a world of n
// goroutine ranks and checks behaviour that both must share.

type backend struct {
	name  string
	world func(t testing.TB, n int, opts Options) []Comm
}

var backends = []backend{
	{"memory", memoryWorld},
	{"tcp", tcpWorld},
}

const testToken = "job-token-for-tests"

func memoryWorld(t testing.TB, n int, opts Options) []Comm {
	t.Helper()
	cs, err := NewMemoryWorld(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(cs) })
	return cs
}

// tcpWorld starts n TCP ranks in goroutines over real loopback sockets, meeting
// through an in-process store.
func tcpWorld(t testing.TB, n int, opts Options) []Comm {
	t.Helper()
	return tcpWorldWith(t, n, TCPOptions{Options: opts, Token: testToken})
}

func tcpWorldWith(t testing.TB, n int, opts TCPOptions) []Comm {
	t.Helper()
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := make([]Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			cs[r], errs[r] = NewTCP(ctx, st, r, n, opts)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			closeAll(cs)
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { closeAll(cs) })
	return cs
}

func closeAll(cs []Comm) {
	var wg sync.WaitGroup
	for _, c := range cs {
		if c != nil {
			wg.Go(func() { c.Close() })
		}
	}
	wg.Wait()
}

// eachRank runs f on every rank concurrently and reports each rank's error.
func eachRank(t testing.TB, cs []Comm, f func(c Comm) error) {
	t.Helper()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// forEach runs f for every backend and world size in sizes as subtests.
func forEach(t *testing.T, sizes []int, f func(t *testing.T, b backend, n int)) {
	for _, b := range backends {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", b.name, n), func(t *testing.T) { f(t, b, n) })
		}
	}
}

var allSizes = []int{1, 2, 3, 4, 5, 6, 7, 8}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
