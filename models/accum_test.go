package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randBufs(n, size int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	bufs := make([][]float32, n)
	for i := range bufs {
		bufs[i] = make([]float32, size)
		for j := range bufs[i] {
			bufs[i][j] = float32(r.NormFloat64() * float64(1+i%5*1000)) // mixed magnitudes make order visible
		}
	}
	return bufs
}

func cloneBufs(b [][]float32) [][]float32 {
	c := make([][]float32, len(b))
	for i := range b {
		c[i] = slices.Clone(b[i])
	}
	return c
}

// treeRef is the pairwise tree written as a recursion over [lo, hi): the left
// half is the largest power of two below the range's aligned span.
func treeRef(b [][]float32, lo, hi, span int) []float32 {
	if hi-lo == 1 {
		return slices.Clone(b[lo])
	}
	half := span / 2
	if lo+half >= hi {
		return treeRef(b, lo, hi, half)
	}
	l, r := treeRef(b, lo, lo+half, half), treeRef(b, lo+half, hi, half)
	for i := range l {
		l[i] += r[i]
	}
	return l
}

func TestAccumulatorOrderIsFixed(t *testing.T) {
	be := testBackend(t)
	for _, n := range []int{1, 2, 3, 5, 8, 13} {
		bufs := randBufs(n, 64, uint64(n))
		span := 1
		for span < n {
			span *= 2
		}
		want := treeRef(bufs, 0, n, span)
		// Several arrival orders, all with global indices 10..10+n-1.
		r := rand.New(rand.NewPCG(uint64(n), 9))
		orders := [][]int{r.Perm(n), r.Perm(n)}
		inOrder := make([]int, n)
		for i := range inOrder {
			inOrder[i] = i
		}
		orders = append(orders, inOrder)
		for _, order := range orders {
			c := cloneBufs(bufs)
			a := NewAccumulator(be, 10, n, nil)
			for _, i := range order {
				if err := a.Add(10+i, c[i]); err != nil {
					t.Fatal(err)
				}
				if slices.Equal(order, inOrder) && len(a.nodes) > a.root+1 {
					t.Fatalf("n=%d: %d partial buffers held, want at most %d", n, len(a.nodes), a.root+1)
				}
			}
			got, err := a.Sum()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d order %v: sum differs from the pairwise tree", n, order)
			}
		}
	}
}

// TestAccumulatorDataParallelMatchesSingle: dp replicas each summing a block of
// M (a power of two) micro-batches, combined with TreeSum, give the bits of one
// process summing dp·M.
func TestAccumulatorDataParallelMatchesSingle(t *testing.T) {
	be := testBackend(t)
	for _, c := range []struct{ dp, m int }{{2, 4}, {2, 1}, {4, 2}, {2, 8}} {
		bufs := randBufs(c.dp*c.m, 100, 77)
		single := NewAccumulator(be, 0, c.dp*c.m, nil)
		for i, b := range cloneBufs(bufs) {
			if err := single.Add(i, b); err != nil {
				t.Fatal(err)
			}
		}
		want, _ := single.Sum()
		parts := make([][]float32, c.dp)
		for rep := range c.dp {
			a := NewAccumulator(be, rep*c.m, c.m, nil)
			for j := range c.m {
				if err := a.Add(rep*c.m+j, slices.Clone(bufs[rep*c.m+j])); err != nil {
					t.Fatal(err)
				}
			}
			parts[rep], _ = a.Sum()
		}
		got, err := TreeSum(be, parts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("dp=%d M=%d: replica sums differ from the single-process sum", c.dp, c.m)
		}
	}
}

func TestAccumulatorErrors(t *testing.T) {
	be := testBackend(t)
	a := NewAccumulator(be, 4, 3, nil)
	for _, c := range []struct {
		mb   int
		size int
		want string
	}{
		{3, 2, "outside this step's micro-batches 4..6"},
		{7, 2, "outside"},
		{4, 2, ""},
		{4, 2, "added twice"},
		{5, 3, "3 values, earlier buffers have 2"},
	} {
		err := a.Add(c.mb, make([]float32, c.size))
		if c.want == "" {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%d): %v, want %q", c.mb, err, c.want)
		}
	}
	if _, err := a.Sum(); err == nil || !strings.Contains(err.Error(), "[5 6] not accumulated") {
		t.Fatalf("Sum with missing micro-batches: %v", err)
	}
}

// TestTiedAcrossStagesMatchesSingle: with tied embeddings, a pipeline whose first
// and last stages are apart (they exchange gradients and add embedding + head)
// gives the bits of the single-stage model.
func TestTiedAcrossStagesMatchesSingle(t *testing.T) {
	be := testBackend(t)
	cfg := tinyGPT()
	cfg.Tied = true
	single := pipelineStep(t, be, cfg, []int{4}, StageOptions{Seed: 2}, 2, 2, false)
	cut := pipelineStep(t, be, cfg, []int{2, 2}, StageOptions{Seed: 2}, 2, 2, true)
	emb, hd := single.grads["transformer.wte.weight"], single.grads["lm_head.weight"]
	want := make([]float32, len(emb))
	AddTiedGrads(want, emb, hd)
	got := make([]float32, len(emb))
	AddTiedGrads(got, cut.grads["transformer.wte.weight"], cut.grads["lm_head.weight"])
	if !slices.Equal(got, want) {
		t.Fatal("tied gradient of the cut model differs from the single stage")
	}
	// The single-stage helper does the same sum.
	s, _ := NewStage(cfg, []int{4}, 0, be, StageOptions{Seed: 2})
	copy(s.Param("transformer.wte.weight").Grad.Data, emb)
	copy(s.Param("lm_head.weight").Grad.Data, hd)
	s.SumLocalTiedGrads()
	for _, name := range []string{"transformer.wte.weight", "lm_head.weight"} {
		if !slices.Equal(s.Param(name).Grad.Data, want) {
			t.Fatalf("SumLocalTiedGrads: %s is not embedding + head", name)
		}
	}
	if s.Param("lm_head.weight").TiedTo != "transformer.wte.weight" {
		t.Fatal(fmt.Sprint("lm_head.weight not marked tied: ", s.Param("lm_head.weight").ParamSpec))
	}
}
