package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// readTestProfile reads testdata/profile_gpt4.json: a profile that train
// --profile wrote for a 4-block GPT (width 32, seq 16) on 2 ranks with 1F1B.
func readTestProfile(t *testing.T) *Profile {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "profile_gpt4.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ReadProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSearch: every layout of the space is predicted once; those that fit
// the budget come first, fastest first, and a layout fits exactly when its
// largest rank's memory is within the budget; every schedule is searched;
// each row is Predict's.
func TestSearch(t *testing.T) {
	p := readTestProfile(t)
	const budget = 1 << 20
	rows, err := Search(p, 8, 32, budget, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Space(p, 8, 32)) {
		t.Fatalf("%d rows for %d layouts", len(rows), len(Space(p, 8, 32)))
	}
	names := map[string]bool{}
	for i, r := range rows {
		names[r.Schedule] = true
		if r.Fits != (r.MemoryBytes <= budget) {
			t.Errorf("%+v: fits %v with %d bytes of %d", r, r.Fits, r.MemoryBytes, budget)
		}
		if i > 0 && rows[i-1].Fits == r.Fits && rows[i-1].StepS > r.StepS {
			t.Errorf("row %d is faster than row %d", i, i-1)
		}
		if i > 0 && !rows[i-1].Fits && r.Fits {
			t.Errorf("row %d fits after one that does not", i)
		}
		if r.PP*r.DP != 8 || r.DP*r.Micro*r.MicroSize != 32 || !strings.HasPrefix(r.Why, map[bool]string{true: "kept", false: "rejected"}[r.Fits]) {
			t.Errorf("row %+v", r)
		}
	}
	for _, n := range schedules.Names {
		if !names[n] {
			t.Errorf("schedule %s was not searched", n)
		}
	}
	r := rows[0]
	pr, err := Predict(p, Candidate{PP: r.PP, DP: r.DP, Schedule: r.Schedule, Virtual: r.V, Micro: r.Micro, MicroSize: r.MicroSize, Recompute: r.Recompute})
	if err != nil || pr.StepS != r.StepS || slices.Max(pr.Memory) != r.MemoryBytes {
		t.Errorf("row %+v is not Predict's %+v (%v)", r, pr, err)
	}
}

// TestSearchZero: under --zero 1 every layout's optimizer memory is its
// share of the replicas' (less wherever dp > 1, the same on one replica),
// so more layouts fit; a layout rejected without it says when it would fit
// with it.
func TestSearchZero(t *testing.T) {
	p := readTestProfile(t)
	const budget = 1 << 20
	key := func(r Row) string {
		return fmt.Sprint(r.PP, r.DP, r.Schedule, r.V, r.Micro, r.MicroSize, r.Recompute)
	}
	count := func(rows []Row) (fits int, by map[string]Row) {
		by = map[string]Row{}
		for _, r := range rows {
			by[key(r)] = r
			if r.Fits {
				fits++
			}
		}
		return fits, by
	}
	plain, err := Search(p, 8, 32, budget, 0)
	if err != nil {
		t.Fatal(err)
	}
	zero, err := Search(p, 8, 32, budget, 1)
	if err != nil {
		t.Fatal(err)
	}
	nPlain, byPlain := count(plain)
	nZero, _ := count(zero)
	if nZero <= nPlain {
		t.Errorf("%d layouts fit with --zero 1, %d without", nZero, nPlain)
	}
	hinted := 0
	for _, z := range zero {
		r := byPlain[key(z)]
		switch {
		case z.Zero != 1 || r.Zero != 0:
			t.Errorf("%s: zero %d and %d", key(z), z.Zero, r.Zero)
		case z.DP > 1 && z.MemoryBytes >= r.MemoryBytes:
			t.Errorf("%s: %d bytes with --zero 1, %d without", key(z), z.MemoryBytes, r.MemoryBytes)
		case z.DP == 1 && z.MemoryBytes != r.MemoryBytes:
			t.Errorf("%s on one replica: %d bytes with --zero 1, %d without", key(z), z.MemoryBytes, r.MemoryBytes)
		}
		if want := !r.Fits && z.Fits; want != strings.Contains(r.Why, "fits with --zero 1") {
			t.Errorf("%s: verdict %q, fits with --zero 1: %v", key(z), r.Why, z.Fits)
		} else if want {
			hinted++
		}
	}
	if hinted == 0 {
		t.Error("no rejected layout says it fits with --zero 1")
	}
}
